/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/resample.c: the resample family's op types (ops/defs/resample.h): resize, grid_sample
 * and roi_align with their plans, and the table of the family (the grad types' shapes are in
 * resample_grad.c).
 *
 * resize follows ONNX's Resize (opsets 10 to 17) as ONNX's reference implementation computes
 * it: per dim an output index x maps to a coordinate of X by coordinate_transformation_mode
 *   half_pixel          (x + 0.5) / scale - 0.5
 *   pytorch_half_pixel  the same, or -0.5 when the resized length is 1
 *   align_corners       x (in - 1) / (length - 1), or 0 when the length is 1
 *   asymmetric          x / scale
 *   tf_half_pixel_for_nn (x + 0.5) / scale
 *   tf_crop_and_resize  roi_start (in - 1) + x (roi_end - roi_start) (in - 1) / (length - 1),
 *                       or (roi_start + roi_end) (in - 1) / 2 when the length is 1; a coordinate
 *                       outside [0, in - 1] makes the element extrapolation_value
 * where length is X's extent times the scale (whole when Sizes gave the extents), then takes
 * the neighbours of that coordinate (a whole coordinate counts as the right end of the interval
 * to its left, ratio 1): mode nearest one of two by nearest_mode; linear two; cubic four with
 * Keys' coefficients of cubic_coeff_a (exclude_outside: those outside X get weight 0 and the
 * rest are scaled to sum 1). Indices outside X take the edge element. The dims are resized one
 * after the other from the last, each an interpolation of the results of the next. */
#include <math.h>
#include <string.h>

#include "ops/defs/index.h"
#include "ops/defs/resample.h"
#include "ops/half.h"

/* The index of string attribute a's value in names, or -1 after reporting it. */
static int pick(const ct_kernel_ctx *c, size_t a, const char *const *names, int n,
                const char *hint) {
  const char *v = c->attr[a].u.s;
  for (int i = 0; i < n; i++) {
    if (strcmp(v, names[i]) == 0) return i;
  }
  ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT, "attribute '%s' is \"%s\": use %s",
                 c->op->def->attr[a].name, v, hint);
  return -1;
}

/* The values of float input `slot` (float32, float64 or float16, on the host, rank 0 or 1, at
 * most cap) into v; *n 0 when the slot is unwired. */
static ct_status host_floats(const ct_kernel_ctx *c, size_t slot, double *v, size_t *n,
                             size_t cap) {
  *n = 0;
  if (ct_kernel_in_count(c, slot) == 0) return CT_OK;
  const ct_tensor *t = ct_kernel_in(c, slot, 0);
  const char *name = c->op->def->in[slot].name;
  if (t->dtype != CT_FLOAT32 && t->dtype != CT_FLOAT64 && t->dtype != CT_FLOAT16) {
    return ct_kernel_fail(c, CT_ERR_TYPE_MISMATCH,
                          "input %s variable '%s' is %s: give float32 or float64 values", name,
                          ct_kernel_in_name(c, slot, 0), ct_dtype_name(t->dtype));
  }
  ct_status s = ct__ix_check_host_list(c, slot, cap);
  if (s != CT_OK) return s;
  const void *d = ct__k_in_data(t);
  for (int64_t i = 0; i < t->numel; i++) v[i] = ct__ix_load(d, t->dtype, i);
  *n = (size_t)t->numel;
  return CT_OK;
}

/* The output extents and scales from Scales or Sizes (whichever holds values). */
static ct_status rsz_extents(const ct_kernel_ctx *c, ct__rsz_plan *p) {
  double sc[CT_MAX_RANK];
  int64_t sz[CT_MAX_RANK];
  size_t ns, nz;
  int r = p->in.rank;
  ct_status s = host_floats(c, CT__RSZ_SCALES, sc, &ns, CT_MAX_RANK);
  if (s == CT_OK) s = ct__ix_ints(c, CT__RSZ_SIZES, CT__RSZ_SIZES_ATTR, sz, &nz, CT_MAX_RANK);
  if (s != CT_OK) return s;
  const ct_attr_value *sa = &c->attr[CT__RSZ_SCALES_ATTR];
  if (ns == 0 && nz == 0 && sa->u.floats.n > 0) {
    if (sa->u.floats.n > CT_MAX_RANK) {
      return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE, "attribute 'scales' has %zu values: give "
                            "one per dim of X", sa->u.floats.n);
    }
    ns = sa->u.floats.n;
    memcpy(sc, sa->u.floats.v, ns * sizeof *sc);
  }
  if ((ns == 0) == (nz == 0)) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "%s: give the scales or the sizes of the output, one of them",
                          ns ? "both scales and sizes hold values" : "neither scales nor sizes "
                          "holds values");
  }
  size_t n = ns ? ns : nz;
  if (n != (size_t)r) {
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "%s holds %zu values but input X variable '%s' has rank %d: give one "
                          "per dim", ns ? "scales" : "sizes", n, ct_kernel_in_name(c, CT__RSZ_X, 0),
                          r);
  }
  p->out.rank = r;
  for (int k = 0; k < r; k++) {
    int64_t in = p->in.d[k];
    if (ns) {
      double o = in * sc[k];
      if (!(sc[k] > 0) || !(o < 9.2e18)) {
        return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                              "scales entry %d is %g: give a positive scale whose output "
                              "extent fits", k, sc[k]);
      }
      p->out.d[k] = (int64_t)o;
      p->scale[k] = sc[k];
      p->length[k] = o;
    } else {
      if (sz[k] < 0 || (in == 0 && sz[k] > 0)) {
        return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                              "sizes entry %d is %lld for a dim of extent %lld: give an extent "
                              "of 0 or more (0 for an empty dim)",
                              k, (long long)sz[k], (long long)in);
      }
      p->out.d[k] = sz[k];
      p->scale[k] = in > 0 ? (double)sz[k] / (double)in : 1;
      p->length[k] = (double)sz[k];
    }
    if (c->attr[CT__RSZ_UPSAMPLE_ONLY].u.b && p->scale[k] < 1) {
      return ct_kernel_fail(c, CT_ERR_UNSUPPORTED,
                            "scale %g along dim %d is below 1: nearest resizing of ONNX's "
                            "Upsample and Resize-10 is defined here for upsampling only; use "
                            "Resize-11 or later with a coordinate_transformation_mode",
                            p->scale[k], k);
    }
  }
  if (p->ctm == CT__RSZ_C_TF_CROP_AND_RESIZE && ns) {
    return ct_kernel_fail(c, CT_ERR_UNSUPPORTED,
                          "tf_crop_and_resize with scales: ONNX's spec and runtimes differ on "
                          "the output extent (with or without the roi's share); give sizes");
  }
  return CT_OK;
}

ct_status ct__rsz_plan_make(const ct_kernel_ctx *c, ct__rsz_plan *p) {
  static const char *const modes[] = {"nearest", "linear", "cubic"};
  static const char *const ctms[] = {"half_pixel",           "pytorch_half_pixel",
                                     "align_corners",        "asymmetric",
                                     "tf_half_pixel_for_nn", "tf_crop_and_resize"};
  static const char *const nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  p->mode = pick(c, CT__RSZ_MODE, modes, 3, "\"nearest\", \"linear\" or \"cubic\"");
  if (p->mode < 0) return ct_last_status();
  p->ctm = pick(c, CT__RSZ_CTM, ctms, 6,
                "\"half_pixel\", \"pytorch_half_pixel\", \"align_corners\", \"asymmetric\", "
                "\"tf_half_pixel_for_nn\" or \"tf_crop_and_resize\"");
  if (p->ctm < 0) return ct_last_status();
  p->nearest = pick(c, CT__RSZ_NEAREST, nms, 4,
                    "\"round_prefer_floor\", \"round_prefer_ceil\", \"floor\" or \"ceil\"");
  if (p->nearest < 0) return ct_last_status();
  p->a = c->attr[CT__RSZ_CUBIC_A].u.f;
  p->exclude = c->attr[CT__RSZ_EXCLUDE].u.b;
  p->extrap = c->attr[CT__RSZ_EXTRAP].u.f;
  p->in = ct_kernel_in(c, CT__RSZ_X, 0)->dims;
  ct_status s = rsz_extents(c, p);
  if (s != CT_OK) return s;
  int r = p->in.rank;
  for (int k = 0; k < r; k++) {
    p->roi0[k] = 0;
    p->roi1[k] = 1;
  }
  if (p->ctm == CT__RSZ_C_TF_CROP_AND_RESIZE) {
    double roi[2 * CT_MAX_RANK];
    size_t n;
    s = host_floats(c, CT__RSZ_ROI, roi, &n, 2 * CT_MAX_RANK);
    if (s != CT_OK) return s;
    if (n != 2 * (size_t)r) {
      return ct_kernel_fail(c, CT_ERR_SHAPE,
                            "tf_crop_and_resize needs input Roi with 2 x %d values (starts, then "
                            "ends), got %zu: wire one",
                            r, n);
    }
    for (int k = 0; k < r; k++) {
      p->roi0[k] = roi[k];
      p->roi1[k] = roi[r + k];
    }
  }
  return CT_OK;
}

/* Keys' cubic convolution weights of the four neighbours at distances 1 + t, t, 1 - t, 2 - t. */
static void cubic_weights(double t, double a, double w[4]) {
  double u = t + 1, v = 1 - t, z = 2 - t;
  w[0] = ((a * u - 5 * a) * u + 8 * a) * u - 4 * a;
  w[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
  w[2] = ((a + 2) * v - (a + 3)) * v * v + 1;
  w[3] = ((a * z - 5 * a) * z + 8 * a) * z - 4 * a;
}

int ct__rsz_taps(const ct__rsz_plan *p, int k, int64_t o, int64_t idx[4], double w[4]) {
  int64_t in = p->in.d[k];
  double x = (double)o, sc = p->scale[k], len = p->length[k], lim = (double)(in - 1);
  switch (p->ctm) {
    case CT__RSZ_C_HALF_PIXEL: x = (x + 0.5) / sc - 0.5; break;
    case CT__RSZ_C_PYTORCH_HALF_PIXEL: x = len == 1 ? -0.5 : (x + 0.5) / sc - 0.5; break;
    case CT__RSZ_C_ALIGN_CORNERS: x = len == 1 ? 0 : x * lim / (len - 1); break;
    case CT__RSZ_C_ASYMMETRIC: x = x / sc; break;
    case CT__RSZ_C_TF_HALF_PIXEL_FOR_NN: x = (x + 0.5) / sc; break;
    default: {
      double r0 = p->roi0[k], r1 = p->roi1[k];
      x = len == 1 ? (r1 - r0) * lim / 2 : x * (r1 - r0) * lim / (len - 1);
      x += r0 * lim;
      if (!(x >= 0 && x <= lim)) return 0; /* NaN rois too */
    }
  }
  double f = floor(x), t = x - f;
  int64_t b = (int64_t)f;
  if (t == 0) { /* a whole coordinate: the right end of the interval to its left */
    b -= 1;
    t = 1;
  }
  int n;
  if (p->mode == CT__RSZ_M_NEAREST) {
    bool right;
    switch (p->nearest) {
      case CT__RSZ_N_PREFER_FLOOR: right = t > 0.5; break;
      case CT__RSZ_N_PREFER_CEIL: right = t >= 0.5; break;
      case CT__RSZ_N_FLOOR: right = t == 1; break;
      default: right = true;
    }
    idx[0] = b + (right ? 1 : 0);
    w[0] = 1;
    n = 1;
  } else if (p->mode == CT__RSZ_M_LINEAR) {
    idx[0] = b;
    idx[1] = b + 1;
    w[0] = 1 - t;
    w[1] = t;
    n = 2;
  } else {
    for (int j = 0; j < 4; j++) idx[j] = b - 1 + j;
    cubic_weights(t, p->a, w);
    n = 4;
    if (p->exclude) {
      double sum = 0;
      for (int j = 0; j < 4; j++) {
        if (idx[j] < 0 || idx[j] >= in) w[j] = 0;
        sum += w[j];
      }
      for (int j = 0; j < 4; j++) w[j] /= sum;
    }
  }
  int m = 0;
  for (int j = 0; j < n; j++) {
    if (w[j] == 0 && !(j == n - 1 && m == 0)) continue;
    idx[m] = idx[j] < 0 ? 0 : idx[j] >= in ? in - 1 : idx[j];
    w[m++] = w[j];
  }
  return m;
}

static ct_status rsz_infer(const ct_kernel_ctx *c) {
  ct__rsz_plan p;
  ct_status s = ct__rsz_plan_make(c, &p);
  return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, p.out) : s;
}

/* ---- grid_sample ----------------------------------------------------------------------------- */

ct_status ct__gs_plan_make(const ct_kernel_ctx *c, ct__gs_plan *p) {
  static const char *const modes[] = {"bilinear", "nearest", "bicubic"};
  static const char *const pads[] = {"zeros", "border", "reflection"};
  p->mode = pick(c, CT__GS_MODE, modes, 3, "\"bilinear\", \"nearest\" or \"bicubic\"");
  if (p->mode < 0) return ct_last_status();
  p->padding = pick(c, CT__GS_PADDING, pads, 3, "\"zeros\", \"border\" or \"reflection\"");
  if (p->padding < 0) return ct_last_status();
  p->align = c->attr[CT__GS_ALIGN].u.b;
  ct_ddim x = ct_kernel_in(c, CT__GS_X, 0)->dims, g = ct_kernel_in(c, CT__GS_GRID, 0)->dims;
  ct_status s = ct__k_check_dtype(c, CT__GS_GRID, 0, ct_kernel_in(c, CT__GS_X, 0)->dtype);
  if (s != CT_OK) return s;
  if (x.rank != 4 || g.rank != 4 || g.d[0] != x.d[0] || g.d[3] != 2) {
    char sx[CT__DDIM_STR_CAP], sg[CT__DDIM_STR_CAP];
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "input X variable '%s' is %s and input Grid variable '%s' %s: give X "
                          "[N, C, H, W] and Grid [N, Ho, Wo, 2]",
                          ct_kernel_in_name(c, CT__GS_X, 0), ct_ddim_str(x, sx, sizeof sx),
                          ct_kernel_in_name(c, CT__GS_GRID, 0), ct_ddim_str(g, sg, sizeof sg));
  }
  p->n = x.d[0];
  p->c = x.d[1];
  p->h = x.d[2];
  p->w = x.d[3];
  p->ho = g.d[1];
  p->wo = g.d[2];
  if ((p->h == 0 || p->w == 0) && p->ho * p->wo > 0 && p->c > 0) {
    return ct_kernel_fail(c, CT_ERR_SHAPE, "input X variable '%s' has no pixels to sample",
                          ct_kernel_in_name(c, CT__GS_X, 0));
  }
  return CT_OK;
}

static ct_status gs_infer(const ct_kernel_ctx *c) {
  ct__gs_plan p;
  ct_status s = ct__gs_plan_make(c, &p);
  return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, CT_DIMS(p.n, p.c, p.ho, p.wo)) : s;
}

/* ---- roi_align ------------------------------------------------------------------------------- */

ct_status ct__ra_plan_make(const ct_kernel_ctx *c, ct__ra_plan *p) {
  static const char *const modes[] = {"avg", "max"};
  int m = pick(c, CT__RA_MODE, modes, 2, "\"avg\" or \"max\"");
  if (m < 0) return ct_last_status();
  p->max = m == 1;
  ct_ddim x = ct_kernel_in(c, CT__RA_X, 0)->dims, r = ct_kernel_in(c, CT__RA_ROIS, 0)->dims,
          b = ct_kernel_in(c, CT__RA_BATCH, 0)->dims;
  ct_status s = ct__k_check_dtype(c, CT__RA_ROIS, 0, ct_kernel_in(c, CT__RA_X, 0)->dtype);
  if (s == CT_OK) s = ct__ix_check_index_dtype(c, CT__RA_BATCH);
  if (s != CT_OK) return s;
  if (x.rank != 4 || r.rank != 2 || r.d[1] != 4 || b.rank != 1 || b.d[0] != r.d[0]) {
    char sx[CT__DDIM_STR_CAP], sr[CT__DDIM_STR_CAP], sb[CT__DDIM_STR_CAP];
    return ct_kernel_fail(c, CT_ERR_SHAPE,
                          "inputs X %s, ROIs %s and BatchIndices %s: give X [N, C, H, W], ROIs "
                          "[R, 4] and BatchIndices [R]",
                          ct_ddim_str(x, sx, sizeof sx), ct_ddim_str(r, sr, sizeof sr),
                          ct_ddim_str(b, sb, sizeof sb));
  }
  p->n = x.d[0];
  p->c = x.d[1];
  p->h = x.d[2];
  p->w = x.d[3];
  p->r = r.d[0];
  p->ph = c->attr[CT__RA_PH].u.i;
  p->pw = c->attr[CT__RA_PW].u.i;
  p->sampling = c->attr[CT__RA_SAMPLING].u.i;
  p->scale = c->attr[CT__RA_SCALE].u.f;
  p->aligned = c->attr[CT__RA_ALIGNED].u.b;
  if (!isfinite(p->scale)) { /* NaN samples would be dropped: zeros with CT_OK */
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "attribute 'spatial_scale' is %g: give a finite scale", p->scale);
  }
  if ((p->h == 0 || p->w == 0) && p->r > 0 && p->c > 0) {
    return ct_kernel_fail(c, CT_ERR_SHAPE, "input X variable '%s' has no pixels to pool",
                          ct_kernel_in_name(c, CT__RA_X, 0));
  }
  if (p->ph < 1 || p->pw < 1 || p->sampling < 0 || p->ph > (1 << 20) || p->pw > (1 << 20)) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT,
                          "pooled_height %lld, pooled_width %lld, sampling_ratio %lld: give "
                          "extents of 1 or more and a ratio of 0 (adaptive) or more",
                          (long long)p->ph, (long long)p->pw, (long long)p->sampling);
  }
  return CT_OK;
}

ct_status ct__ra_check_batch(const ct_kernel_ctx *c, const ct__ra_plan *p) {
  const ct_tensor *t = ct_kernel_in(c, CT__RA_BATCH, 0);
  const void *d = ct__k_in_data(t);
  for (int64_t i = 0; i < p->r; i++) {
    int64_t v = ct__ix_index(d, t->dtype, i);
    if (v < 0 || v >= p->n) {
      return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE,
                            "input BatchIndices variable '%s' holds %lld at position %lld: give "
                            "a batch index in [0, %lld)",
                            ct_kernel_in_name(c, CT__RA_BATCH, 0), (long long)v, (long long)i,
                            (long long)p->n);
    }
  }
  return CT_OK;
}

static ct_status ra_infer(const ct_kernel_ctx *c) {
  ct__ra_plan p;
  ct_status s = ct__ra_plan_make(c, &p);
  return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, CT_DIMS(p.r, p.c, p.ph, p.pw)) : s;
}

/* ---- The table ------------------------------------------------------------------------------- */

#define OPT CT_SLOT_OPTIONAL
#define STR(name, v) {name, {.type = CT_ATTR_STRING, .u.s = v}, false}
#define INT(name, v) {name, {.type = CT_ATTR_INT, .u.i = v}, false}
#define FLT(name, v) {name, {.type = CT_ATTR_FLOAT, .u.f = v}, false}
#define BOOL(name, v) {name, {.type = CT_ATTR_BOOL, .u.b = v}, false}

static const ct_slot_def rsz_in[] = {{"X", 0}, {"Roi", OPT}, {"Scales", OPT}, {"Sizes", OPT}};
const ct_slot_def ct__rsz_grad_in[5] = {
    {"X", 0}, {"Roi", OPT}, {"Scales", OPT}, {"Sizes", OPT}, {"Out@GRAD", 0}};
const ct_slot_def ct__rsz_grad_out[1] = {{"X@GRAD", 0}};
static const ct_attr_def rsz_attrs[] = {
    STR("mode", "nearest"),
    STR("coordinate_transformation_mode", "half_pixel"),
    STR("nearest_mode", "round_prefer_floor"),
    FLT("cubic_coeff_a", -0.75),
    BOOL("exclude_outside", false),
    FLT("extrapolation_value", 0),
    {"scales", {.type = CT_ATTR_FLOATS, .u.floats = {NULL, 0}}, false},
    {"sizes", {.type = CT_ATTR_INTS, .u.ints = {NULL, 0}}, false},
    BOOL("upsample_only", false),
};
static const ct_slot_def gs_in[] = {{"X", 0}, {"Grid", 0}};
const ct_slot_def ct__gs_grad_in[3] = {{"X", 0}, {"Grid", 0}, {"Out@GRAD", 0}};
const ct_slot_def ct__gs_grad_out[2] = {{"X@GRAD", OPT}, {"Grid@GRAD", OPT}};
static const ct_attr_def gs_attrs[] = {STR("mode", "bilinear"), STR("padding_mode", "zeros"),
                                       BOOL("align_corners", false)};
static const ct_slot_def ra_in[] = {{"X", 0}, {"ROIs", 0}, {"BatchIndices", 0}};
static const ct_attr_def ra_attrs[] = {
    STR("mode", "avg"),      INT("pooled_height", 1),  INT("pooled_width", 1),
    INT("sampling_ratio", 0), FLT("spatial_scale", 1), BOOL("aligned", true),
};

#define DEF(name, in, n_in, out, n_out, at, n_at, inf, flg, gr)                                 \
  {.type = name, .inputs = in, .n_inputs = n_in, .outputs = out, .n_outputs = n_out,           \
   .attrs = at, .n_attrs = n_at, .infer_shape = inf, .flags = flg, .grad = gr}

static const ct_op_def defs[] = {
    DEF("resize", rsz_in, 4, ct__slot_out, 1, rsz_attrs, 9, rsz_infer, 0, ct__ix_grad_generic),
    DEF("resize_grad", ct__rsz_grad_in, 5, ct__rsz_grad_out, 1, rsz_attrs, 9,
        ct__rsz_grad_infer, 0, NULL),
    DEF("grid_sample", gs_in, 2, ct__slot_out, 1, gs_attrs, 3, gs_infer, CT_OP_PURE_INFER,
        ct__gs_grad_maker),
    DEF("grid_sample_grad", ct__gs_grad_in, 3, ct__gs_grad_out, 2, gs_attrs, 3,
        ct__gs_grad_infer, CT_OP_PURE_INFER, NULL),
    DEF("roi_align", ra_in, 3, ct__slot_out, 1, ra_attrs, 6, ra_infer, CT_OP_PURE_INFER, NULL),
};

const ct__def_table ct__resample_defs = CT__TABLE(defs);

/* What the types compute (ct_op_type_doc, `corten ops`). */
static const ct__op_doc docs[] = {
    {"resize",
     "ONNX's Resize (opsets 10 to 17) and Upsample as ONNX's reference computes them: X of any "
     "rank resampled along every dim to Out, X's dtype. The output extents come from Scales "
     "(float, `floor(extent scale)`) or Sizes (int64 or int32), one value per dim, exactly one "
     "of them holding values; both are read on the host when the op runs (an empty tensor counts "
     "as absent, and attributes `scales` / `sizes` stand in when neither input holds values). "
     "Output index x maps to a coordinate of X by coordinate_transformation_mode (\"half_pixel\", "
     "the default, `(x + 0.5) / scale - 0.5`; also \"pytorch_half_pixel\", \"align_corners\", "
     "\"asymmetric\", \"tf_half_pixel_for_nn\", and \"tf_crop_and_resize\", which reads Roi [2 "
     "rank] and puts extrapolation_value outside it); `mode` \"nearest\" (the default, rounding "
     "by nearest_mode, default \"round_prefer_floor\"), \"linear\" or \"cubic\" (Keys' "
     "coefficients with cubic_coeff_a, default -0.75; exclude_outside gives taps outside X "
     "weight 0 and rescales the rest) then interpolates, "
     "indices outside X taking the edge element. The dims are resized one after the other, "
     "from the last."},
    {"grid_sample",
     "ONNX's GridSample (opset 16): Out [N, C, Ho, Wo] samples X [N, C, H, W] at the points of "
     "Grid [N, Ho, Wo, 2] (X's dtype), each an (x, y) pair normalised to [-1, 1]: x maps to "
     "the pixel coordinate `(x + 1) (W - 1) / 2` with align_corners, else `((x + 1) W - 1) / 2` "
     "(the default), y likewise with H. `mode` \"bilinear\" (the default) takes the 4 pixels "
     "around it, \"nearest\" "
     "rounds half to even, \"bicubic\" takes 16 with Keys' coefficients (a = -0.75); "
     "padding_mode \"zeros\" (the default) reads pixels outside the image as 0, \"border\" "
     "clamps to the edge, \"reflection\" mirrors at the bounds. A NaN grid value samples NaN. "
     "Gradients reach both X and Grid."},
    {"roi_align",
     "ONNX's RoiAlign as onnxruntime computes it: Out [R, C, pooled_height, pooled_width] "
     "(defaults 1) pools, for each roi r of ROIs [R, 4] ((x1, y1, x2, y2) in X's pixels, X's "
     "dtype), image BatchIndices[r] (int64 or int32 [R], each in [0, N)) of X [N, C, H, W]. The "
     "roi is "
     "scaled by spatial_scale (default 1), shifted by half a pixel when `aligned` (the "
     "default, ONNX's half_pixel), and cut into bins; each bin averages (`mode` \"avg\", the "
     "default) or takes the largest weighted corner value of (\"max\", as onnxruntime does) "
     "sampling_ratio^2 bilinear samples, or ceil(bin extent) along each dim when sampling_ratio "
     "is 0 (the default). A roi holding NaN pools NaN. No gradient."},
};

const ct__doc_table ct__resample_docs = CT__TABLE(docs);
