/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/signal.c: the op types dft and stft (ops/defs/signal.h says what they compute):
 * their table, plans and checks. Both read their integer scalars (DftLength; FrameStep and
 * FrameLength) on the host when they run, so Y's dims follow those values. */
#include "ops/defs/signal.h"

/* Input slot's value when wired: an int32 or int64 scalar (one element) of at least `lo`, into
 * *v (left as it is when the slot is unwired). */
static ct_status int_scalar(const ct_kernel_ctx *c, size_t slot, int64_t lo, int64_t *v) {
  if (ct_kernel_in_count(c, slot) == 0) return CT_OK;
  const ct_tensor *t = ct_kernel_in(c, slot, 0);
  const char *name = c->op->def->in[slot].name, *var = ct_kernel_in_name(c, slot, 0);
  if ((t->dtype != CT_INT32 && t->dtype != CT_INT64) || t->numel != 1) {
    return ct_kernel_fail(c, CT_ERR_TYPE_MISMATCH, "input %s variable '%s' is %s of %lld "
                          "elements: give one int32 or int64 value", name, var,
                          ct_dtype_name(t->dtype), (long long)t->numel);
  }
  if (c->place.kind != CT_DEVICE_CPU) {
    return ct_kernel_fail(c, CT_ERR_UNSUPPORTED, "input %s is read on the host: run the op on "
                          "the CPU", name);
  }
  const void *d = ct__k_in_data(t);
  const int64_t x = t->dtype == CT_INT32 ? *(const int32_t *)d : *(const int64_t *)d;
  if (x < lo || x > ((int64_t)1 << 31)) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE, "input %s variable '%s' holds %lld: give a "
                          "value in [%lld, 2^31]", name, var, (long long)x, (long long)lo);
  }
  *v = x;
  return CT_OK;
}

/* X (or Signal) of float32 or float64 whose last dim is 1 (real) or 2 (complex). */
static ct_status signal_input(const ct_kernel_ctx *c, size_t slot, int min_rank) {
  const ct_tensor *x = ct_kernel_in(c, slot, 0);
  const char *name = c->op->def->in[slot].name, *var = ct_kernel_in_name(c, slot, 0);
  char d[CT__DDIM_STR_CAP];
  if (x->dtype != CT_FLOAT32 && x->dtype != CT_FLOAT64) {
    return ct_kernel_fail(c, CT_ERR_TYPE_MISMATCH, "input %s variable '%s' is %s: give float32 "
                          "or float64", name, var, ct_dtype_name(x->dtype));
  }
  const int r = x->dims.rank;
  if (r < min_rank || (min_rank == 3 && r != 3) || (x->dims.d[r - 1] != 1 &&
                                                   x->dims.d[r - 1] != 2)) {
    return ct_kernel_fail(c, CT_ERR_SHAPE, "input %s variable '%s' has dims %s: give %s with a "
                          "last dim of 1 (real) or 2 (real, imaginary)", name, var,
                          ct_ddim_str(x->dims, d, sizeof d),
                          min_rank == 3 ? "[batch, length, 1 or 2]" : "rank 2 or more");
  }
  return CT_OK;
}

ct_status ct__dft_plan_make(const ct_kernel_ctx *c, ct__dft_plan *p) {
  ct_status s = signal_input(c, CT__DFT_X, 2);
  if (s != CT_OK) return s;
  const ct_ddim x = ct_kernel_in(c, CT__DFT_X, 0)->dims;
  int64_t axis = c->attr[CT__DFT_AXIS].u.i;
  if (axis < 0) axis += x.rank;
  if (axis < 0 || axis >= x.rank - 1) {
    return ct_kernel_fail(c, CT_ERR_OUT_OF_RANGE, "attribute 'axis' is %lld for X of rank %d: "
                          "give a dim before the last (the real and imaginary parts)",
                          (long long)c->attr[CT__DFT_AXIS].u.i, x.rank);
  }
  *p = (ct__dft_plan){.outer = 1, .inner = 1, .n = x.d[axis], .comps = x.d[x.rank - 1],
                      .inverse = c->attr[CT__DFT_INVERSE].u.i != 0,
                      .onesided = c->attr[CT__DFT_ONESIDED].u.i != 0};
  for (int k = 0; k < axis; k++) p->outer *= x.d[k];
  for (int k = (int)axis + 1; k < x.rank - 1; k++) p->inner *= x.d[k];
  p->real_out = p->inverse && p->onesided;
  p->len = p->real_out ? 2 * (p->n - 1) : p->n;
  if ((s = int_scalar(c, CT__DFT_LENGTH, 1, &p->len)) != CT_OK) return s;
  if (p->len < 1 || p->len > ((int64_t)1 << 31)) {
    return ct_kernel_fail(c, CT_ERR_SHAPE, "input X variable '%s' gives a transform of length "
                          "%lld: give X at least %s samples on axis %lld, or DftLength",
                          ct_kernel_in_name(c, CT__DFT_X, 0), (long long)p->len,
                          p->real_out ? "2" : "1", (long long)axis);
  }
  p->bins = p->onesided && !p->inverse ? p->len / 2 + 1 : p->len;
  p->out = x;
  p->out.d[axis] = p->bins;
  p->out.d[x.rank - 1] = p->real_out ? 1 : 2;
  return CT_OK;
}

ct_status ct__stft_plan_make(const ct_kernel_ctx *c, ct__stft_plan *p) {
  ct_status s = signal_input(c, CT__STFT_SIGNAL, 3);
  if (s != CT_OK) return s;
  const ct_tensor *x = ct_kernel_in(c, CT__STFT_SIGNAL, 0);
  *p = (ct__stft_plan){.batch = x->dims.d[0], .length = x->dims.d[1], .comps = x->dims.d[2]};
  if (ct_kernel_in_count(c, CT__STFT_STEP) == 0) {
    return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT, "input FrameStep is not wired: give the "
                          "hop between frames");
  }
  if ((s = int_scalar(c, CT__STFT_STEP, 1, &p->step)) != CT_OK) return s;
  p->win = p->len = p->length;
  if (ct_kernel_in_count(c, CT__STFT_WINDOW) > 0) {
    const ct_tensor *w = ct_kernel_in(c, CT__STFT_WINDOW, 0);
    char d[CT__DDIM_STR_CAP];
    if (w->dtype != x->dtype || w->dims.rank != 1 || w->numel < 1) {
      return ct_kernel_fail(c, CT_ERR_SHAPE, "input Window variable '%s' is %s of dims %s: give "
                            "a vector of Signal's dtype (%s)",
                            ct_kernel_in_name(c, CT__STFT_WINDOW, 0), ct_dtype_name(w->dtype),
                            ct_ddim_str(w->dims, d, sizeof d), ct_dtype_name(x->dtype));
    }
    p->win = p->len = w->numel;
  }
  int64_t fl = 0;
  if ((s = int_scalar(c, CT__STFT_LENGTH, 1, &fl)) != CT_OK) return s;
  if (fl > 0) {
    p->len = fl;
    if (ct_kernel_in_count(c, CT__STFT_WINDOW) == 0) p->win = fl;
  }
  if (p->len < 1) {
    return ct_kernel_fail(c, CT_ERR_SHAPE, "input Signal variable '%s' is empty and no "
                          "FrameLength or Window gives the frames' length: give one",
                          ct_kernel_in_name(c, CT__STFT_SIGNAL, 0));
  }
  /* floor((T - L) / step) + 1, none when the signal is shorter than a frame */
  p->frames = p->length < p->len ? 0 : (p->length - p->len) / p->step + 1;
  p->bins = c->attr[CT__STFT_ONESIDED].u.i != 0 ? p->len / 2 + 1 : p->len;
  p->out = CT_DIMS(p->batch, p->frames, p->bins, 2);
  return CT_OK;
}

static ct_status dft_infer(const ct_kernel_ctx *c) {
  ct__dft_plan p;
  ct_status s = ct__dft_plan_make(c, &p);
  return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, p.out) : s;
}

static ct_status stft_infer(const ct_kernel_ctx *c) {
  ct__stft_plan p;
  ct_status s = ct__stft_plan_make(c, &p);
  return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, p.out) : s;
}

static const ct_slot_def dft_in[] = {{"X", 0}, {"DftLength", CT_SLOT_OPTIONAL}};
static const ct_slot_def stft_in[] = {{"Signal", 0},
                                      {"FrameStep", CT_SLOT_OPTIONAL},
                                      {"Window", CT_SLOT_OPTIONAL},
                                      {"FrameLength", CT_SLOT_OPTIONAL}};
static const ct_slot_def y_out[] = {{"Y", 0}};
static const ct_attr_def dft_attrs[] = {
    {"axis", {.type = CT_ATTR_INT, .u.i = 1}, false},
    {"inverse", {.type = CT_ATTR_INT, .u.i = 0}, false},
    {"onesided", {.type = CT_ATTR_INT, .u.i = 0}, false},
};
static const ct_attr_def stft_attrs[] = {{"onesided", {.type = CT_ATTR_INT, .u.i = 1}, false}};

/* Not pure: Y's dims follow the values of the integer inputs. No gradient. */
static const ct_op_def defs[] = {
    {.type = "dft", .inputs = dft_in, .n_inputs = 2, .outputs = y_out, .n_outputs = 1,
     .attrs = dft_attrs, .n_attrs = 3, .infer_shape = dft_infer},
    {.type = "stft", .inputs = stft_in, .n_inputs = 4, .outputs = y_out, .n_outputs = 1,
     .attrs = stft_attrs, .n_attrs = 1, .infer_shape = stft_infer},
};

const ct__def_table ct__signal_defs = CT__TABLE(defs);

static const ct__op_doc docs[] = {
    {"dft",
     "ONNX's DFT (opset 17): X [..., N, 1] (real) or [..., N, 2] (complex), float32 or "
     "float64, and the optional DftLength (an int32 or int64 scalar L, read on the host; N by "
     "default: the signal cut or padded with zeros to L) give Y, X's dims with `axis`'s extent "
     "(default 1; never the last) the bins and the last 2: `Y[k] = sum_{n<L} x[n] e^(-2 pi i k "
     "n / L)`, the first L / 2 + 1 bins when `onesided` is 1; `inverse` 1 takes e^(+2 pi i k n "
     "/ L) and divides by L; both give a real signal of L samples (Y's last dim 1, L 2 (N - 1) "
     "by default) from a half spectrum (numpy's irfft). Sums in float64, twiddles with exact "
     "quarter turns, one rounding to the dtype. No gradient."},
    {"stft",
     "ONNX's STFT (opset 17): Signal [B, T, 1 or 2] (float32 or float64), FrameStep (an int "
     "scalar, the hop), the optional Window [W] (Signal's dtype) and FrameLength (an int "
     "scalar L: W by default, else T) give Y [B, F, L / 2 + 1 (`onesided` 1, the default) or "
     "L, 2] with F = 1 + (T - L) / FrameStep (0 when T < L): frame f is the W samples from f "
     "FrameStep on (zeros past the end) times the window (ones without one), transformed as "
     "dft does at length L. No gradient."},
};

const ct__doc_table ct__signal_docs = CT__TABLE(docs);
