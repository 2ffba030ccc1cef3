/* SPDX-License-Identifier: Apache-2.0 */
/* ops/backward_impl.h: the backward pass from given gradients, for grad-op makers that
 * differentiate a program of their own (the recurrent op's step program). */
#ifndef CORTEN_OPS_BACKWARD_IMPL_H
#define CORTEN_OPS_BACKWARD_IMPL_H

#include <corten/backward.h>

/* A gradient given from outside the program: variable `var` receives the variable `grad` as one
 * contribution to its gradient, summed with those of the ops that read it. */
typedef struct ct__grad_seed {
  const char *var;
  const char *grad;
} ct__grad_seed;

/* The pass of ct_program_append_backward over src (only read) with the seeds in place of a
 * loss: the variables the seeds name start the walk back, and their gradients are the seeds plus
 * what the ops of src that read them contribute. The grad ops are appended to dst (a program of
 * their own, run where src's values are), and each of the n params x ends with its gradient in
 * "x@GRAD" (zeros when no seed depends on it). The refusals and errors are those of
 * ct_program_append_backward, and dst is unchanged on failure. */
ct_status ct__program_backward_seeded(const ct_program *src, ct_program *dst,
                                      const ct__grad_seed *seeds, size_t n_seeds,
                                      const char *const *params, size_t n);

#endif /* CORTEN_OPS_BACKWARD_IMPL_H */
