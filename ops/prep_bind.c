/* SPDX-License-Identifier: Apache-2.0 */
/* ops/prep_bind.c: binding an op to the variables of a scope (ct__prep_init), and letting go of
 * the binding. Running a bound op is ops/prep.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "ops/defs.h"
#include "ops/kernel.h"

void ct__prep_destroy(ct__prep *p) {
  ct__consts_free(p);
  ct__fused_free(p->fused);
  ct_var_free(p->sink);
  free(p->guards);
  free(p->vars);
  free(p->release);
  memset(p, 0, sizeof *p);
}

ct_status ct__prep_init(ct__prep *p, const ct_op *op, ct_scope *scope, ct_place place,
                        void (*created)(void *arg, ct_var *v), void *arg) {
  char label[CT__OP_LABEL_CAP];
  memset(p, 0, sizeof *p);
  if (op == NULL || scope == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_op_run: the op or the scope is NULL");
  }
  const ct__opdef *d = op->def;
  /* The label is formatted up front only when it is needed: ct_op_run binds on every call. */
  if (place.kind != CT_DEVICE_CPU || !ct__place_valid(place)) {
    if (ct__place_check(place, ct__op_label(op, label, sizeof label)) != CT_OK) {
      return ct_last_status();
    }
  }
  for (size_t a = 0; a < d->n_attr; a++) {
    if (d->attr[a].required && !op->attr_set[a]) {
      return ct__error(CT_ERR_INVALID_ARGUMENT,
                       "%s: attribute '%s' is required: set it with ct_op_set_attr_%s",
                       ct__op_label(op, label, sizeof label),
                       d->attr[a].name, ct_attr_type_name(d->attr[a].value.type));
    }
  }
  size_t n_in = 0, n_out = 0;
  /* A pure infer-shape may be skipped (CT_OP_PURE_INFER); an any-type slot's variable is read
   * through the ct_var, which the key cannot see. */
  bool keyed = d->infer_shape != NULL && (d->flags & CT_OP_PURE_INFER) != 0;
  for (size_t s = 0; s < d->n_in; s++) {
    if (op->in[s].n > 0 && (d->in[s].flags & CT_SLOT_ANY_TYPE)) keyed = false;
    if (op->in[s].n == 0 && !(d->in[s].flags & CT_SLOT_OPTIONAL)) {
      return ct__error(CT_ERR_NOT_FOUND,
                       "%s: input slot '%s' is not wired: call ct_op_set_input(op, \"%s\", name)",
                       ct__op_label(op, label, sizeof label), d->in[s].name, d->in[s].name);
    }
    n_in += op->in[s].n;
  }
  for (size_t s = 0; s < d->n_out; s++) {
    if (op->out[s].n > 0 && (d->out[s].flags & CT_SLOT_ANY_TYPE)) keyed = false;
    if (op->out[s].n == 0 && !(d->out[s].flags & CT_SLOT_OPTIONAL)) {
      return ct__error(CT_ERR_NOT_FOUND,
                       "%s: output slot '%s' is not wired: call ct_op_set_output(op, \"%s\", "
                       "name)",
                       ct__op_label(op, label, sizeof label), d->out[s].name, d->out[s].name);
    }
    n_out += op->out[s].n;
  }
  size_t n = n_in + n_out, n_pos = d->n_in + 1 + d->n_out + 1;
  keyed = keyed && n <= CT__KEY_CAP;
  if (n > UINT32_MAX / 2) {
    return ct__error(CT_ERR_OUT_OF_RANGE, "%s: %zu variables are too many",
                     ct__op_label(op, label, sizeof label), n);
  }
  /* One allocation. First what every run reads, together: variables, tensors, slot positions
   * (which kernels read), any-type flags; then, 8-byte aligned, what only a change or a failure
   * reads: the outputs' saved dims and the key's extents. */
  size_t n_key = keyed ? n : 0;
  size_t hot = n * (sizeof(ct_var *) + sizeof(ct_tensor *)) + n_pos * sizeof(uint32_t) + n + 1;
  hot = (hot + 7) & ~(size_t)7;
  size_t bytes = hot + n_out * sizeof(ct_ddim) + n_key * CT_MAX_RANK * sizeof(int64_t);
  char *mem = ct__calloc(1, bytes);
  if (mem == NULL) {
    return ct__error(CT_ERR_OUT_OF_MEMORY, "%s: out of host memory binding %zu variables",
                     ct__op_label(op, label, sizeof label), n);
  }
  p->op = op;
  p->vars = (ct_var **)(void *)mem;
  p->tensors = (ct_tensor **)(void *)(p->vars + n);
  p->keyed = keyed;
  p->pos = (uint32_t *)(void *)(p->tensors + n);
  p->any_type = (unsigned char *)(p->pos + n_pos);
  p->out_dims = (ct_ddim *)(void *)(mem + hot);
  p->key_d = keyed ? (int64_t *)(void *)(p->out_dims + n_out) : NULL;
  p->n_in_vars = (uint32_t)n_in;
  p->n_out_vars = (uint32_t)n_out;
  uint32_t *in_pos = p->pos, *out_pos = p->pos + d->n_in + 1;
  uint32_t k = 0;
  for (size_t s = 0; s < d->n_in; s++) {
    in_pos[s] = k;
    for (size_t i = 0; i < op->in[s].n; i++, k++) {
      const char *name = op->in[s].names[i];
      p->any_type[k] = (d->in[s].flags & CT_SLOT_ANY_TYPE) != 0;
      p->vars[k] = ct_scope_find_var(scope, name);
      if (p->vars[k] == NULL) {
        ct__prep_destroy(p);
        return ct__error(CT_ERR_NOT_FOUND,
                         "%s: input %s variable '%s' is not in the scope or its ancestors: "
                         "create it, or wire the op to another variable",
                         ct__op_label(op, label, sizeof label), d->in[s].name, name);
      }
    }
  }
  in_pos[d->n_in] = k;
  for (size_t s = 0; s < d->n_out; s++) {
    out_pos[s] = k - (uint32_t)n_in;
    for (size_t i = 0; i < op->out[s].n; i++, k++) {
      const char *name = op->out[s].names[i];
      p->any_type[k] = (d->out[s].flags & CT_SLOT_ANY_TYPE) != 0;
      /* An entry no gradient is wanted for (CT__GRAD_EMPTY) is wired to a variable of the
       * prep's own, outside the scope, which its kernel never writes: the user's scope gains
       * no empty variable of that name. */
      if (strcmp(name, CT__GRAD_EMPTY) == 0 && p->sink == NULL) p->sink = ct_var_new();
      ct_var *v = strcmp(name, CT__GRAD_EMPTY) == 0 ? p->sink : ct_scope_find_var(scope, name);
      if (v == NULL) {
        v = ct_scope_var(scope, name);
        if (v == NULL) {
          char text[512];
          snprintf(text, sizeof text, "%s", ct_last_error());
          ct_status st = ct_last_status();
          ct__prep_destroy(p);
          return ct__error(st, "%s: output %s variable '%s': %s",
                           ct__op_label(op, label, sizeof label), d->out[s].name, name,
                           text);
        }
        if (created != NULL) created(arg, v);
      }
      p->vars[k] = v;
    }
  }
  out_pos[d->n_out] = k - (uint32_t)n_in;
  /* An output that is also an input (an in-place op): its tensor is the input's. */
  for (uint32_t o = (uint32_t)n_in; o < k && !p->self_alias; o++) {
    for (uint32_t i = 0; i < n_in && !p->any_type[o]; i++) {
      if (!p->any_type[i] && p->vars[i] == p->vars[o]) p->self_alias = true;
    }
  }
  p->wire_gen = op->wire_gen;
  p->ctx = (ct_kernel_ctx){
      .op = op,
      .scope = scope,
      .place = place,
      .dtype = CT_DTYPE_UNDEFINED,
      .in = p->vars,
      .in_t = (const ct_tensor *const *)p->tensors,
      .in_pos = in_pos,
      .out = p->vars + n_in,
      .out_t = p->tensors + n_in,
      .out_pos = out_pos,
      .attr = op->attr,
  };
  return CT_OK;
}
