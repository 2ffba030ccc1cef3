/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/quant.c: the CPU kernels of the quant family (ops/defs/quant.h) and its table:
 * quantize_linear (X float32, float16, float64 or int32; Y uint8 or int8) and dequantize_linear
 * (X int8, uint8 or int32; Y float32), with the arithmetic ops/defs/quant.c describes. Every
 * element is computed alone, so the pieces the thread pool runs cannot change a bit. */
#include <math.h>

#include "ops/cpu/cpu_kernels.h"
#include "ops/cpu/parallel.h"
#include "ops/defs/quant.h"
#include "ops/half.h"

/* One run's walk: element i of X takes scale[(i / inner) % ch] and zero[...] (NULL: 0). */
typedef struct q_job {
  const void *x, *zero;
  const float *scale;
  void *y;
  ct_dtype xt, q;
  int64_t ch, inner;
} q_job;

static int32_t zero_at(const void *z, ct_dtype q, int64_t k) {
  if (z == NULL) return 0;
  switch (q) {
    case CT_INT8: return ((const int8_t *)z)[k];
    case CT_UINT8: return ((const uint8_t *)z)[k];
    default: return ((const int32_t *)z)[k];
  }
}

/* round_half_even(x / s), the division in float32 for float32 and float16 X and in float64 for
 * float64 and int32 X (numpy's promotion of X against a float32 scale, which the reference
 * divides under). rintf and rint round half to even under the default rounding mode. */
static double rounded_quotient(const void *x, ct_dtype xt, int64_t i, float s) {
  switch (xt) {
    case CT_FLOAT32: return rintf(((const float *)x)[i] / s);
    case CT_FLOAT16: return rintf(ct__half_to_float(((const uint16_t *)x)[i]) / s);
    case CT_FLOAT64: return rint(((const double *)x)[i] / (double)s);
    default: return rint((double)((const int32_t *)x)[i] / (double)s);
  }
}

/* r + zero point saturated to [lo, hi]; NaN gives lo (see ops/defs/quant.c). The sum is exact:
 * r is a whole number and a double holds a float's whole numbers and the zero point exactly
 * (or is far past the range either way). */
static int32_t saturate(double v, int32_t lo, int32_t hi) {
  if (!(v >= lo)) return lo;
  if (v > hi) return hi;
  return (int32_t)v;
}

static void quantize_range(void *ctx, int64_t begin, int64_t end) {
  const q_job *j = ctx;
  int32_t lo = j->q == CT_INT8 ? -128 : 0, hi = j->q == CT_INT8 ? 127 : 255;
  for (int64_t i = begin; i < end; i++) {
    int64_t k = (i / j->inner) % j->ch;
    double r = rounded_quotient(j->x, j->xt, i, j->scale[k]);
    int32_t v = saturate(r + zero_at(j->zero, j->q, k), lo, hi);
    if (j->q == CT_INT8) ((int8_t *)j->y)[i] = (int8_t)v;
    else ((uint8_t *)j->y)[i] = (uint8_t)v;
  }
}

static void dequantize_range(void *ctx, int64_t begin, int64_t end) {
  const q_job *j = ctx;
  for (int64_t i = begin; i < end; i++) {
    int64_t k = (i / j->inner) % j->ch;
    float x = (float)zero_at(j->x, j->q, i);
    if (j->zero != NULL) x -= (float)zero_at(j->zero, j->q, k);
    ((float *)j->y)[i] = x * j->scale[k];
  }
}

/* The run's plan and its walk over X, Scale and ZeroPoint (the output not yet taken). */
static ct_status job_open(const ct_kernel_ctx *c, bool quantize, ct__q_plan *p, q_job *j) {
  ct_status s = ct__q_plan_make(c, quantize, p);
  if (s != CT_OK) return s;
  const ct_tensor *x = ct_kernel_in(c, CT__Q_X, 0);
  *j = (q_job){.x = ct__k_in_data(x), .xt = x->dtype, .q = p->q, .ch = p->ch,
               .inner = p->inner, .scale = ct__k_in_data(ct_kernel_in(c, CT__Q_SCALE, 0))};
  if (p->zero) j->zero = ct__k_in_data(ct_kernel_in(c, CT__Q_ZERO, 0));
  return CT_OK;
}

static ct_status quantize_k(const ct_kernel_ctx *c) {
  ct__q_plan p;
  q_job j;
  ct_status s = job_open(c, true, &p, &j);
  if (s != CT_OK) return s;
  if ((j.y = ct__k_out_data(c, CT__Q_Y, 0, p.q)) == NULL) return ct_last_status();
  ct__parallel_for(ct_kernel_in(c, CT__Q_X, 0)->numel, CT__GRAIN_MEM, quantize_range, &j);
  return CT_OK;
}

static ct_status dequantize_k(const ct_kernel_ctx *c) {
  ct__q_plan p;
  q_job j;
  ct_status s = job_open(c, false, &p, &j);
  if (s != CT_OK) return s;
  if (p.zero) {
    const ct_tensor *z = ct_kernel_in(c, CT__Q_ZERO, 0);
    for (int64_t k = 0; p.q == CT_INT32 && k < z->numel; k++) {
      int32_t v = zero_at(j.zero, p.q, k);
      if (v != 0) {
        return ct_kernel_fail(c, CT_ERR_INVALID_ARGUMENT, "input ZeroPoint variable '%s' holds "
                              "%d at %lld but an int32 X is dequantized with a zero point of 0: "
                              "give zeros, or leave ZeroPoint unwired",
                              ct_kernel_in_name(c, CT__Q_ZERO, 0), (int)v, (long long)k);
      }
    }
  }
  if ((j.y = ct__k_out_data(c, CT__Q_Y, 0, CT_FLOAT32)) == NULL) return ct_last_status();
  ct__parallel_for(ct_kernel_in(c, CT__Q_X, 0)->numel, CT__GRAIN_MEM, dequantize_range, &j);
  return CT_OK;
}

static const ct__kernel_set sets[] = {
    {"quantize_linear", CT__KERNELS([CT_FLOAT32] = quantize_k, [CT_FLOAT16] = quantize_k,
                                    [CT_FLOAT64] = quantize_k, [CT_INT32] = quantize_k)},
    {"dequantize_linear", CT__KERNELS([CT_INT8] = dequantize_k, [CT_UINT8] = dequantize_k,
                                      [CT_INT32] = dequantize_k)},
};

const ct__kernel_table ct__cpu_quant = CT__TABLE(sets);
