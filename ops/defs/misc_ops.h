/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/misc_ops.h: what the misc family's op types (ops/defs/misc_ops*.c) and their CPU
 * kernels (ops/cpu/misc_ops*.c) share: slot and attribute indices and the plans.
 *
 *   non_max_suppression  Boxes [B, N, 4], Scores [B, C, N], MaxOutput, IouThreshold,
 *                        ScoreThreshold (optional one-element inputs; else the attributes) ->
 *                        SelectedIndices [k, 3] int64 (batch, class, box)
 *   unique               X -> Out, Indices, InverseIndices, Counts (the last three optional,
 *                        int64): the distinct elements of X flattened, or slices along `axis`
 *   einsum               Inputs (many) -> Out: Einstein summation over `equation`
 *   det                  X [.., n, n] -> Out [..]: determinants
 *   window               Size (one int) -> Out [size]: hann, hamming or blackman window
 *   mel_weight_matrix    NumMelBins, DftLength, SampleRate, LowerEdgeHertz, UpperEdgeHertz ->
 *                        Out [DftLength / 2 + 1, NumMelBins]
 *   dropout_identity     X, Ratio, TrainingMode -> Out, Mask: dropout where it draws nothing */
#ifndef CORTEN_OPS_DEFS_MISC_OPS_H
#define CORTEN_OPS_DEFS_MISC_OPS_H

#include "ops/defs.h"

/* ---- Slots and attributes -------------------------------------------------------------------- */

enum { CT__NMS_BOXES, CT__NMS_SCORES, CT__NMS_MAX, CT__NMS_IOU, CT__NMS_SCORE };
enum { CT__NMS_CENTER_POINT_BOX, CT__NMS_MAX_ATTR, CT__NMS_IOU_ATTR, CT__NMS_SCORE_ATTR };
enum { CT__UQ_OUT, CT__UQ_INDICES, CT__UQ_INVERSE, CT__UQ_COUNTS };
enum { CT__UQ_SORTED, CT__UQ_FLATTEN, CT__UQ_AXIS };
enum { CT__EQ_EQUATION };
enum { CT__WIN_SIZE_IN };
enum { CT__WIN_KIND, CT__WIN_PERIODIC, CT__WIN_DTYPE };
enum { CT__MEL_BINS, CT__MEL_DFT, CT__MEL_RATE, CT__MEL_LOWER, CT__MEL_UPPER };
enum { CT__MEL_DTYPE };
enum { CT__DI_X, CT__DI_RATIO, CT__DI_TRAINING };
enum { CT__DI_OUT, CT__DI_MASK };
enum { CT__DI_PROB, CT__DI_IS_TEST };

/* ---- einsum ---------------------------------------------------------------------------------- */

/* The most inputs and distinct labels (letters, then the ellipsis's dims) an equation may have. */
#define CT__EQ_MAX_IN 16
#define CT__EQ_MAX_LABELS (52 + CT_MAX_RANK)

/* An equation applied to its inputs' dims: `n_labels` global labels, the output's first (in the
 * output's order: `n_out` of them), the summed ones after; each label's extent; and per input
 * (and for the output, at index n_in) the stride in elements of each global label (0 where the
 * operand has none or broadcasts it; a label repeated in an operand has its strides added, so
 * the walk reads its diagonal). */
typedef struct ct__eq_plan {
  int n_in, n_labels, n_out;
  int64_t extent[CT__EQ_MAX_LABELS];
  int64_t stride[CT__EQ_MAX_IN + 1][CT__EQ_MAX_LABELS];
  ct_ddim out;
} ct__eq_plan;

/* Parses attribute equation against the dims of input slot `slot` (n_in tensors):
 * CT_ERR_INVALID_ARGUMENT for a malformed equation, CT_ERR_SHAPE for operands that do not fit it,
 * CT_ERR_UNSUPPORTED for an explicit output without "..." where the operands have ellipsis dims. */
ct_status ct__eq_plan_make(const ct_kernel_ctx *c, size_t slot, ct__eq_plan *p);

/* ---- det ------------------------------------------------------------------------------------- */

/* X [.., n, n]: the matrices' count and n; CT_ERR_SHAPE naming the op otherwise. */
ct_status ct__det_plan(const ct_kernel_ctx *c, int64_t *mats, int64_t *n, ct_ddim *out);
/* The determinant of the n x n matrix a (row-major, overwritten by its LU factors) by Gaussian
 * elimination with partial pivoting; piv receives the row order (n entries). */
double ct__det_lu(double *a, int64_t n, int64_t *piv);

/* ---- The value-dependent plans --------------------------------------------------------------- */

/* The one element of input (slot, 0) as a double (any numeric dtype; int32 and int64 values
 * through ct__ix_scalar, ops/defs/index.h); CT_ERR_SHAPE or CT_ERR_UNSUPPORTED (a device place:
 * read on the host) naming the op and variable otherwise. */
ct_status ct__misc_num_in(const ct_kernel_ctx *c, size_t slot, double *v);

/* window's size (Size's value, at least 0). */
ct_status ct__win_size(const ct_kernel_ctx *c, int64_t *n);
/* The value of element i of a window of `size` elements, kind and periodic from the attributes
 * (checked by ct__win_size). */
double ct__win_value(const ct_kernel_ctx *c, int64_t i, int64_t size);

/* mel_weight_matrix's inputs and each band's three bin edges (num_mel_bins + 2 of them, into a
 * caller's array of *bins + 2 after a first call with edges NULL). */
typedef struct ct__mel_plan {
  int64_t bins, dft, rate, spec; /* spec = dft / 2 + 1 rows */
  double lower, upper;
} ct__mel_plan;
ct_status ct__mel_plan_make(const ct_kernel_ctx *c, ct__mel_plan *p);
ct_status ct__mel_edges(const ct_kernel_ctx *c, const ct__mel_plan *p, int64_t *edges);

/* dropout_identity: whether this run keeps X as it is (not training, or a ratio of 0); a
 * training run with another ratio is CT_ERR_UNSUPPORTED (random bits that cannot match). */
ct_status ct__di_check(const ct_kernel_ctx *c);

/* ---- Infer-shape, makers --------------------------------------------------------------------- */
ct_status ct__eq_infer(const ct_kernel_ctx *c);
ct_status ct__eq_grad_infer(const ct_kernel_ctx *c);
ct_status ct__det_infer(const ct_kernel_ctx *c);
ct_status ct__det_grad_infer(const ct_kernel_ctx *c);
ct_status ct__grad_einsum(ct_grad_ctx *g);
ct_status ct__grad_det(ct_grad_ctx *g);

#endif /* CORTEN_OPS_DEFS_MISC_OPS_H */
