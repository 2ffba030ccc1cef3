/* SPDX-License-Identifier: Apache-2.0 */
/* ops/grad_attrs.c: ct_grad_copy_attrs, a grad-op maker's copy of its forward op's attributes.
 *
 * Apart from the backward pass (ops/backward.c) because it needs nothing of the pass: only the
 * forward op the context names and the grad op's definition. An attribute is copied when the
 * grad op's type has one of the same name and kind; the others are skipped. */
#include <string.h>

#include <corten/backward.h>

#include "ops/op_impl.h"

ct_status ct_grad_copy_attrs(ct_grad_ctx *g, ct_op *op) {
  if (g == NULL || op == NULL) {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_grad_copy_attrs: the context or op is NULL");
  }
  const ct_op *fwd = ct_grad_forward(g);
  const ct__opdef *from = fwd->def;
  for (size_t a = 0; a < from->n_attr; a++) {
    const ct_attr_value *v = &fwd->attr[a];
    const char *name = from->attr[a].name;
    bool found = false;
    for (size_t b = 0; b < op->def->n_attr && !found; b++) {
      found = strcmp(op->def->attr[b].name, name) == 0 && op->def->attr[b].value.type == v->type;
    }
    if (!found) continue;
    ct_status s = ct__op_set_attr_value(op, name, v); /* (a program stays with its op) */
    if (s != CT_OK) return s;
  }
  return CT_OK;
}
