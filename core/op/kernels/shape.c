/* core/op/kernels/shape.c: reshape, transpose and concat on the CPU, for every dtype.
 *
 * reshape makes Out a view of X's memory with new dims (no copy; with X and Out the same
 * variable it works in place). Its `shape` follows PaddlePaddle: -1 (at most once) is inferred
 * from the element count, 0 copies the input's dim at the same position; the element counts
 * must match. transpose copies X with its dims permuted by `axis` (a permutation of the dims,
 * negative entries counting from the end as in numpy). concat joins its X tensors along `axis`
 * (negative counts from the end); all other dims must match. transpose and concat move elements
 * by their size in bytes, so one kernel serves every dtype. */
#include <stdio.h>
#include <string.h>

#include "op/kernels/kernels.h"

enum { IN_X };
enum { OUT_OUT };

/* Writes a list of ints as "[2,-1,0]" into buf, for messages (cut short when long). */
static const char *ints_str(const int64_t *v, size_t n, char *buf, size_t cap) {
  size_t pos = (size_t)snprintf(buf, cap, "[");
  for (size_t i = 0; i < n && pos + 1 < cap; i++) {
    int w = snprintf(buf + pos, cap - pos, "%s%lld", i ? "," : "", (long long)v[i]);
    if (w < 0) break;
    pos += (size_t)w;
  }
  if (pos + 1 < cap) snprintf(buf + pos, cap - pos, "]");
  return buf;
}

/* ---- reshape(shape) -------------------------------------------------------------------------- */

enum { RESHAPE_SHAPE };

/* The dims of Out from the `shape` attribute and X's dims. Errors: more than CT_MAX_RANK dims,
 * CT_ERR_OUT_OF_RANGE; an entry below -1, two -1s, or a 0 past X's rank,
 * CT_ERR_INVALID_ARGUMENT; element counts that cannot match, CT_ERR_SHAPE. */
static ct_status reshape_dims(const ct_kernel_ctx *c, ct_ddim *out) {
  const ct_attr_value *shape = &c->attr[RESHAPE_SHAPE];
  const int64_t *v = shape->u.ints.v;
  size_t n = shape->u.ints.n;
  const ct_tensor *xt = ct_kernel_in(c, IN_X, 0);
  char sx[CT__DDIM_STR_CAP], ss[CT__DDIM_STR_CAP];
  if (n > CT_MAX_RANK) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                          "attribute 'shape' has %zu dims, more than CT_MAX_RANK (%d)", n,
                          CT_MAX_RANK);
  }
  int infer = -1;
  int64_t known = 1;
  out->rank = (int)n;
  for (size_t i = 0; i < n; i++) {
    int64_t d = v[i];
    if (d == -1) {
      if (infer >= 0) {
        return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                              "attribute 'shape' %s has more than one -1: at most one dim can "
                              "be inferred",
                              ints_str(v, n, ss, sizeof ss));
      }
      infer = (int)i;
      out->d[i] = 1;
      continue;
    }
    if (d < -1) {
      return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                            "attribute 'shape' %s has %lld at position %zu: use an extent, 0 to "
                            "copy the input's dim or -1 to infer it",
                            ints_str(v, n, ss, sizeof ss), (long long)d, i);
    }
    if (d == 0) {
      if ((int)i >= xt->dims.rank) {
        return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                              "attribute 'shape' %s has 0 at position %zu but input X variable "
                              "'%s' %s has no dim there to copy",
                              ints_str(v, n, ss, sizeof ss), i, ct_kernel_in_name(c, IN_X, 0),
                              ct_ddim_str(xt->dims, sx, sizeof sx));
      }
      d = xt->dims.d[i];
    }
    out->d[i] = d;
    /* Once the product overflows it stays unusable (a later 0 must not bring it back). */
    if (known >= 0 && __builtin_mul_overflow(known, d, &known)) known = -1;
  }
  if (infer >= 0 && known > 0 && xt->numel % known == 0) {
    out->d[infer] = xt->numel / known;
  } else if (infer >= 0 || known != xt->numel) {
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input X variable '%s' %s has %lld elements, which attribute 'shape' "
                          "%s cannot hold: keep the element count",
                          ct_kernel_in_name(c, IN_X, 0), ct_ddim_str(xt->dims, sx, sizeof sx),
                          (long long)xt->numel, ints_str(v, n, ss, sizeof ss));
  }
  return CT_OK;
}

static ct_status reshape_infer(const ct_kernel_ctx *c) {
  ct_ddim d;
  ct_status s = reshape_dims(c, &d);
  return s == CT_OK ? ct__k_resize(c, OUT_OUT, 0, d) : s;
}

/* Out becomes a view of X's memory (sharing its block), then takes the new dims. */
ct_status ct__reshape_kernel(const ct_kernel_ctx *c) {
  ct_ddim d;
  ct_status s = reshape_dims(c, &d);
  if (CT__UNLIKELY(s != CT_OK)) return s;
  ct_tensor *o = ct_kernel_out(c, OUT_OUT, 0);
  if (CT__UNLIKELY(ct_tensor_share(o, ct_kernel_in(c, IN_X, 0)) != CT_OK)) {
    char text[512];
    snprintf(text, sizeof text, "%s", ct_last_error());
    return ct_kernel_fail(c, ct_last_status(), "output Out variable '%s': %s",
                          ct_kernel_out_name(c, OUT_OUT, 0), text);
  }
  return ct__k_resize(c, OUT_OUT, 0, d);
}

static const ct_attr_def reshape_attrs[] = {
    {"shape", {.type = CT_ATTR_INTS, .u.ints = {NULL, 0}}, true},
};

/* ---- transpose(axis) ------------------------------------------------------------------------- */

enum { TR_AXIS };

/* The permutation of X's dims in `axis`, normalised. Errors: a length other than X's rank,
 * CT_ERR_SHAPE; an entry outside [-rank, rank), CT_ERR_OUT_OF_RANGE; a dim listed twice,
 * CT_ERR_INVALID_ARGUMENT. */
ct_status ct__tr_perm(const ct_kernel_ctx *c, int perm[CT_MAX_RANK]) {
  const ct_attr_value *axis = &c->attr[TR_AXIS];
  const ct_tensor *xt = ct_kernel_in(c, IN_X, 0);
  int rank = xt->dims.rank;
  char sx[CT__DDIM_STR_CAP], sa[CT__DDIM_STR_CAP];
  if (axis->u.ints.n != (size_t)rank) {
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "attribute 'axis' %s has %zu entries but input X variable '%s' %s has "
                          "rank %d: give a permutation of all its dims",
                          ints_str(axis->u.ints.v, axis->u.ints.n, sa, sizeof sa),
                          axis->u.ints.n, ct_kernel_in_name(c, IN_X, 0),
                          ct_ddim_str(xt->dims, sx, sizeof sx), rank);
  }
  bool seen[CT_MAX_RANK] = {false};
  for (int k = 0; k < rank; k++) {
    ct_status s = ct__k_axis(c, "axis", axis->u.ints.v[k], rank, &perm[k]);
    if (s != CT_OK) return s;
    if (seen[perm[k]]) {
      return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                            "attribute 'axis' %s lists dim %d twice: give a permutation of the "
                            "dims of input X variable '%s'",
                            ints_str(axis->u.ints.v, axis->u.ints.n, sa, sizeof sa), perm[k],
                            ct_kernel_in_name(c, IN_X, 0));
    }
    seen[perm[k]] = true;
  }
  return CT_OK;
}

static ct_status tr_infer(const ct_kernel_ctx *c) {
  int perm[CT_MAX_RANK];
  ct_status s = ct__tr_perm(c, perm);
  if (s != CT_OK) return s;
  ct_ddim x = ct_kernel_in(c, IN_X, 0)->dims, out = {.rank = x.rank};
  for (int k = 0; k < x.rank; k++) out.d[k] = x.d[perm[k]];
  return ct__k_resize(c, OUT_OUT, 0, out);
}

/* The walk over Out (ct__tr_plan, kernels.h). */
void ct__tr_make_plan(ct_ddim x, const int perm[CT_MAX_RANK], ct__tr_plan *p) {
  int64_t xs[CT_MAX_RANK], st = 1;
  for (int k = x.rank - 1; k >= 0; k--) {
    xs[k] = st;
    st *= x.d[k];
  }
  int n = 0;
  for (int k = 0; k < x.rank; k++) {
    int64_t d = x.d[perm[k]], s = xs[perm[k]];
    if (d == 1) continue;
    if (n > 0 && p->is[n - 1] == s * d) {
      p->d[n - 1] *= d;
      p->is[n - 1] = s;
      continue;
    }
    p->d[n] = d;
    p->is[n] = s;
    n++;
  }
  if (n == 0) {
    p->d[0] = 1;
    p->is[0] = 1;
    n = 1;
  }
  p->rank = n;
}

/* Gathers X into Out (both n elements of type T) along the plan. */
#define TR_COPY(NAME, T)                                                    \
  static void NAME(T *o, const T *x, const ct__tr_plan *p) {                \
    int r = p->rank;                                                        \
    int64_t inner = p->d[r - 1], st = p->is[r - 1], idx[CT_MAX_RANK] = {0}; \
    int64_t off = 0;                                                        \
    for (;;) {                                                              \
      for (int64_t i = 0; i < inner; i++) o[i] = x[off + i * st];           \
      o += inner;                                                           \
      int k = r - 2;                                                        \
      for (; k >= 0; k--) {                                                 \
        off += p->is[k];                                                    \
        if (++idx[k] < p->d[k]) break;                                      \
        off -= p->is[k] * p->d[k];                                          \
        idx[k] = 0;                                                         \
      }                                                                     \
      if (k < 0) break;                                                     \
    }                                                                       \
  }

TR_COPY(tr_copy8, uint8_t)
TR_COPY(tr_copy16, uint16_t)
TR_COPY(tr_copy32, uint32_t)
TR_COPY(tr_copy64, uint64_t)

static ct_status transpose_any(const ct_kernel_ctx *c) {
  int perm[CT_MAX_RANK];
  ct_status s = ct__tr_perm(c, perm);
  if (CT__UNLIKELY(s != CT_OK)) return s;
  const ct_tensor *xt = ct_kernel_in(c, IN_X, 0);
  void *o = ct__k_out_data(c, OUT_OUT, 0, xt->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  if (xt->numel == 0) return CT_OK;
  const void *x = ct__k_in_data(xt);
  ct__tr_plan p;
  ct__tr_make_plan(xt->dims, perm, &p);
  size_t es = ct_dtype_size(xt->dtype);
  if (p.rank == 1 && p.is[0] == 1) {
    memmove(o, x, (size_t)xt->numel * es);
    return CT_OK;
  }
  switch (es) {
    case 1: tr_copy8(o, x, &p); break;
    case 2: tr_copy16(o, x, &p); break;
    case 4: tr_copy32(o, x, &p); break;
    default: tr_copy64(o, x, &p); break;
  }
  return CT_OK;
}

static const ct_attr_def tr_attrs[] = {
    {"axis", {.type = CT_ATTR_INTS, .u.ints = {NULL, 0}}, true},
};

/* ---- concat(axis) ---------------------------------------------------------------------------- */

enum { CC_AXIS };

static ct_status cc_infer(const ct_kernel_ctx *c) {
  const ct_tensor *x0 = ct_kernel_in(c, IN_X, 0);
  char a[CT__DDIM_STR_CAP], b[CT__DDIM_STR_CAP];
  if (x0->dims.rank == 0) {
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input X variable '%s' is a scalar (rank 0): concat needs rank 1 or "
                          "more; reshape it to [1] first",
                          ct_kernel_in_name(c, IN_X, 0));
  }
  int axis;
  ct_status s = ct__k_axis(c, "axis", c->attr[CC_AXIS].u.i, x0->dims.rank, &axis);
  if (s != CT_OK) return s;
  ct_ddim out = x0->dims;
  for (size_t i = 1, n = ct_kernel_in_count(c, IN_X); i < n; i++) {
    const ct_tensor *xi = ct_kernel_in(c, IN_X, i);
    bool fits = xi->dims.rank == x0->dims.rank;
    for (int k = 0; fits && k < x0->dims.rank; k++) {
      fits = k == axis || xi->dims.d[k] == x0->dims.d[k];
    }
    if (!fits) {
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "input X variable '%s' %s does not fit input X variable '%s' %s "
                            "along axis %d: every dim but the axis must match",
                            ct_kernel_in_name(c, IN_X, i), ct_ddim_str(xi->dims, b, sizeof b),
                            ct_kernel_in_name(c, IN_X, 0), ct_ddim_str(x0->dims, a, sizeof a),
                            axis);
    }
    if (__builtin_add_overflow(out.d[axis], xi->dims.d[axis], &out.d[axis])) {
      return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                            "the inputs X add up to more than %lld along axis %d",
                            (long long)INT64_MAX, axis);
    }
  }
  for (size_t i = 1, n = ct_kernel_in_count(c, IN_X); i < n; i++) {
    s = ct__k_check_dtype(c, IN_X, i, c->dtype);
    if (s != CT_OK) return s;
  }
  return ct__k_resize(c, OUT_OUT, 0, out);
}

/* For each index over the dims before the axis, the block of each input in turn. */
static ct_status concat_any(const ct_kernel_ctx *c) {
  const ct_tensor *x0 = ct_kernel_in(c, IN_X, 0);
  int axis;
  ct_status s = ct__k_axis(c, "axis", c->attr[CC_AXIS].u.i, x0->dims.rank, &axis);
  if (CT__UNLIKELY(s != CT_OK)) return s;
  char *o = ct__k_out_data(c, OUT_OUT, 0, c->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  size_t es = ct_dtype_size(c->dtype), n = ct_kernel_in_count(c, IN_X);
  if (ct_kernel_out(c, OUT_OUT, 0)->numel == 0) return CT_OK;
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < x0->dims.rank; k++) {
    if (k < axis) outer *= x0->dims.d[k];
    if (k > axis) inner *= x0->dims.d[k];
  }
  for (int64_t a = 0; a < outer; a++) {
    for (size_t i = 0; i < n; i++) {
      const ct_tensor *xi = ct_kernel_in(c, IN_X, i);
      size_t block = (size_t)(xi->dims.d[axis] * inner) * es;
      memcpy(o, (const char *)ct__k_in_data(xi) + (size_t)a * block, block);
      o += block;
    }
  }
  return CT_OK;
}

static const ct_attr_def cc_attrs[] = {{"axis", {.type = CT_ATTR_INT, .u.i = 0}, false}};

/* ---- Registration ---------------------------------------------------------------------------- */

void ct__register_shape_ops(void) {
  ct_op_def reshape = {.type = "reshape", .inputs = ct__slot_x, .n_inputs = 1,
                       .outputs = ct__slot_out, .n_outputs = 1, .attrs = reshape_attrs,
                       .n_attrs = 1, .infer_shape = reshape_infer};
  ct__register_cpu(&reshape, CT__KERNELS([0] = ct__reshape_kernel));
  ct_op_def transpose = {.type = "transpose", .inputs = ct__slot_x, .n_inputs = 1,
                         .outputs = ct__slot_out, .n_outputs = 1, .attrs = tr_attrs, .n_attrs = 1,
                         .infer_shape = tr_infer};
  ct__register_cpu(&transpose, CT__KERNELS([0] = transpose_any));
  ct_op_def concat = {.type = "concat", .inputs = ct__slot_xs, .n_inputs = 1,
                      .outputs = ct__slot_out, .n_outputs = 1, .attrs = cc_attrs, .n_attrs = 1,
                      .infer_shape = cc_infer};
  ct__register_cpu(&concat, CT__KERNELS([0] = concat_any));
}
