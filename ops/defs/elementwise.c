/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/elementwise.c: the elementwise op types: elementwise_{add,sub,mul,div} with numpy
 * broadcasting, the unary activations (relu, sigmoid, tanh, exp, log), scale, cast and assign;
 * their shapes, and the broadcast plan every backend walks.
 *
 * A binary op plans its broadcast once per run: dims aligned at the end, a stride of 0 where an
 * input is broadcast, then neighbouring dims merged wherever both inputs stay contiguous, so
 * same-shape inputs become one flat loop and a row vector against a matrix becomes two. */
#include "ops/defs.h"

const ct_slot_def ct__slot_x[1] = {{"X", 0}};
const ct_slot_def ct__slot_xy[2] = {{"X", 0}, {"Y", 0}};
const ct_slot_def ct__slot_xs[1] = {{"X", CT_SLOT_MANY}};
const ct_slot_def ct__slot_out[1] = {{"Out", 0}};

void ct__plan_bcast(ct_ddim x, ct_ddim y, ct_ddim out, ct__bcast_plan *p) {
  int64_t d[CT_MAX_RANK], sx[CT_MAX_RANK], sy[CT_MAX_RANK];
  int64_t stx = 1, sty = 1;
  int r = out.rank;
  for (int k = r - 1; k >= 0; k--) {
    int ix = x.rank - r + k, iy = y.rank - r + k;
    int64_t dx = ix >= 0 ? x.d[ix] : 1, dy = iy >= 0 ? y.d[iy] : 1;
    d[k] = out.d[k];
    sx[k] = dx == 1 ? 0 : stx;
    sy[k] = dy == 1 ? 0 : sty;
    stx *= dx;
    sty *= dy;
  }
  /* Merge dim k into the dim before it when both strides continue across the boundary. */
  int n = 0;
  for (int k = 0; k < r; k++) {
    if (d[k] == 1) continue;
    if (n > 0 && p->sx[n - 1] == sx[k] * d[k] && p->sy[n - 1] == sy[k] * d[k]) {
      p->d[n - 1] *= d[k];
      p->sx[n - 1] = sx[k];
      p->sy[n - 1] = sy[k];
      continue;
    }
    p->d[n] = d[k];
    p->sx[n] = sx[k];
    p->sy[n] = sy[k];
    n++;
  }
  if (n == 0) {
    p->d[0] = 1;
    p->sx[0] = p->sy[0] = 0;
    n = 1;
  }
  p->rank = n;
}

/* Checks the dtypes too, before Out is touched, so a failing op leaves Out as it was. */
static ct_status binary_infer(const ct_kernel_ctx *c) {
  const ct_tensor *x = ct_kernel_in(c, CT__IN_X, 0), *y = ct_kernel_in(c, CT__IN_Y, 0);
  ct_ddim out;
  if (CT__UNLIKELY(y->dtype != x->dtype)) return ct__k_check_dtype(c, CT__IN_Y, 0, x->dtype);
  if (CT__LIKELY(ct__ddim_eq(&x->dims, &y->dims))) {
    ct_tensor *o = ct_kernel_out(c, CT__OUT, 0);
    if (CT__LIKELY(ct__ddim_eq(&o->dims, &x->dims))) return CT_OK;
    return ct__k_resize(c, CT__OUT, 0, x->dims);
  }
  ct_status s = ct__k_broadcast(c, x->dims, y->dims, &out);
  return s == CT_OK ? ct__k_resize(c, CT__OUT, 0, out) : s;
}

ct_status ct__same_dims_infer(const ct_kernel_ctx *c) {
  return ct__k_resize(c, CT__OUT, 0, ct_kernel_in(c, CT__IN_X, 0)->dims);
}

static const ct_attr_def scale_attrs[] = {
    {"scale", {.type = CT_ATTR_FLOAT, .u.f = 1.0}, false},
    {"bias", {.type = CT_ATTR_FLOAT, .u.f = 0.0}, false},
    {"bias_after_scale", {.type = CT_ATTR_BOOL, .u.b = true}, false},
};

static const ct_attr_def cast_attrs[] = {{"dtype", {.type = CT_ATTR_INT, .u.i = CT_FLOAT32}, true}};


/* X[, Y] -> Out without attributes. */
#define SIMPLE(name, binary, infer, grad_fn)                                                   \
  {.type = (name), .inputs = (binary) ? ct__slot_xy : ct__slot_x, .n_inputs = (binary) ? 2 : 1, \
   .outputs = ct__slot_out, .n_outputs = 1,                                                     \
   .flags = CT_OP_PURE_INFER, .infer_shape = (infer), .grad = (grad_fn)}

static const ct_op_def defs[] = {
    SIMPLE("elementwise_add", true, binary_infer, ct__grad_binary),
    SIMPLE("elementwise_sub", true, binary_infer, ct__grad_binary),
    SIMPLE("elementwise_mul", true, binary_infer, ct__grad_binary),
    SIMPLE("elementwise_div", true, binary_infer, ct__grad_binary),
    SIMPLE("relu", false, ct__same_dims_infer, ct__grad_unary),
    SIMPLE("sigmoid", false, ct__same_dims_infer, ct__grad_unary),
    SIMPLE("tanh", false, ct__same_dims_infer, ct__grad_unary),
    SIMPLE("exp", false, ct__same_dims_infer, ct__grad_unary),
    SIMPLE("log", false, ct__same_dims_infer, ct__grad_unary),
    {.type = "scale", .inputs = ct__slot_x, .n_inputs = 1, .outputs = ct__slot_out,
     .n_outputs = 1, .attrs = scale_attrs, .n_attrs = 3,
     .flags = CT_OP_PURE_INFER, .infer_shape = ct__same_dims_infer,
     .grad = ct__grad_scale},
    {.type = "cast", .inputs = ct__slot_x, .n_inputs = 1, .outputs = ct__slot_out,
     .n_outputs = 1, .attrs = cast_attrs, .n_attrs = 1,
     .flags = CT_OP_PURE_INFER, .infer_shape = ct__same_dims_infer,
     .grad = ct__grad_unary},
    {.type = "assign", .inputs = ct__slot_x, .n_inputs = 1, .outputs = ct__slot_out,
     .n_outputs = 1,
     .flags = CT_OP_PURE_INFER, .infer_shape = ct__same_dims_infer, .grad = ct__grad_assign},
};

const ct__def_table ct__elementwise_defs = CT__TABLE(defs);

/* What the types compute (ct_op_type_doc, `corten ops`). */
#define DOC_BCAST                                                                             \
  " X and Y have one dtype (no promotion) and broadcast NumPy-style: dims aligned at the end, " \
  "each pair equal or one of them 1, either input the broadcast one; Out takes the broadcast " \
  "dims and X's dtype. There is no `axis` attribute: PaddlePaddle's default alignment (axis " \
  "-1) is the only one, so give Y trailing 1s to match X's leading or middle dims."
#define DOC_WRAP " Integer results wrap on overflow (computed unsigned)."
#define DOC_VMATH                                                                             \
  " Out has X's dims and dtype. The CPU uses corten's own vectorised functions "              \
  "(docs/design/vmath.md), which may differ from the C library's in the last bit."

static const ct__op_doc docs[] = {
    {"elementwise_add", "`Out = X + Y` elementwise." DOC_BCAST DOC_WRAP},
    {"elementwise_sub", "`Out = X - Y` elementwise." DOC_BCAST DOC_WRAP},
    {"elementwise_mul", "`Out = X * Y` elementwise." DOC_BCAST DOC_WRAP},
    {"elementwise_div", "`Out = X / Y` elementwise." DOC_BCAST " Integer division truncates "
                        "toward zero (`-7 / 2 = -3`) and the smallest value divided by -1 wraps "
                        "to itself; a Y holding 0 anywhere is refused (CT_ERR_INVALID_ARGUMENT) "
                        "before Out is written. Float division by zero gives IEEE inf or NaN."},
    {"sigmoid", "`Out = 1 / (1 + exp(-X))` elementwise." DOC_VMATH},
    {"tanh", "`Out = tanh(X)` elementwise; float64 on the CPU is the C library's tanh, float32 "
             "corten's own (computed in float64 and rounded once). Out has X's dims and dtype."},
    {"exp", "`Out = e^X` elementwise: overflow gives +inf, -inf gives 0." DOC_VMATH},
    {"log", "`Out = ln(X)` elementwise (natural logarithm): 0 gives -inf, a negative X NaN."
            DOC_VMATH},
    {"scale", "`Out = scale * X + bias`, or with bias_after_scale false `Out = scale * (X + "
              "bias)` (computed as `scale * X + scale * bias`). "
              "Out has X's dims and dtype; float32 X computes in float32. Integer X is scaled in "
              "float64, then truncated toward zero and saturated into X's dtype (NaN gives 0)."},
    {"cast", "`Out = X` converted to dtype `dtype` (required: a ct_dtype value, CT_BOOL .. "
             "CT_UINT64, not PaddlePaddle's VarType code); Out has X's dims. The same dtype "
             "copies; a float to an integer truncates toward zero and saturates (NaN gives 0); "
             "an integer to a narrower integer saturates, it does not wrap; to bool is `X != 0` "
             "(NaN is true); to float16 or bfloat16 rounds once to nearest even."},
    {"assign", "`Out = X`: a copy of X's elements (any dtype), not a view of X; Out has X's "
               "dims and dtype."},
    {"relu", "`Out = X < 0 ? 0 : X` elementwise: a NaN stays NaN and -0 stays -0 (as ONNX "
             "runtimes and PyTorch give). Out has X's dims and dtype."},
};

#undef DOC_BCAST
#undef DOC_WRAP
#undef DOC_VMATH

const ct__doc_table ct__elementwise_docs = CT__TABLE(docs);
