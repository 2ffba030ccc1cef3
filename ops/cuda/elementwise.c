/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/elementwise.c: the CUDA kernels of elementwise_{add,sub,mul,div} with numpy
 * broadcasting, the float32 activations (relu, sigmoid, tanh, exp, log), scale, cast and assign:
 * their C side (checks, output allocation, launch, messages); the device code is
 * ops/cuda/elementwise.cu.
 *
 *   elementwise_{add,sub,mul,div}  float32, float16, bfloat16 (the half types computed in float)
 *   relu, sigmoid, tanh, exp, log, scale, clip  float32
 *   cast      from and to float32, float16, bfloat16
 *   cast_grad Out@GRAD back to X's dtype, between the same three
 *   assign    every dtype (a device-to-device copy)
 * A binary op walks the broadcast plan of the CPU kernel (ct__plan_bcast), so both places accept
 * the same shapes. */
#include "ops/defs.h"
#include "ops/defs/math.h"

#include "ops/cuda/cuda_kernels.h"
#include "ops/cuda/launch.h"

/* ---- elementwise_{add,sub,mul,div} ---------------------------------------------------------- */

static ct_status cu_binary(const ct_kernel_ctx *c, int op) {
  const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0), *yt = ct_kernel_in(c, CT__IN_Y, 0);
  ct_tensor *ot = ct_kernel_out(c, CT__OUT, 0);
  void *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  int64_t n = ot->numel;
  if (n == 0) return CT_OK;
  ct__cu_plan plan, *pp = NULL;
  if (xt->numel != n || yt->numel != n) {
    ct__bcast_plan bp;
    ct__plan_bcast(xt->dims, yt->dims, ot->dims, &bp);
    plan.rank = bp.rank;
    for (int k = 0; k < bp.rank; k++) {
      plan.d[k] = bp.d[k];
      plan.sx[k] = bp.sx[k];
      plan.sy[k] = bp.sy[k];
    }
    pp = &plan;
  }
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_binary(op, c->dtype, o, ct__k_in_data(xt), ct__k_in_data(yt), n, pp,
                                l.stream);
  return ct__cu_leave(c, &l, e, "elementwise kernel launch");
}

static ct_status add_cu(const ct_kernel_ctx *c) { return cu_binary(c, CT__CU_ADD); }
static ct_status sub_cu(const ct_kernel_ctx *c) { return cu_binary(c, CT__CU_SUB); }
static ct_status mul_cu(const ct_kernel_ctx *c) { return cu_binary(c, CT__CU_MUL); }
static ct_status div_cu(const ct_kernel_ctx *c) { return cu_binary(c, CT__CU_DIV); }

/* ---- Activations and scale (float32) --------------------------------------------------------- */

static ct_status cu_unary(const ct_kernel_ctx *c, int op) {
  const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0);
  float *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  if (xt->numel == 0) return CT_OK;
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_unary(op, o, ct__k_in_data(xt), xt->numel, l.stream);
  return ct__cu_leave(c, &l, e, "activation kernel launch");
}

static ct_status relu_cu(const ct_kernel_ctx *c) { return cu_unary(c, CT__CU_RELU); }
static ct_status sigmoid_cu(const ct_kernel_ctx *c) { return cu_unary(c, CT__CU_SIGMOID); }
static ct_status tanh_cu(const ct_kernel_ctx *c) { return cu_unary(c, CT__CU_TANH); }
static ct_status exp_cu(const ct_kernel_ctx *c) { return cu_unary(c, CT__CU_EXP); }
static ct_status log_cu(const ct_kernel_ctx *c) { return cu_unary(c, CT__CU_LOG); }

/* clip: X float32 between the bounds, from the Min and Max inputs (float32 on the device: their
 * first element, read by the kernel) or else the attributes, compared in double as on the CPU. */
static ct_status clip_cu(const ct_kernel_ctx *c) {
  const ct_tensor *xt = ct_kernel_in(c, CT__CLIP_X, 0);
  const float *dev[2] = {NULL, NULL};
  for (size_t k = 0; k < 2; k++) {
    size_t slot = k == 0 ? CT__CLIP_MIN : CT__CLIP_MAX;
    if (ct_kernel_in_count(c, slot) == 0) continue;
    const ct_tensor *b = ct_kernel_in(c, slot, 0);
    if (b->dtype != CT_FLOAT32 || b->numel < 1) {
      return ct_kernel_fail(c, CT_ERR_UNSUPPORTED,
                            "input %s variable '%s' is %s with %lld elements: on CUDA, clip "
                            "takes float32 bounds of one element; run it on the CPU",
                            c->op->def->in[slot].name, ct_kernel_in_name(c, slot, 0),
                            ct_dtype_name(b->dtype), (long long)b->numel);
    }
    dev[k] = ct__k_in_data(b);
  }
  float *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  if (xt->numel == 0) return CT_OK;
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_clip(o, ct__k_in_data(xt), xt->numel, c->attr[CT__CLIP_ATTR_MIN].u.f,
                              c->attr[CT__CLIP_ATTR_MAX].u.f, dev[0], dev[1], l.stream);
  return ct__cu_leave(c, &l, e, "clip kernel launch");
}

/* scale: Out = scale x X + bias, or scale x (X + bias) without bias_after_scale; computed in
 * float like the CPU kernel. */
static ct_status scale_cu(const ct_kernel_ctx *c) {
  const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0);
  float *o = ct__k_out_data(c, CT__OUT, 0, c->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  float sc = (float)c->attr[CT__SCALE_SCALE].u.f, bi = (float)c->attr[CT__SCALE_BIAS].u.f;
  if (!c->attr[CT__SCALE_BIAS_AFTER].u.b) bi *= sc;
  if (xt->numel == 0) return CT_OK;
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_scale(o, ct__k_in_data(xt), xt->numel, sc, bi, l.stream);
  return ct__cu_leave(c, &l, e, "scale kernel launch");
}

/* ---- cast, assign ---------------------------------------------------------------------------- */

static bool float_type(int64_t t) {
  return t == CT_FLOAT32 || t == CT_FLOAT16 || t == CT_BFLOAT16;
}

/* Output 0 = input `in` converted to dt: cast (X to attribute dtype) and cast_grad (Out@GRAD
 * back to X's dtype, the kernel's). Refused before the output is touched when either side is not
 * a float type the GPU converts. */
static ct_status cast_into(const ct_kernel_ctx *c, size_t in, ct_dtype dt) {
  const ct_tensor *xt = ct_kernel_in(c, in, 0);
  if (!float_type(dt) || !float_type(xt->dtype)) {
    return ct_kernel_fail(c, CT_ERR_UNSUPPORTED,
                          "%s of input %s variable '%s' from %s to %s: on CUDA, %s converts "
                          "between float32, float16 and bfloat16 only; run it on the CPU",
                          c->op->def->type, c->op->def->in[in].name, ct_kernel_in_name(c, in, 0),
                          ct_dtype_name(xt->dtype), ct_dtype_name(dt), c->op->def->type);
  }
  void *o = ct__k_out_data(c, CT__OUT, 0, dt); /* Out, or cast_grad's X@GRAD: both output 0 */
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  const void *x = ct__k_in_data(xt);
  if (xt->dtype == dt) return ct__cu_copy(c, o, x, ct__tensor_bytes(xt, dt));
  if (xt->numel == 0) return CT_OK;
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_cast(o, dt, x, xt->dtype, xt->numel, l.stream);
  return ct__cu_leave(c, &l, e, "cast kernel launch");
}

static ct_status cast_cu(const ct_kernel_ctx *c) {
  ct_dtype dt;
  ct_status st = ct__k_attr_dtype(c, CT__CAST_DTYPE, &dt);
  return st == CT_OK ? cast_into(c, CT__IN_X, dt) : st;
}

static ct_status cast_grad_cu(const ct_kernel_ctx *c) {
  return cast_into(c, CT__G_UNARY_DOUT, c->dtype);
}

static ct_status assign_cu(const ct_kernel_ctx *c) {
  const ct_tensor *xt = ct_kernel_in(c, CT__IN_X, 0);
  void *o = ct__k_out_data(c, CT__OUT, 0, xt->dtype);
  if (CT__UNLIKELY(o == NULL)) return ct_last_status();
  return ct__cu_copy(c, o, ct__k_in_data(xt), ct__tensor_bytes(xt, xt->dtype));
}

/* ---- The kernel table ------------------------------------------------------------------------ */

#define HALFS(fn) CT__KERNELS([CT_FLOAT32] = fn, [CT_FLOAT16] = fn, [CT_BFLOAT16] = fn)
#define F32(fn) CT__KERNELS([CT_FLOAT32] = fn)

static const ct__kernel_set kernels[] = {
    {"elementwise_add", HALFS(add_cu)},
    {"elementwise_sub", HALFS(sub_cu)},
    {"elementwise_mul", HALFS(mul_cu)},
    {"elementwise_div", HALFS(div_cu)},
    {"relu", F32(relu_cu)},
    {"clip", F32(clip_cu)},
    {"sigmoid", F32(sigmoid_cu)},
    {"tanh", F32(tanh_cu)},
    {"exp", F32(exp_cu)},
    {"log", F32(log_cu)},
    {"scale", F32(scale_cu)},
    {"cast", HALFS(cast_cu)},
    {"assign", CT__KERNELS([0] = assign_cu)},
    {"cast_grad", HALFS(cast_grad_cu)},
};

const ct__kernel_table ct__cuda_elementwise = CT__TABLE(kernels);
