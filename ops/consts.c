/* SPDX-License-Identifier: Apache-2.0 */
/* ops/consts.c: the executor option constants (corten/program.h; docs/design/constants.md).
 *
 * The caller names variables that stay the same while the executor lives (a served model's
 * weights). A kernel may then derive data from one (the GEMM's packed panels of a layer's
 * filters) at its first run and read that at later runs instead of deriving it again. What
 * keeps this right:
 *   - no op of the program writes a constant (checked when the executor is made);
 *   - the memory the data was made from is frozen while the data is kept: every corten call
 *     that would write it fails with CT_ERR_READ_ONLY (core/memory/memory_impl.h), so an update
 *     through corten cannot be missed;
 *   - each run compares the input's memory, offset, dims and dtype with those the data was made
 *     from, and the kernel's tag with what it needs: a variable given a new tensor, or a new
 *     plan, is derived again (the old data given back, its memory unfrozen);
 *   - memory corten does not own (wrapped, imported through DLPack) is never used: its owner
 *     writes it without corten.
 * What it cannot see is a write through a pointer taken before the freeze (ct_tensor_data cast
 * to writable, a NumPy array exported earlier): the option is the caller's promise about those.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "ops/kernel.h"

/* What a kernel derived from one constant input. */
typedef struct ct__derived {
  bool constant;    /* the variable is one of the executor's constants */
  ct__block *src;   /* the memory it was made from, retained and frozen; NULL: nothing kept */
  size_t offset;
  ct_ddim dims;
  ct_dtype dtype;
  uint64_t tag;
  ct__block *data;  /* host memory, counted in the host's stats */
} ct__derived;

/* Gives back what d holds, unfreezing its source. */
static void drop(ct__derived *d) {
  if (d->src != NULL) {
    atomic_fetch_sub_explicit(&d->src->frozen, 1, memory_order_relaxed);
    ct__block_release(d->src);
  }
  ct__block_release(d->data);
  d->src = d->data = NULL;
}

void ct__consts_free(ct__prep *p) {
  if (p->derived == NULL) return;
  for (uint32_t k = 0; k < p->n_in_vars; k++) drop(&p->derived[k]);
  free(p->derived);
  p->derived = NULL;
}

/* The op of preps that writes variable v (directly or through a nested program), or -1. */
static long writer(const ct__prep *preps, size_t n, const ct_var *v) {
  for (size_t i = 0; i < n; i++) {
    const ct__prep *p = &preps[i];
    for (uint32_t k = p->n_in_vars; k < p->n_in_vars + p->n_out_vars; k++) {
      if (p->vars[k] == v) return (long)i;
    }
    if (ct__nested_writes(p->op, ct_var_name(v))) return (long)i;
  }
  return -1;
}

/* Checks each name (a variable of scope that no prep writes) into vars. */
static ct_status check_names(const ct__prep *preps, size_t n, ct_scope *scope,
                             const char *const *names, size_t n_names, const ct_var **vars) {
  for (size_t c = 0; c < n_names; c++) {
    if (names[c] == NULL) {
      return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_executor_new: constants[%zu] is NULL", c);
    }
    const ct_var *v = ct_scope_find_var(scope, names[c]);
    if (v == NULL) {
      return ct__error(CT_ERR_NOT_FOUND,
                       "ct_executor_new: constant '%s' is not a variable of the scope (or its "
                       "ancestors): create it before the executor, or leave it out of constants",
                       names[c]);
    }
    long w = writer(preps, n, v);
    if (w >= 0) {
      char label[CT__OP_LABEL_CAP];
      return ct__error(CT_ERR_INVALID_ARGUMENT,
                       "ct_executor_new: constant '%s' is written by %s of the program: a "
                       "variable the program changes cannot be a constant; leave it out of "
                       "constants",
                       names[c], ct__op_label(preps[w].op, label, sizeof label));
    }
    vars[c] = v;
  }
  return CT_OK;
}

ct_status ct__consts_bind(ct__prep *preps, size_t n, ct_scope *scope,
                          const char *const *names, size_t n_names) {
  if (n_names > 0 && names == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT,
                     "ct_executor_new: options name %zu constants but constants is NULL",
                     n_names);
  }
  const ct_var **vars = n_names > 0 ? ct__calloc(n_names, sizeof *vars) : NULL;
  if (n_names > 0 && vars == NULL) {
    return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_executor_new: out of host memory (constants)");
  }
  ct_status st = check_names(preps, n, scope, names, n_names, vars);
  for (size_t i = 0; i < n && st == CT_OK; i++) {
    ct__prep *p = &preps[i];
    for (uint32_t k = 0; k < p->n_in_vars && st == CT_OK; k++) {
      bool constant = false;
      for (size_t c = 0; c < n_names && !constant && !p->any_type[k]; c++) {
        constant = vars[c] == p->vars[k];
      }
      if (!constant) continue;
      if (p->derived == NULL) p->derived = ct__calloc(p->n_in_vars, sizeof *p->derived);
      if (p->derived == NULL) {
        st = ct__error(CT_ERR_OUT_OF_MEMORY, "ct_executor_new: out of host memory (constants)");
        break;
      }
      p->derived[k].constant = true;
    }
  }
  free(vars);
  return st;
}

/* The prep whose ctx c is: every kernel context is one (ops/prep_bind.c makes them there). */
static ct__prep *prep_of(const ct_kernel_ctx *c) {
  return (ct__prep *)(void *)((char *)c - offsetof(ct__prep, ctx));
}

bool ct__k_is_constant(const ct_kernel_ctx *c, size_t slot, size_t i) {
  const ct__prep *p = prep_of(c);
  return p->derived != NULL && p->derived[c->in_pos[slot] + (uint32_t)i].constant;
}

ct_status ct__k_run_view(const ct_kernel_ctx *c, const ct_kernel_ctx *view, bool same_inputs,
                         ct_kernel_fn fn) {
  ct__prep shadow;
  memset(&shadow, 0, sizeof shadow);
  shadow.ctx = *view;
  shadow.derived = same_inputs ? prep_of(c)->derived : NULL;
  return fn(&shadow.ctx);
}

void *ct__k_derived(const ct_kernel_ctx *c, size_t slot, size_t i, uint64_t tag, size_t bytes,
                    bool *fresh) {
  ct__prep *p = prep_of(c);
  *fresh = false;
  if (p->derived == NULL) return NULL;
  uint32_t k = c->in_pos[slot] + (uint32_t)i;
  ct__derived *d = &p->derived[k];
  const ct_tensor *t = c->in_t[k];
  if (!d->constant || t == NULL) return NULL;
  ct__block *b = t->block;
  if (b == NULL || b->external || b->place.kind != CT_DEVICE_CPU) {
    drop(d);
    return NULL;
  }
  if (d->src == b && d->offset == t->offset && d->dtype == t->dtype &&
      ct_ddim_equal(d->dims, t->dims) && d->tag == tag && d->data->nbytes == bytes) {
    return d->data->ptr;
  }
  drop(d);
  if ((d->data = ct__block_alloc(ct_cpu(), bytes)) == NULL) return NULL;
  ct__block_advise_huge(d->data); /* read whole at every run, for as long as kept */
  ct__block_retain(b);
  atomic_fetch_add_explicit(&b->frozen, 1, memory_order_relaxed);
  d->src = b;
  d->offset = t->offset;
  d->dims = t->dims;
  d->dtype = t->dtype;
  d->tag = tag;
  *fresh = true;
  return d->data->ptr;
}
