/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/misc_ops_linalg.c: einsum and det (ops/defs/misc_ops.h), their grad types and makers.
 *
 *   einsum       Inputs (many) -> Out; equation: numpy's Einstein summation. Each operand's term
 *                lists one label (a-z, A-Z) per dim, with at most one "..." standing for the dims
 *                no letter names (broadcast across operands, numpy's rules). After "->" the
 *                output's labels; without it (implicit mode) the ellipsis's dims, then the
 *                letters that occur once, in ASCII order. A label repeated in a term reads that
 *                term's diagonal; labels missing from the output are summed. Every occurrence of a
 *                letter must have the same extent. Sums run in double.
 *   einsum_grad  Inputs (many), Out@GRAD -> Inputs@GRAD (many; an entry named '@EMPTY@' is not
 *                written): d Inputs_k[idx_k] = sum over all label values of Out@GRAD[idx_out] times
 *                the other operands' elements, which puts a diagonal's gradient on the diagonal.
 *   det          X [.., n, n] -> Out [..]: determinants by Gaussian elimination with partial
 *                pivoting in double (1 for n = 0).
 *   det_grad     X, Out@GRAD -> X@GRAD = Out@GRAD x the cofactor matrix of X (det(X) inv(X)^T
 *                when no pivot vanishes; the minors' determinants otherwise, so a singular X gets
 *                its exact, nonzero gradient). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <corten/backward.h>

#include "common/alloc.h"
#include "common/common.h"
#include "ops/defs/misc_ops.h"

/* ---- The equation ---------------------------------------------------------------------------- */

/* A term: its labels in order (letters as 0..51 in ASCII order, ELL for the ellipsis). */
#define ELL 255
typedef struct term {
  int n;
  unsigned char lab[CT_MAX_RANK + 53];
  int ell; /* position of the ellipsis in lab, or -1 */
} term;

static int letter(char ch) {
  if (ch >= 'A' && ch <= 'Z') return ch - 'A';
  if (ch >= 'a' && ch <= 'z') return 26 + ch - 'a';
  return -1;
}

static ct_status bad_eq(const ct_kernel_ctx *c, const char *why) {
  return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT, "attribute 'equation' \"%s\" %s: write terms "
                        "of letters (and one \"...\" at most) separated by commas, optionally "
                        "followed by \"->\" and the output's term",
                        c->attr[CT__EQ_EQUATION].u.s, why);
}

/* Parses one term from *pp up to a ',', "->" or the end. */
static ct_status parse_term(const ct_kernel_ctx *c, const char **pp, term *t) {
  const char *p = *pp;
  t->n = 0;
  t->ell = -1;
  for (; *p && *p != ',' && *p != '-'; p++) {
    if (*p == ' ') continue;
    if (*p == '.') {
      if (p[1] != '.' || p[2] != '.' || t->ell >= 0) return bad_eq(c, "has a stray or second '.'");
      t->ell = t->n;
      t->lab[t->n++] = ELL;
      p += 2;
      continue;
    }
    int l = letter(*p);
    if (l < 0) return bad_eq(c, "has a character other than a letter, '.', ',', '-', '>' or ' '");
    if (t->n >= (int)sizeof t->lab - 1) return bad_eq(c, "has a term of too many labels");
    t->lab[t->n++] = (unsigned char)l;
  }
  *pp = p;
  return CT_OK;
}

/* The plan's work space: the terms, then per letter its extent (-1 unseen) and count. */
typedef struct eq_parse {
  term in[CT__EQ_MAX_IN], out;
  bool explicit_out;
  int64_t ext[52];
  int count[52];
  int ell_rank;
  int64_t ell_ext[CT_MAX_RANK];
} eq_parse;

static ct_status parse(const ct_kernel_ctx *c, int n_in, eq_parse *e) {
  const char *p = c->attr[CT__EQ_EQUATION].u.s;
  int k = 0;
  ct_status s = CT_OK;
  for (;;) {
    if (k >= n_in) return bad_eq(c, "has more terms than the op has inputs");
    s = parse_term(c, &p, &e->in[k++]);
    if (s != CT_OK) return s;
    if (*p == ',') {
      p++;
      continue;
    }
    break;
  }
  if (k != n_in) return bad_eq(c, "has fewer terms than the op has inputs");
  e->explicit_out = false;
  if (*p == '-') {
    if (p[1] != '>') return bad_eq(c, "has a '-' without '>'");
    p += 2;
    e->explicit_out = true;
    s = parse_term(c, &p, &e->out);
    if (s != CT_OK) return s;
    if (*p != '\0') return bad_eq(c, "has more than one output term");
  }
  return CT_OK;
}

/* Each operand's dims against its term: letters' extents and the ellipsis's broadcast dims. */
static ct_status bind_dims(const ct_kernel_ctx *c, size_t slot, int n_in, eq_parse *e) {
  for (int l = 0; l < 52; l++) e->ext[l] = -1, e->count[l] = 0;
  e->ell_rank = 0;
  for (int k = 0; k < n_in; k++) {
    const term *t = &e->in[k];
    ct_ddim d = ct_kernel_in(c, slot, (size_t)k)->dims;
    int letters = t->n - (t->ell >= 0), er = d.rank - letters;
    if (er < 0 || (t->ell < 0 && er != 0)) {
      return ct_kernel_fail(c, CT_ERR_SHAPE, "input Inputs variable '%s' has rank %d but its "
                            "term in equation \"%s\" names %d dims%s",
                            ct_kernel_in_name(c, slot, (size_t)k), d.rank,
                            c->attr[CT__EQ_EQUATION].u.s, letters,
                            t->ell >= 0 ? " and an ellipsis" : "");
    }
    if (er > e->ell_rank) {
      for (int j = e->ell_rank - 1; j >= 0; j--) e->ell_ext[j + er - e->ell_rank] = e->ell_ext[j];
      for (int j = 0; j < er - e->ell_rank; j++) e->ell_ext[j] = 1;
      e->ell_rank = er;
    }
    for (int a = 0, dim = 0; a < t->n; a++) {
      if (t->lab[a] == ELL) {
        for (int j = 0; j < er; j++, dim++) {
          int64_t x = d.d[dim], *g = &e->ell_ext[e->ell_rank - er + j];
          if (x != 1 && *g != 1 && x != *g) goto mismatch;
          if (x != 1) *g = x;
        }
        continue;
      }
      int64_t x = d.d[dim++], *g = &e->ext[t->lab[a]];
      if (*g >= 0 && *g != x) goto mismatch;
      *g = x;
      e->count[t->lab[a]]++;
    }
    continue;
  mismatch:
    return ct_kernel_fail(c, CT_ERR_SHAPE, "input Inputs variable '%s' does not fit equation "
                          "\"%s\": a label's extent differs from another operand's (the "
                          "ellipsis's dims broadcast; letters must match)",
                          ct_kernel_in_name(c, slot, (size_t)k), c->attr[CT__EQ_EQUATION].u.s);
  }
  return CT_OK;
}

/* Row-major strides of d. */
static void strides_of(ct_ddim d, int64_t st[CT_MAX_RANK]) {
  int64_t s = 1;
  for (int k = d.rank - 1; k >= 0; k--) st[k] = s, s *= d.d[k];
}

ct_status ct__eq_plan_make(const ct_kernel_ctx *c, size_t slot, ct__eq_plan *p) {
  size_t n_in = ct_kernel_in_count(c, slot);
  if (n_in == 0 || n_in > CT__EQ_MAX_IN) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT, "input Inputs has %zu variables: give 1 to "
                          "%d", n_in, CT__EQ_MAX_IN);
  }
  eq_parse *e = ct__calloc(1, sizeof *e);
  if (e == NULL) return ct_kernel_fail(c, CT_ERR_OUT_OF_MEMORY, "out of host memory");
  ct_status s = parse(c, (int)n_in, e);
  if (s == CT_OK) s = bind_dims(c, slot, (int)n_in, e);
  if (s != CT_OK) goto done;
  /* Global labels: letters 0..51, the ellipsis's dims 52.. ; pos[] their place in the plan. */
  int pos[52 + CT_MAX_RANK], order[52 + CT_MAX_RANK], n = 0, er = e->ell_rank;
  for (int l = 0; l < 52 + CT_MAX_RANK; l++) pos[l] = -1;
  if (e->explicit_out) {
    for (int a = 0; a < e->out.n; a++) {
      int l = e->out.lab[a];
      if (l == ELL) {
        for (int j = 0; j < er; j++) pos[52 + j] = n, order[n++] = 52 + j;
        continue;
      }
      if (e->ext[l] < 0 || pos[l] >= 0) {
        s = bad_eq(c, "has an output label no input has, or one listed twice");
        goto done;
      }
      pos[l] = n, order[n++] = l;
    }
    if (e->out.ell < 0 && er > 0) {
      s = ct_kernel_fail(c, CT_ERR_UNSUPPORTED, "equation \"%s\" has an output without \"...\" "
                         "while the operands have %d ellipsis dims: write \"...\" in the output",
                         c->attr[CT__EQ_EQUATION].u.s, er);
      goto done;
    }
  } else {
    for (int j = 0; j < er; j++) pos[52 + j] = n, order[n++] = 52 + j;
    for (int l = 0; l < 52; l++) {
      if (e->count[l] == 1) pos[l] = n, order[n++] = l;
    }
  }
  if (n > CT_MAX_RANK) {
    s = ct_kernel_fail(c, CT_ERR_SHAPE, "equation \"%s\" gives an output of %d dims, more than "
                       "CT_MAX_RANK (%d)", c->attr[CT__EQ_EQUATION].u.s, n, CT_MAX_RANK);
    goto done;
  }
  p->n_out = n;
  for (int l = 0; l < 52; l++) {
    if (e->ext[l] >= 0 && pos[l] < 0) pos[l] = n, order[n++] = l;
  }
  p->n_in = (int)n_in;
  p->n_labels = n;
  p->out.rank = p->n_out;
  for (int g = 0; g < n; g++) {
    p->extent[g] = order[g] >= 52 ? e->ell_ext[order[g] - 52] : e->ext[order[g]];
    if (g < p->n_out) p->out.d[g] = p->extent[g];
    for (int k = 0; k <= (int)n_in; k++) p->stride[k][g] = 0;
  }
  int64_t st[CT_MAX_RANK];
  strides_of(p->out, st);
  for (int g = 0; g < p->n_out; g++) p->stride[n_in][g] = st[g];
  for (size_t k = 0; k < n_in; k++) {
    const term *t = &e->in[k];
    ct_ddim d = ct_kernel_in(c, slot, k)->dims;
    int ek = d.rank - (t->n - (t->ell >= 0));
    strides_of(d, st);
    for (int a = 0, dim = 0; a < t->n; a++) {
      if (t->lab[a] != ELL) {
        p->stride[k][pos[t->lab[a]]] += st[dim++];
        continue;
      }
      for (int j = 0; j < ek; j++, dim++) {
        if (d.d[dim] != 1) p->stride[k][pos[52 + er - ek + j]] += st[dim];
      }
    }
  }
done:
  free(e);
  return s;
}

ct_status ct__eq_infer(const ct_kernel_ctx *c) {
  ct__eq_plan p;
  ct_status s = ct__eq_plan_make(c, 0, &p);
  for (size_t k = 1; s == CT_OK && k < ct_kernel_in_count(c, 0); k++) {
    s = ct__k_check_dtype(c, 0, k, ct_kernel_in(c, 0, 0)->dtype);
  }
  return s == CT_OK ? ct__k_resize(c, 0, 0, p.out) : s;
}

ct_status ct__eq_grad_infer(const ct_kernel_ctx *c) {
  ct__eq_plan p;
  ct_status s = ct__eq_plan_make(c, 0, &p);
  /* Every input of Inputs's dtype, as the forward checks: the kernel reads them all as it. */
  for (size_t k = 1; s == CT_OK && k < ct_kernel_in_count(c, 0); k++) {
    s = ct__k_check_dtype(c, 0, k, ct_kernel_in(c, 0, 0)->dtype);
  }
  if (s == CT_OK) s = ct__k_check_dtype(c, 1, 0, ct_kernel_in(c, 0, 0)->dtype);
  if (s == CT_OK) s = ct__grad_check_dout(c, 1, p.out, "the einsum of Inputs");
  if (s != CT_OK) return s;
  size_t n = ct_kernel_in_count(c, 0), m = ct_kernel_out_count(c, 0);
  if (m != 0 && m != n) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT, "output Inputs@GRAD has %zu variables but "
                          "input Inputs has %zu: wire one per input, named '" CT__GRAD_EMPTY
                          "' where no gradient is wanted", m, n);
  }
  for (size_t i = 0; i < m && s == CT_OK; i++) {
    if (strcmp(ct_kernel_out_name(c, 0, i), CT__GRAD_EMPTY) == 0) continue;
    s = ct__k_resize(c, 0, i, ct_kernel_in(c, 0, i)->dims);
  }
  return s;
}

ct_status ct__grad_einsum(ct_grad_ctx *g) {
  size_t n = ct_grad_input_count(g, "Inputs");
  const char *names[CT__EQ_MAX_IN], *grads[CT__EQ_MAX_IN];
  bool any = false;
  if (n > CT__EQ_MAX_IN) {
    return ct__error(CT_ERR_UNSUPPORTED, "ct_program_append_backward: einsum of %zu inputs: at "
                     "most %d have a gradient", n, CT__EQ_MAX_IN);
  }
  for (size_t i = 0; i < n; i++) {
    names[i] = ct_grad_input(g, "Inputs", i);
    grads[i] = ct_grad_input_grad(g, "Inputs", i);
    any = any || grads[i] != NULL;
    if (grads[i] == NULL) grads[i] = CT__GRAD_EMPTY;
  }
  if (!any) return CT_OK;
  ct_op *op = ct_grad_op_new(g, "einsum_grad");
  if (op == NULL) return ct_last_status();
  ct_status s = ct_op_set_inputs(op, "Inputs", names, n);
  if (s == CT_OK) s = ct__grad_wire_in(op, "Out@GRAD", ct_grad_output_grad(g, "Out", 0));
  if (s == CT_OK) s = ct_op_set_outputs(op, "Inputs@GRAD", grads, n);
  if (s == CT_OK) s = ct_grad_copy_attrs(g, op);
  return s;
}

/* ---- det ------------------------------------------------------------------------------------- */

ct_status ct__det_plan(const ct_kernel_ctx *c, int64_t *mats, int64_t *n, ct_ddim *out) {
  ct_ddim x = ct_kernel_in(c, 0, 0)->dims;
  if (x.rank < 2 || x.d[x.rank - 1] != x.d[x.rank - 2]) {
    char sx[CT__DDIM_STR_CAP];
    return ct_kernel_fail(c, CT_ERR_SHAPE, "input X variable '%s' is %s: give square matrices "
                          "[.., n, n]", ct_kernel_in_name(c, 0, 0), ct_ddim_str(x, sx, sizeof sx));
  }
  *n = x.d[x.rank - 1];
  *mats = 1;
  out->rank = x.rank - 2;
  for (int k = 0; k < x.rank - 2; k++) *mats *= (out->d[k] = x.d[k]);
  return CT_OK;
}

double ct__det_lu(double *a, int64_t n, int64_t *piv) {
  double det = 1;
  for (int64_t i = 0; i < n; i++) piv[i] = i;
  for (int64_t k = 0; k < n; k++) {
    int64_t best = k;
    for (int64_t i = k + 1; i < n; i++) {
      if (fabs(a[i * n + k]) > fabs(a[best * n + k])) best = i;
    }
    if (a[best * n + k] == 0) return 0;
    if (best != k) {
      for (int64_t j = 0; j < n; j++) {
        double t = a[k * n + j];
        a[k * n + j] = a[best * n + j];
        a[best * n + j] = t;
      }
      int64_t t = piv[k];
      piv[k] = piv[best];
      piv[best] = t;
      det = -det;
    }
    double d = a[k * n + k];
    det *= d;
    for (int64_t i = k + 1; i < n; i++) {
      double f = a[i * n + k] / d;
      a[i * n + k] = f;
      for (int64_t j = k + 1; j < n; j++) a[i * n + j] -= f * a[k * n + j];
    }
  }
  return det;
}

ct_status ct__det_infer(const ct_kernel_ctx *c) {
  int64_t mats, n;
  ct_ddim out;
  ct_status s = ct__det_plan(c, &mats, &n, &out);
  return s == CT_OK ? ct__k_resize(c, 0, 0, out) : s;
}

ct_status ct__det_grad_infer(const ct_kernel_ctx *c) {
  int64_t mats, n;
  ct_ddim out;
  ct_status s = ct__det_plan(c, &mats, &n, &out);
  if (s == CT_OK) s = ct__k_check_dtype(c, 1, 0, ct_kernel_in(c, 0, 0)->dtype);
  if (s == CT_OK) s = ct__grad_check_dout(c, 1, out, "the determinants of X");
  return s == CT_OK ? ct__k_resize(c, 0, 0, ct_kernel_in(c, 0, 0)->dims) : s;
}

ct_status ct__grad_det(ct_grad_ctx *g) {
  const char *dx = ct_grad_input_grad(g, "X", 0);
  if (dx == NULL) return CT_OK;
  ct_op *op = ct_grad_op_new(g, "det_grad");
  if (op == NULL) return ct_last_status();
  ct_status s = ct__grad_wire_in(op, "X", ct_grad_input(g, "X", 0));
  if (s == CT_OK) s = ct__grad_wire_in(op, "Out@GRAD", ct_grad_output_grad(g, "Out", 0));
  if (s == CT_OK) s = ct_op_set_output(op, "X@GRAD", dx);
  return s;
}
