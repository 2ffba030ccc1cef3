/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/misc_ops_linalg.c: the CPU kernels of einsum, det and their gradients (float32,
 * float64; ops/defs/misc_ops_linalg.c has the semantics). Both compute in double from copies of
 * the operands and round once into the output.
 *
 * einsum walks every combination of its labels' values once (the output's labels outermost, in
 * row-major order, the summed ones inside), keeping each operand's offset as the sum of its
 * strides: the work is the product of all extents, which the equations of a model keep small;
 * a product past 2^62 is refused. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "ops/cpu/misc_ops.h"

static ct_status no_memory(const ct_kernel_ctx *c) {
  return ct_kernel_fail(c, CT_ERR_OUT_OF_MEMORY, "out of host memory");
}

/* The number of steps of the walk over every label (0 when an extent is 0). */
static ct_status walk_steps(const ct_kernel_ctx *c, const ct__eq_plan *p, int64_t *steps) {
  int64_t t = 1;
  for (int g = 0; g < p->n_labels; g++) {
    if (p->extent[g] == 0) {
      *steps = 0;
      return CT_OK;
    }
    if (__builtin_mul_overflow(t, p->extent[g], &t) || t > ((int64_t)1 << 62)) {
      return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE, "equation \"%s\" over these operands takes "
                            "more than 2^62 steps: split it into smaller einsums",
                            c->attr[CT__EQ_EQUATION].u.s);
    }
  }
  *steps = t;
  return CT_OK;
}

/* One step of the walk: the next combination, each operand's offset (k <= n_in) moved along. */
static void walk_next(const ct__eq_plan *p, int64_t *idx, int64_t *off) {
  for (int g = p->n_labels - 1; g >= 0; g--) {
    for (int k = 0; k <= p->n_in; k++) off[k] += p->stride[k][g];
    if (++idx[g] < p->extent[g]) return;
    for (int k = 0; k <= p->n_in; k++) off[k] -= p->stride[k][g] * p->extent[g];
    idx[g] = 0;
  }
}

/* The operands as doubles into x[0 .. n_in) (NULL entries on failure: free them all). */
static ct_status load_all(const ct_kernel_ctx *c, int n_in, double **x) {
  for (int k = 0; k < n_in; k++) {
    x[k] = ct__misc_doubles(c, 0, (size_t)k);
    if (x[k] == NULL) return ct_last_status();
  }
  return CT_OK;
}

ct_status ct__misc_k_einsum(const ct_kernel_ctx *c) {
  ct__eq_plan p;
  int64_t steps = 0, idx[CT__EQ_MAX_LABELS] = {0}, off[CT__EQ_MAX_IN + 1] = {0};
  ct_status s = ct__eq_plan_make(c, 0, &p);
  if (s == CT_OK) s = walk_steps(c, &p, &steps);
  if (s != CT_OK) return s;
  double *x[CT__EQ_MAX_IN] = {NULL};
  int64_t n_out = ct_ddim_numel(p.out);
  double *acc = ct__calloc((size_t)(n_out > 0 ? n_out : 1), sizeof *acc);
  s = acc == NULL ? no_memory(c) : load_all(c, p.n_in, x);
  for (int64_t t = 0; s == CT_OK && t < steps; t++) {
    double v = 1;
    for (int k = 0; k < p.n_in; k++) v *= x[k][off[k]];
    acc[off[p.n_in]] += v;
    walk_next(&p, idx, off);
  }
  if (s == CT_OK) s = ct__misc_store(c, 0, 0, c->dtype, acc, n_out);
  for (int k = 0; k < p.n_in; k++) free(x[k]);
  free(acc);
  return s;
}

ct_status ct__misc_k_einsum_grad(const ct_kernel_ctx *c) {
  ct__eq_plan p;
  int64_t steps = 0, idx[CT__EQ_MAX_LABELS] = {0}, off[CT__EQ_MAX_IN + 1] = {0};
  ct_status s = ct__eq_plan_make(c, 0, &p);
  if (s == CT_OK) s = walk_steps(c, &p, &steps);
  if (s != CT_OK) return s;
  double *x[CT__EQ_MAX_IN] = {NULL}, *dx[CT__EQ_MAX_IN] = {NULL}, *dout = NULL;
  bool want[CT__EQ_MAX_IN];
  size_t m = ct_kernel_out_count(c, 0);
  s = load_all(c, p.n_in, x);
  if (s == CT_OK && (dout = ct__misc_doubles(c, 1, 0)) == NULL) s = ct_last_status();
  for (int k = 0; k < p.n_in && s == CT_OK; k++) {
    want[k] = (size_t)k < m && strcmp(ct_kernel_out_name(c, 0, (size_t)k), CT__GRAD_EMPTY) != 0;
    int64_t nk = ct_kernel_in(c, 0, (size_t)k)->numel;
    if (want[k] && (dx[k] = ct__calloc((size_t)(nk > 0 ? nk : 1), sizeof *dx[k])) == NULL) {
      s = no_memory(c);
    }
  }
  for (int64_t t = 0; s == CT_OK && t < steps; t++) {
    double g = dout[off[p.n_in]];
    for (int k = 0; k < p.n_in; k++) {
      if (!want[k]) continue;
      double v = g;
      for (int j = 0; j < p.n_in; j++) {
        if (j != k) v *= x[j][off[j]];
      }
      dx[k][off[k]] += v;
    }
    walk_next(&p, idx, off);
  }
  for (int k = 0; k < p.n_in && s == CT_OK; k++) {
    if (want[k]) {
      s = ct__misc_store(c, 0, (size_t)k, c->dtype, dx[k], ct_kernel_in(c, 0, (size_t)k)->numel);
    }
  }
  for (int k = 0; k < p.n_in; k++) free(x[k]), free(dx[k]);
  free(dout);
  return s;
}

/* ---- det ------------------------------------------------------------------------------------- */

ct_status ct__misc_k_det(const ct_kernel_ctx *c) {
  int64_t mats, n;
  ct_ddim out;
  ct_status s = ct__det_plan(c, &mats, &n, &out);
  if (s != CT_OK) return s;
  double *x = ct__misc_doubles(c, 0, 0), *d = ct__malloc((size_t)(mats > 0 ? mats : 1) * sizeof *d);
  int64_t *piv = ct__malloc((size_t)(n > 0 ? n : 1) * sizeof *piv);
  if (x == NULL || d == NULL || piv == NULL) s = x == NULL ? ct_last_status() : no_memory(c);
  for (int64_t m = 0; s == CT_OK && m < mats; m++) d[m] = ct__det_lu(x + m * n * n, n, piv);
  if (s == CT_OK) s = ct__misc_store(c, 0, 0, c->dtype, d, mats);
  free(x), free(d), free(piv);
  return s;
}

/* The cofactor matrix of the n x n matrix a into cof (work: (n-1)^2 doubles, piv n), from the
 * minors' determinants. */
static void cofactors_by_minors(const double *a, int64_t n, double *cof, double *work,
                                int64_t *piv) {
  for (int64_t i = 0; i < n; i++) {
    for (int64_t j = 0; j < n; j++) {
      int64_t k = 0;
      for (int64_t r = 0; r < n; r++) {
        for (int64_t q = 0; q < n && r != i; q++) {
          if (q != j) work[k++] = a[r * n + q];
        }
      }
      double m = ct__det_lu(work, n - 1, piv);
      cof[i * n + j] = (i + j) % 2 ? -m : m;
    }
  }
}

/* The cofactor matrix det(a) inv(a)^T of a, whose LU factors (lu, piv, determinant det) have no
 * zero pivot: column j of inv(a) solves LU x = P e_j. col: n doubles of work. */
static void cofactors_by_inverse(const double *lu, const int64_t *piv, double det, int64_t n,
                                 double *cof, double *col) {
  for (int64_t j = 0; j < n; j++) {
    for (int64_t i = 0; i < n; i++) {
      double v = piv[i] == j ? 1 : 0;
      for (int64_t k = 0; k < i; k++) v -= lu[i * n + k] * col[k];
      col[i] = v;
    }
    for (int64_t i = n - 1; i >= 0; i--) {
      double v = col[i];
      for (int64_t k = i + 1; k < n; k++) v -= lu[i * n + k] * col[k];
      col[i] = v / lu[i * n + i];
    }
    for (int64_t i = 0; i < n; i++) cof[j * n + i] = det * col[i]; /* inv[i][j] -> cof[j][i] */
  }
}

ct_status ct__misc_k_det_grad(const ct_kernel_ctx *c) {
  int64_t mats, n;
  ct_ddim out;
  ct_status s = ct__det_plan(c, &mats, &n, &out);
  if (s != CT_OK) return s;
  int64_t nn = n * n;
  double *x = ct__misc_doubles(c, 0, 0), *dout = ct__misc_doubles(c, 1, 0);
  double *work = ct__malloc((size_t)(2 * nn + n + 1) * sizeof *work);
  int64_t *piv = ct__malloc((size_t)(n + 1) * sizeof *piv);
  double *dx = ct__malloc((size_t)(mats * nn + 1) * sizeof *dx);
  if (x == NULL || dout == NULL) s = ct_last_status();
  else if (work == NULL || piv == NULL || dx == NULL) s = no_memory(c);
  for (int64_t m = 0; s == CT_OK && m < mats; m++) {
    const double *a = x + m * nn;
    double *lu = work, *cof = dx + m * nn;
    memcpy(lu, a, (size_t)nn * sizeof *lu);
    double det = ct__det_lu(lu, n, piv);
    bool full = true;
    for (int64_t i = 0; i < n; i++) full = full && lu[i * n + i] != 0;
    if (full) cofactors_by_inverse(lu, piv, det, n, cof, work + nn);
    else cofactors_by_minors(a, n, cof, work + nn, piv);
    for (int64_t i = 0; i < nn; i++) cof[i] *= dout[m];
  }
  if (s == CT_OK) s = ct__misc_store(c, 0, 0, c->dtype, dx, mats * nn);
  free(x), free(dout), free(work), free(piv), free(dx);
  return s;
}
