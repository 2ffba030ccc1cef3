/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/misc_ops.c: the misc family's op types (ops/defs/misc_ops.h lists them): their table,
 * and the plans of those whose sizes or values come from inputs read at run time (window,
 * mel_weight_matrix, dropout_identity). einsum and det, with their gradients, are in
 * misc_ops_linalg.c.
 *
 *   window             kind "hann" (0.5 - 0.5 cos x), "hamming" (25/46 - 21/46 cos x) or
 *                      "blackman" (0.42 - 0.5 cos x + 0.08 cos 2x) at x = 2 pi i / N, N the size
 *                      (periodic) or the size - 1 (symmetric; a symmetric window of one element
 *                      divides by 0 and is NaN, as ONNX's definition gives); `dtype` float32 or
 *                      float64
 *   mel_weight_matrix  ONNX's MelWeightMatrix: num_mel_bins + 2 edges equally spaced on the mel
 *                      scale (mel(f) = 2595 log10(1 + f / 700)) from lower to upper, each mapped
 *                      to the spectrogram bin floor((dft + 1) f / rate); band i rises from edge i
 *                      to edge i + 1 and falls to edge i + 2 (peak 1). The edges' mels are
 *                      computed in float32 and the rest in double, as ONNX's reference does.
 *   dropout_identity   ONNX's Dropout where the result is known without drawing: Out = X and
 *                      Mask all true when not training (TrainingMode false, or !is_test's
 *                      default) or when the ratio is 0; a training run with another ratio is
 *                      refused (its random bits could not match another runtime's). */
#include <math.h>
#include <string.h>

#include "ops/defs/index.h"
#include "ops/defs/misc_ops.h"

#define OPT CT_SLOT_OPTIONAL
#define INT(name, v) {name, {.type = CT_ATTR_INT, .u.i = (v)}, false}
#define FLOAT(name, v) {name, {.type = CT_ATTR_FLOAT, .u.f = (v)}, false}
#define BOOL(name, v) {name, {.type = CT_ATTR_BOOL, .u.b = (v)}, false}
#define STR(name, v) {name, {.type = CT_ATTR_STRING, .u.s = (v)}, false}

ct_status ct__misc_num_in(const ct_kernel_ctx *c, size_t slot, double *v) {
  const ct_tensor *t = ct_kernel_in(c, slot, 0);
  const char *sn = c->op->def->in[slot].name, *vn = ct_kernel_in_name(c, slot, 0);
  if (c->place.kind != CT_DEVICE_CPU) {
    return ct_kernel_fail(c, CT_ERR_UNSUPPORTED, "input %s variable '%s' is read on the host: run "
                          "the op on the CPU", sn, vn);
  }
  if (t->numel != 1) {
    return ct_kernel_fail(c, CT_ERR_SHAPE, "input %s variable '%s' holds %lld values: give one",
                          sn, vn, (long long)t->numel);
  }
  if (t->dtype == CT_INT64 || t->dtype == CT_INT32) {
    int64_t i;
    ct_status s = ct__ix_scalar(c, slot, &i);
    *v = (double)i;
    return s;
  }
  *v = ct__ix_load(ct__k_in_data(t), t->dtype, 0);
  return CT_OK;
}

/* ---- window ---------------------------------------------------------------------------------- */

static const char *const win_kinds[] = {"hann", "hamming", "blackman"};

static int win_kind(const char *k) {
  for (int i = 0; i < 3; i++) {
    if (strcmp(k, win_kinds[i]) == 0) return i;
  }
  return -1;
}

ct_status ct__win_size(const ct_kernel_ctx *c, int64_t *n) {
  const char *k = c->attr[CT__WIN_KIND].u.s;
  if (win_kind(k) < 0) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT, "attribute 'kind' is \"%s\": use \"hann\", "
                          "\"hamming\" or \"blackman\"", k);
  }
  ct_dtype dt;
  ct_status s = ct__k_attr_dtype(c, CT__WIN_DTYPE, &dt);
  if (s == CT_OK) s = ct__ix_scalar(c, CT__WIN_SIZE_IN, n);
  if (s == CT_OK && *n < 0) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE, "input Size variable '%s' is %lld: give a "
                          "length of 0 or more", ct_kernel_in_name(c, CT__WIN_SIZE_IN, 0),
                          (long long)*n);
  }
  return s;
}

double ct__win_value(const ct_kernel_ctx *c, int64_t i, int64_t size) {
  int64_t n = c->attr[CT__WIN_PERIODIC].u.b ? size : size - 1;
  if (n == 0) return NAN;
  const double pi = 3.14159265358979323846;
  double x = 2 * pi * (double)i / (double)n;
  switch (win_kind(c->attr[CT__WIN_KIND].u.s)) {
    case 0: return 0.5 - 0.5 * cos(x);
    case 1: return 25.0 / 46.0 - (1 - 25.0 / 46.0) * cos(x);
    default: return 0.42 - 0.5 * cos(x) + 0.08 * cos(2 * x);
  }
}

static ct_status win_infer(const ct_kernel_ctx *c) {
  int64_t n;
  ct_status s = ct__win_size(c, &n);
  return s == CT_OK ? ct__k_resize(c, 0, 0, CT_DIMS(n)) : s;
}

/* ---- mel_weight_matrix ----------------------------------------------------------------------- */

ct_status ct__mel_plan_make(const ct_kernel_ctx *c, ct__mel_plan *p) {
  int64_t v[3];
  ct_dtype dt;
  ct_status s = ct__k_attr_dtype(c, CT__MEL_DTYPE, &dt);
  for (size_t k = 0; k < 3 && s == CT_OK; k++) s = ct__ix_scalar(c, k, &v[k]);
  if (s == CT_OK) s = ct__misc_num_in(c, CT__MEL_LOWER, &p->lower);
  if (s == CT_OK) s = ct__misc_num_in(c, CT__MEL_UPPER, &p->upper);
  if (s != CT_OK) return s;
  p->bins = v[0], p->dft = v[1], p->rate = v[2];
  if (p->bins < 0 || p->bins > ((int64_t)1 << 40) || p->dft < 1 || p->dft > ((int64_t)1 << 40) ||
      p->rate < 1) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE, "inputs NumMelBins %lld, DftLength %lld and "
                          "SampleRate %lld: give 0 or more bins, a DFT length and a rate of 1 or "
                          "more", (long long)p->bins, (long long)p->dft, (long long)p->rate);
  }
  p->spec = p->dft / 2 + 1;
  if (p->bins > 0 && p->spec > ((int64_t)1 << 40) / p->bins) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE, "inputs NumMelBins %lld and DftLength %lld ask "
                          "for more than 2^40 weights: give fewer bins or a shorter DFT",
                          (long long)p->bins, (long long)p->dft);
  }
  return CT_OK;
}

/* numpy's floor division of doubles (npy_divmod): the quotient of a - fmod(a, b), floored and
 * rounded, so the bins are those of ONNX's reference. */
static double floor_div(double a, double b) {
  double mod = fmod(a, b), div = (a - mod) / b;
  if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
  if (div == 0) return copysign(0.0, a / b);
  double f = floor(div);
  return div - f > 0.5 ? f + 1 : f;
}

ct_status ct__mel_edges(const ct_kernel_ctx *c, const ct__mel_plan *p, int64_t *edges) {
  float lo = 2595.0f * log10f(1.0f + (float)p->lower / 700.0f);
  float hi = 2595.0f * log10f(1.0f + (float)p->upper / 700.0f);
  float step = (hi - lo) / (float)(p->bins + 2);
  for (int64_t k = 0; k < p->bins + 2; k++) {
    double mel = (double)k * (double)step + (double)lo;
    double hz = 700 * (pow(10, mel / 2595) - 1);
    double bin = floor_div((double)(p->dft + 1) * hz, (double)p->rate);
    /* The last edge only bounds a band from above. */
    int64_t cap = k == p->bins + 1 ? p->spec : p->spec - 1;
    if (!(bin >= 0 && bin <= (double)cap)) {
      return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE, "edge %lld of the mel bands falls on "
                            "spectrogram bin %g, outside [0, %lld]: give LowerEdgeHertz and "
                            "UpperEdgeHertz within [0, SampleRate / 2]", (long long)k, bin,
                            (long long)cap);
    }
    edges[k] = (int64_t)bin;
  }
  return CT_OK;
}

static ct_status mel_infer(const ct_kernel_ctx *c) {
  ct__mel_plan p;
  ct_status s = ct__mel_plan_make(c, &p);
  return s == CT_OK ? ct__k_resize(c, 0, 0, CT_DIMS(p.spec, p.bins)) : s;
}

/* ---- dropout_identity ------------------------------------------------------------------------ */

ct_status ct__di_check(const ct_kernel_ctx *c) {
  double ratio = c->attr[CT__DI_PROB].u.f, training = !c->attr[CT__DI_IS_TEST].u.b;
  ct_status s = CT_OK;
  if (ct_kernel_in_count(c, CT__DI_TRAINING)) s = ct__misc_num_in(c, CT__DI_TRAINING, &training);
  if (s == CT_OK && ct_kernel_in_count(c, CT__DI_RATIO)) {
    s = ct__misc_num_in(c, CT__DI_RATIO, &ratio);
  }
  if (s != CT_OK || training == 0) return s;
  if (!(ratio >= 0 && ratio < 1)) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE, "the dropout ratio is %g: give one in [0, 1)",
                          ratio);
  }
  if (ratio != 0) {
    return ct_kernel_fail(c, CT_ERR_UNSUPPORTED, "training with a dropout ratio of %g draws random "
                          "bits no other runtime draws alike: use op type dropout (Philox), or "
                          "run in inference", ratio);
  }
  return CT_OK;
}

static ct_status di_infer(const ct_kernel_ctx *c) {
  ct_ddim d = ct_kernel_in(c, CT__DI_X, 0)->dims;
  ct_status s = ct__k_resize(c, CT__DI_OUT, 0, d);
  if (s == CT_OK && ct_kernel_out_count(c, CT__DI_MASK)) s = ct__k_resize(c, CT__DI_MASK, 0, d);
  return s;
}

/* ---- The table ------------------------------------------------------------------------------- */

static const ct_slot_def nms_in[] = {{"Boxes", 0}, {"Scores", 0}, {"MaxOutput", OPT},
                                     {"IouThreshold", OPT}, {"ScoreThreshold", OPT}};
static const ct_slot_def nms_out[] = {{"SelectedIndices", 0}};
static const ct_attr_def nms_attrs[] = {INT("center_point_box", 0),
                                        INT("max_output_boxes_per_class", 0),
                                        FLOAT("iou_threshold", 0), FLOAT("score_threshold", 0)};
static const ct_slot_def uq_out[] = {
    {"Out", 0}, {"Indices", OPT}, {"InverseIndices", OPT}, {"Counts", OPT}};
static const ct_attr_def uq_attrs[] = {BOOL("sorted", true), BOOL("flatten", true),
                                       INT("axis", 0)};
static const ct_slot_def eq_in[] = {{"Inputs", CT_SLOT_MANY}};
static const ct_slot_def eq_grad_in[] = {{"Inputs", CT_SLOT_MANY}, {"Out@GRAD", 0}};
static const ct_slot_def eq_grad_out[] = {{"Inputs@GRAD", CT_SLOT_MANY | OPT}};
static const ct_attr_def eq_attrs[] = {{"equation", {.type = CT_ATTR_STRING, .u.s = ""}, true}};
static const ct_slot_def det_grad_in[] = {{"X", 0}, {"Out@GRAD", 0}};
static const ct_slot_def det_grad_out[] = {{"X@GRAD", 0}};
static const ct_slot_def win_in[] = {{"Size", 0}};
static const ct_attr_def win_attrs[] = {STR("kind", "hann"), BOOL("periodic", true),
                                        INT("dtype", CT_FLOAT32)};
static const ct_slot_def mel_in[] = {{"NumMelBins", 0}, {"DftLength", 0}, {"SampleRate", 0},
                                     {"LowerEdgeHertz", 0}, {"UpperEdgeHertz", 0}};
static const ct_attr_def mel_attrs[] = {INT("dtype", CT_FLOAT32)};
static const ct_slot_def di_in[] = {{"X", 0}, {"Ratio", OPT}, {"TrainingMode", OPT}};
static const ct_slot_def di_out[] = {{"Out", 0}, {"Mask", OPT}};
static const ct_attr_def di_attrs[] = {FLOAT("dropout_prob", 0.5), BOOL("is_test", true)};

#define DEF(name, in, out, at, inf, flg, gr)                                                   \
  {.type = name, .inputs = in, .n_inputs = sizeof in / sizeof in[0], .outputs = out,          \
   .n_outputs = sizeof out / sizeof out[0], .attrs = at, .n_attrs = sizeof at / sizeof at[0], \
   .infer_shape = inf, .flags = flg, .grad = gr}

/* non_max_suppression and unique set their outputs' dims in the kernel (they depend on the
 * values); window and mel_weight_matrix read their sizes from inputs (not pure). */
static const ct_op_def defs[] = {
    DEF("non_max_suppression", nms_in, nms_out, nms_attrs, NULL, 0, ct__grad_none),
    DEF("unique", ct__slot_x, uq_out, uq_attrs, NULL, 0, NULL),
    DEF("einsum", eq_in, ct__slot_out, eq_attrs, ct__eq_infer, CT_OP_PURE_INFER, ct__grad_einsum),
    DEF("einsum_grad", eq_grad_in, eq_grad_out, eq_attrs, ct__eq_grad_infer, CT_OP_PURE_INFER,
        NULL),
    {.type = "det", .inputs = ct__slot_x, .n_inputs = 1, .outputs = ct__slot_out, .n_outputs = 1,
     .infer_shape = ct__det_infer, .flags = CT_OP_PURE_INFER, .grad = ct__grad_det},
    {.type = "det_grad", .inputs = det_grad_in, .n_inputs = 2, .outputs = det_grad_out,
     .n_outputs = 1, .infer_shape = ct__det_grad_infer, .flags = CT_OP_PURE_INFER},
    {.type = "window", .inputs = win_in, .n_inputs = 1, .outputs = ct__slot_out, .n_outputs = 1,
     .attrs = win_attrs, .n_attrs = 3, .infer_shape = win_infer, .dtype_attr = "dtype",
     .grad = ct__grad_none},
    {.type = "mel_weight_matrix", .inputs = mel_in, .n_inputs = 5, .outputs = ct__slot_out,
     .n_outputs = 1, .attrs = mel_attrs, .n_attrs = 1, .infer_shape = mel_infer,
     .dtype_attr = "dtype", .grad = ct__grad_none},
    DEF("dropout_identity", di_in, di_out, di_attrs, di_infer, CT_OP_PURE_INFER, ct__grad_assign),
};

const ct__def_table ct__misc_defs = CT__TABLE(defs);

/* What the types compute (ct_op_type_doc, `corten ops`). */
static const ct__op_doc docs[] = {
    {"non_max_suppression",
     "ONNX's NonMaxSuppression: per batch and class, the boxes of Boxes [B, N, 4] whose score "
     "in Scores [B, C, N] (Boxes' dtype) passes score_threshold (strictly greater; only when "
     "the attribute is set or ScoreThreshold is given) are taken by descending score (ties: "
     "the lower box index first), each kept unless its intersection over union with a box "
     "already kept exceeds iou_threshold, at most max_output_boxes_per_class of them. "
     "center_point_box 0 (the default) reads a box as two corners [y1, x1, y2, x2] (either "
     "order), 1 as [x_center, y_center, width, height]. The optional one-element inputs "
     "MaxOutput, IouThreshold and ScoreThreshold, read on the host when the op runs (an empty "
     "one counts as absent), replace the attributes; max_output_boxes_per_class defaults to 0, "
     "which selects nothing. SelectedIndices is int64 [k, 3] rows (batch, class, box) in that "
     "order, its k known only after the run; a NaN score is refused. No gradient."},
    {"unique",
     "The distinct values of X flattened (flatten true, the default), or with flatten false "
     "the distinct slices along `axis` (Out keeps X's other dims): Out holds them in ascending "
     "order (sorted true, the default; slices compared element by element) or in the order of "
     "their first occurrence. The optional int64 outputs: Indices, the position in X of each "
     "one's first occurrence; InverseIndices, for each element or slice of X, its position in "
     "Out; Counts, how often each occurs. Floats compare by value, every NaN equal to every "
     "other and after all numbers; the output dims are known only after the run. No gradient."},
    {"einsum",
     "Einstein summation (numpy's einsum) of the tensors of Inputs (1 to 16, one dtype) under "
     "`equation` (required): each operand's term gives one letter (a-z, A-Z) per dim, with at "
     "most one \"...\" for the dims no letter names (broadcast across the operands). After "
     "\"->\" come the output's labels; without it (implicit mode) Out takes the ellipsis's dims, "
     "then the letters that occur once, in ASCII order. A label repeated in a term reads that "
     "term's diagonal, labels missing from the output are summed, and every occurrence of a "
     "letter must have the same extent. Sums run in double."},
    {"det",
     "The determinant of each square matrix of X [..., n, n], giving Out [...]: Gaussian "
     "elimination with partial pivoting in double, then rounded to X's dtype. An empty matrix "
     "(n 0) has determinant 1, and a singular one 0 when a pivot is exactly 0. The gradient is "
     "Out@GRAD times X's cofactor matrix, nonzero and exact for a singular X too."},
    {"window",
     "A window of Size elements (Size: one int32 or int64 element, read on the host when the op "
     "runs): `kind` \"hann\" (the default, `0.5 - 0.5 cos x`), \"hamming\" (`25/46 - 21/46 cos "
     "x`) or \"blackman\" (`0.42 - 0.5 cos x + 0.08 cos 2x`) at `x = 2 pi i / N`, N = Size when "
     "periodic (the default) and Size - 1 otherwise (so a symmetric window of one element is "
     "NaN, as ONNX's definition gives). Out [Size] has dtype `dtype` (a ct_dtype value, "
     "float32 by default, or float64). No gradient."},
    {"mel_weight_matrix",
     "ONNX's MelWeightMatrix: Out [DftLength / 2 + 1, NumMelBins] maps a spectrogram's bins to "
     "mel bands. NumMelBins + 2 edges lie equally spaced on the mel scale (`mel(f) = 2595 "
     "log10(1 + f / 700)`) from LowerEdgeHertz to UpperEdgeHertz, each at spectrogram bin "
     "`floor((DftLength + 1) f / SampleRate)`, and band i rises linearly from edge i to a peak "
     "of 1 at edge i + 1 and falls to edge i + 2 (the edges' mels in float32, the rest in "
     "double, as ONNX's reference computes them). The five inputs are one-element tensors read "
     "on the host when the op runs (the first three integers; an edge whose bin falls outside "
     "the spectrogram is refused); Out has dtype `dtype` (a ct_dtype value, float32 by "
     "default). No gradient."},
    {"dropout_identity",
     "ONNX's Dropout where the result is known without drawing: `Out = X` and Mask (optional, "
     "bool, X's dims) all true. Training is TrainingMode's value when wired (one element, read "
     "on the host when the op runs), else `!is_test` (is_test true by default); the ratio is "
     "Ratio's value when wired, else dropout_prob. In inference, or with a ratio of 0, the op "
     "runs; training with another ratio in [0, 1) is refused (CT_ERR_UNSUPPORTED: use op type "
     "dropout, Philox), as its random bits could not match another runtime's. The gradient "
     "passes Out@GRAD through unchanged."},
};

const ct__doc_table ct__misc_ops_docs = CT__TABLE(docs);
