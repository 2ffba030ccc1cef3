/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cuda/optimizer.c: the CUDA kernels of sgd, momentum and adam (ops/defs/optimizer.c) for
 * float32 parameters: their C side (output allocation, launch, messages); the device code is
 * ops/cuda/optimizer.cu.
 *
 * The checks are the shared infer-shape's. LearningRate, Beta1Pow and Beta2Pow (one element,
 * float32 or float64) are device memory at the op's place and are read there by the kernels, so
 * a step makes no copy to the host and never waits for the stream. An in-place update (ParamOut
 * naming Param) reaches the kernel with a fresh ParamOut block (ops/prep.c), as on the CPU. */
#include "ops/defs.h"

#include "ops/cuda/cuda_kernels.h"
#include "ops/cuda/launch.h"

/* Input `slot`'s data, and whether it is float64 (the one-element inputs). */
static const void *scalar_in(const ct_kernel_ctx *c, size_t slot, int *is64) {
  const ct_tensor *t = ct_kernel_in(c, slot, 0);
  *is64 = t->dtype == CT_FLOAT64;
  return ct__k_in_data(t);
}

/* Input `slot`'s data, float32 (Param, Grad and the state). */
static const float *in_f32(const ct_kernel_ctx *c, size_t slot) {
  return ct__k_in_data(ct_kernel_in(c, slot, 0));
}

static ct_status sgd_cu(const ct_kernel_ctx *c) {
  int64_t n = ct_kernel_in(c, CT__OPT_PARAM, 0)->numel;
  float *po = ct__k_out_data(c, CT__OPT_PARAM_OUT, 0, c->dtype);
  if (CT__UNLIKELY(po == NULL)) return ct_last_status();
  if (n == 0) return CT_OK;
  int lr64;
  const void *lr = scalar_in(c, CT__SGD_LR, &lr64);
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_sgd(po, in_f32(c, CT__OPT_PARAM), in_f32(c, CT__OPT_GRAD), lr, lr64, n,
                             l.stream);
  return ct__cu_leave(c, &l, e, "sgd kernel launch");
}

static ct_status momentum_cu(const ct_kernel_ctx *c) {
  int64_t n = ct_kernel_in(c, CT__OPT_PARAM, 0)->numel;
  float *po = ct__k_out_data(c, CT__OPT_PARAM_OUT, 0, c->dtype);
  if (CT__UNLIKELY(po == NULL)) return ct_last_status();
  float *vo = ct__k_out_data(c, CT__MOM_VELOCITY_OUT, 0, c->dtype);
  if (CT__UNLIKELY(vo == NULL)) return ct_last_status();
  if (n == 0) return CT_OK;
  int lr64;
  const void *lr = scalar_in(c, CT__MOM_LR, &lr64);
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  cudaError_t e = ct__cu_momentum(po, vo, in_f32(c, CT__OPT_PARAM), in_f32(c, CT__OPT_GRAD),
                                  in_f32(c, CT__MOM_VELOCITY), lr, lr64,
                                  (float)c->attr[CT__MOM_MU].u.f,
                                  c->attr[CT__MOM_USE_NESTEROV].u.b, n, l.stream);
  return ct__cu_leave(c, &l, e, "momentum kernel launch");
}

/* Allocates the output of `slot` in the dtype of input `in` (the pows keep their own dtype). */
static void *pow_out(const ct_kernel_ctx *c, size_t slot, size_t in) {
  return ct__k_out_data(c, slot, 0, ct_kernel_in(c, in, 0)->dtype);
}

static ct_status adam_cu(const ct_kernel_ctx *c) {
  int64_t n = ct_kernel_in(c, CT__OPT_PARAM, 0)->numel;
  ct__cu_adam a = {
      .p = in_f32(c, CT__OPT_PARAM),
      .g = in_f32(c, CT__OPT_GRAD),
      .m1 = in_f32(c, CT__ADAM_M1),
      .m2 = in_f32(c, CT__ADAM_M2),
      .beta1 = (float)c->attr[CT__ADAM_BETA1].u.f,
      .beta2 = (float)c->attr[CT__ADAM_BETA2].u.f,
      .eps = (float)c->attr[CT__ADAM_EPSILON].u.f,
  };
  a.lr = scalar_in(c, CT__ADAM_LR, &a.lr64);
  a.b1p = scalar_in(c, CT__ADAM_B1POW, &a.b1p64);
  a.b2p = scalar_in(c, CT__ADAM_B2POW, &a.b2p64);
  if ((a.po = ct__k_out_data(c, CT__OPT_PARAM_OUT, 0, c->dtype)) == NULL ||
      (a.m1o = ct__k_out_data(c, CT__ADAM_M1_OUT, 0, c->dtype)) == NULL ||
      (a.m2o = ct__k_out_data(c, CT__ADAM_M2_OUT, 0, c->dtype)) == NULL) {
    return ct_last_status();
  }
  void *b1o = pow_out(c, CT__ADAM_B1POW_OUT, CT__ADAM_B1POW);
  void *b2o = b1o == NULL ? NULL : pow_out(c, CT__ADAM_B2POW_OUT, CT__ADAM_B2POW);
  if (CT__UNLIKELY(b2o == NULL)) return ct_last_status();
  ct__cu_launch l;
  if (ct__cu_enter(c, &l) != CT_OK) return ct_last_status();
  /* The pows are updated after the step has read them, in stream order. */
  cudaError_t e = ct__cu_adam_step(&a, n, l.stream);
  if (e == cudaSuccess) {
    e = ct__cu_scale_scalar(b1o, a.b1p, a.b1p64, c->attr[CT__ADAM_BETA1].u.f, l.stream);
  }
  if (e == cudaSuccess) {
    e = ct__cu_scale_scalar(b2o, a.b2p, a.b2p64, c->attr[CT__ADAM_BETA2].u.f, l.stream);
  }
  return ct__cu_leave(c, &l, e, "adam kernel launch");
}

/* ---- The kernel table ------------------------------------------------------------------------ */

static const ct__kernel_set kernels[] = {
    {"sgd", CT__KERNELS([CT_FLOAT32] = sgd_cu)},
    {"momentum", CT__KERNELS([CT_FLOAT32] = momentum_cu)},
    {"adam", CT__KERNELS([CT_FLOAT32] = adam_cu)},
};

const ct__kernel_table ct__cuda_optimizer = CT__TABLE(kernels);
