/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/layer_job.h: the opening the layer kernels of ops/cpu/norm.c and nn.c share, and the
 * job their pieces read when ct__parallel_for splits them (docs/design/threads.md).
 *
 * Each kernel splits over items whose results no other item touches (channels, rows, columns,
 * rows of W, output positions, Philox blocks): a statistic or a sum is taken whole by one piece,
 * in the order the one-thread kernel takes it, so every thread count gives the same bytes. */
#ifndef CORTEN_OPS_CPU_LAYER_JOB_H
#define CORTEN_OPS_CPU_LAYER_JOB_H

#include "ops/cpu/parallel.h"
#include "ops/defs.h"

#define CT__LAYER_MAX_IN 6
#define CT__LAYER_MAX_OUT 5

typedef struct ct__layer_job {
  const ct_kernel_ctx *c;
  const void *in[CT__LAYER_MAX_IN]; /* the inputs' data by slot (NULL: an unwired slot) */
  void *out[CT__LAYER_MAX_OUT];     /* the outputs' data by slot (NULL: an unwired slot) */
  ct__norm_plan p;                  /* the kernel's plan, where it has one */
  int64_t n;                        /* the kernel's element count, where it needs one */
  double f;                         /* the kernel's factor (dropout), where it needs one */
  uint64_t seed;                    /* dropout's seed */
} ct__layer_job;

/* Fills j's c, in and out (its other fields are the caller's): the data of each wired input
 * among the first n_in slots, then each wired output among the first n_out slots allocated as
 * dt[k] (dt NULL: the kernel's dtype). An allocation failure returns its status, the outputs
 * allocated before it written to nothing. */
static inline ct_status ct__layer_open(const ct_kernel_ctx *c, ct__layer_job *j, size_t n_in,
                                       size_t n_out, const ct_dtype *dt) {
  j->c = c;
  for (size_t k = 0; k < CT__LAYER_MAX_IN; k++) j->in[k] = NULL;
  for (size_t k = 0; k < CT__LAYER_MAX_OUT; k++) j->out[k] = NULL;
  for (size_t k = 0; k < n_in; k++) {
    if (ct_kernel_in_count(c, k) > 0) j->in[k] = ct__k_in_data(ct_kernel_in(c, k, 0));
  }
  for (size_t k = 0; k < n_out; k++) {
    if (ct_kernel_out_count(c, k) == 0) continue;
    j->out[k] = ct__k_out_data(c, k, 0, dt != NULL ? dt[k] : c->dtype);
    if (j->out[k] == NULL) return ct_last_status();
  }
  return CT_OK;
}

/* Opens the kernel as ct__layer_open does, then runs fn over n items (j->n) of at least grain
 * each. */
static inline ct_status ct__layer_run(const ct_kernel_ctx *c, ct__layer_job *j, size_t n_in,
                                      size_t n_out, const ct_dtype *dt, int64_t n, int64_t grain,
                                      ct__range_fn fn) {
  ct_status s = ct__layer_open(c, j, n_in, n_out, dt);
  if (s != CT_OK) return s;
  j->n = n;
  ct__parallel_for(n, grain < 1 ? 1 : grain, fn, j);
  return CT_OK;
}

/* Plans the kernel (ct__bn_plan, ct__ln_plan, ct__am_plan into j->p), then runs fn as
 * ct__layer_run does over the plan's channels (by 'c'), rows ('r': outer) or positions ('p':
 * outer x inner), each item counting its elements toward CT__GRAIN_MEM. */
static inline ct_status ct__layer_plan_run(const ct_kernel_ctx *c,
                                           ct_status (*plan)(const ct_kernel_ctx *,
                                                             ct__norm_plan *),
                                           char by, size_t n_in, size_t n_out, const ct_dtype *dt,
                                           ct__range_fn fn) {
  ct__layer_job j;
  ct_status s = plan(c, &j.p);
  if (s != CT_OK) return s;
  int64_t n = by == 'c' ? j.p.c : by == 'r' ? j.p.outer : j.p.outer * j.p.inner;
  int64_t per = by == 'c' ? j.p.outer * j.p.inner : by == 'r' ? j.p.inner : j.p.c;
  return ct__layer_run(c, &j, n_in, n_out, dt, n, CT__GRAIN_MEM / (per > 0 ? per : 1), fn);
}

#endif /* CORTEN_OPS_CPU_LAYER_JOB_H */
