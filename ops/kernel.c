/* SPDX-License-Identifier: Apache-2.0 */
/* ops/kernel.c: the helpers that the kernels of every backend share (ops/kernel.h). */
#include <stdio.h>
#include <stdlib.h>

#include "ops/kernel.h"

void *ct__k_out_data_slow(const ct_kernel_ctx *c, size_t slot, size_t i, ct_dtype dtype) {
  void *d = ct_tensor_mutable_data(ct_kernel_out(c, slot, i), dtype, c->place);
  if (CT__UNLIKELY(d == NULL)) {
    char text[512];
    snprintf(text, sizeof text, "%s", ct_last_error());
    ct_kernel_fail(c, ct_last_status(), "output %s variable '%s': %s",
                   c->op->def->out[slot].name, ct_kernel_out_name(c, slot, i), text);
  }
  return d;
}

ct_status ct__k_resize(const ct_kernel_ctx *c, size_t slot, size_t i, ct_ddim dims) {
  ct_tensor *t = ct_kernel_out(c, slot, i);
  if (CT__LIKELY(ct__ddim_eq(&t->dims, &dims))) return CT_OK;
  if (ct_tensor_resize(t, dims) != CT_OK) {
    char text[512];
    snprintf(text, sizeof text, "%s", ct_last_error());
    return ct_kernel_fail(c, ct_last_status(), "output %s variable '%s': %s",
                          c->op->def->out[slot].name, ct_kernel_out_name(c, slot, i), text);
  }
  return CT_OK;
}

ct_status ct__k_check_dtype(const ct_kernel_ctx *c, size_t slot, size_t i, ct_dtype want) {
  const ct_tensor *t = ct_kernel_in(c, slot, i);
  if (CT__LIKELY(t->dtype == want)) return CT_OK;
  return ct_kernel_fail(c, CT_ERR_TYPE_MISMATCH,
                        "input %s variable '%s' is %s but input %s variable '%s' is %s: cast one "
                        "of them",
                        c->op->def->in[slot].name, ct_kernel_in_name(c, slot, i),
                        ct_dtype_name(t->dtype), c->op->def->in[0].name,
                        ct_kernel_in_name(c, 0, 0), ct_dtype_name(want));
}

ct_status ct__k_attr_dtype(const ct_kernel_ctx *c, size_t a, ct_dtype *out) {
  int64_t v = c->attr[a].u.i;
  if (CT__UNLIKELY(!ct__dtype_valid((ct_dtype)v) || v != (int64_t)(ct_dtype)v)) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "attribute '%s' is %lld, not a ct_dtype: use CT_BOOL .. CT_UINT64",
                          c->op->def->attr[a].name, (long long)v);
  }
  *out = (ct_dtype)v;
  return CT_OK;
}

ct_status ct__k_broadcast(const ct_kernel_ctx *c, ct_ddim a, ct_ddim b, ct_ddim *out) {
  int r = a.rank > b.rank ? a.rank : b.rank;
  out->rank = r;
  for (int k = 0; k < r; k++) {
    int ia = a.rank - r + k, ib = b.rank - r + k;
    int64_t da = ia >= 0 ? a.d[ia] : 1, db = ib >= 0 ? b.d[ib] : 1;
    if (da == db || db == 1) {
      out->d[k] = da;
    } else if (da == 1) {
      out->d[k] = db;
    } else {
      char sa[CT__DDIM_STR_CAP], sb[CT__DDIM_STR_CAP];
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "input %s variable '%s' %s and input %s variable '%s' %s do not "
                            "broadcast (dim %d: %lld vs %lld): make each trailing dim equal or 1",
                            c->op->def->in[0].name, ct_kernel_in_name(c, 0, 0),
                            ct_ddim_str(a, sa, sizeof sa), c->op->def->in[1].name,
                            ct_kernel_in_name(c, 1, 0), ct_ddim_str(b, sb, sizeof sb), k,
                            (long long)da, (long long)db);
    }
  }
  return CT_OK;
}

ct_status ct__k_axis(const ct_kernel_ctx *c, const char *attr, int64_t axis, int rank,
                     int *out) {
  int64_t n = rank > 0 ? rank : 1;
  if (axis < -n || axis >= n) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                          "attribute '%s' is %lld but input %s variable '%s' has rank %d: use "
                          "an axis in [%lld, %lld)",
                          attr, (long long)axis, c->op->def->in[0].name,
                          ct_kernel_in_name(c, 0, 0), rank, (long long)-n, (long long)n);
  }
  *out = (int)(axis < 0 ? axis + n : axis);
  return CT_OK;
}

ct_status ct__k_relabel(const ct_kernel_ctx *c) {
  char text[512];
  snprintf(text, sizeof text, "%s", ct_last_error());
  return ct_kernel_fail(c, ct_last_status(), "%s", text);
}
