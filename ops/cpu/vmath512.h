/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/vmath512.h: vmath.h's float32 exp, sigmoid and tanh on the 16 lanes of an AVX-512
 * register, for kernels with an AVX-512 path of their own (the recurrent layers' cells, the
 * softmax row; docs/design/vmath.md).
 *
 * The same operations in the same order on the same constants (vmath.h's CT__EXPF_*,
 * CT__TANHF_*), so the same bits, with two steps done by one instruction each: the clamp of
 * x < -104 by a max (vmaxps returns its second operand when either is NaN: x's NaN passes, as
 * the select lets it), and 2^k applied by vscalefps, p 2^k rounded once. vmath.h applies it as
 * (p 2^(k>>1)) 2^(k - (k>>1)): the first product is exact (p is about 1 and k >= -150 after the
 * clamp, so it stays normal), the second rounds once, to the same value; a NaN p stays that NaN
 * either way (vscalefps returns its first operand's NaN, and 2^k from the integer bits is never
 * NaN). tests/test_vmath.c compares each with vmath.h's over a sample of all 2^32 inputs and
 * every special value; a sweep of all 2^32 found them equal bit for bit (2026-11-30). Only with
 * CT__T16_X86 (ops/cpu/t16.h); a caller checks ct__gemm_avx512() before it runs them. */
#ifndef CORTEN_OPS_CPU_VMATH512_H
#define CORTEN_OPS_CPU_VMATH512_H

#include "ops/cpu/t16.h"
#include "ops/cpu/vmath.h"

#ifdef CT__T16_X86

#define CT__V512 static inline __attribute__((always_inline, target("avx512f")))

CT__V512 __m512 ct__v512_set(float v) { return _mm512_set1_ps(v); }

/* The lanes of the last n elements of an array taken 16 at a time: all 16, or the first n (none
 * for n <= 0). */
CT__V512 __mmask16 ct__v512_rest(int64_t n) {
  return n >= 16 ? (__mmask16)0xFFFF : n <= 0 ? (__mmask16)0 : (__mmask16)((1u << n) - 1);
}

/* o[i] = FN(x[i]) for i in [0, n), 16 at a time, the last few masked (o may be x; masking
 * every step was 10 % slower for the exp op). */
#define CT__V512_MAP(FN, x, o, n)                                                      \
  do {                                                                                 \
    int64_t i_ = 0;                                                                    \
    for (; i_ + 16 <= (n); i_ += 16) {                                                 \
      _mm512_storeu_ps((o) + i_, FN(_mm512_loadu_ps((x) + i_)));                       \
    }                                                                                  \
    if (i_ < (n)) {                                                                    \
      const __mmask16 m_ = ct__v512_rest((n) - i_);                                    \
      _mm512_mask_storeu_ps((o) + i_, m_, FN(_mm512_maskz_loadu_ps(m_, (x) + i_)));    \
    }                                                                                  \
  } while (0)

/* ct__vexpf_nonpos: exp of x <= 89 or NaN. */
CT__V512 __m512 ct__v512_expf_nonpos(__m512 x) {
  const __m512 shift = ct__v512_set(CT__EXPF_SHIFT);
  __m512 xc = _mm512_max_ps(ct__v512_set(-104.0f), x);
  __m512 kf = _mm512_add_ps(_mm512_mul_ps(xc, ct__v512_set(CT__EXPF_LOG2E)), shift);
  kf = _mm512_sub_ps(kf, shift);
  __m512 r = _mm512_sub_ps(_mm512_sub_ps(xc, _mm512_mul_ps(kf, ct__v512_set(CT__EXPF_LN2_HI))),
                           _mm512_mul_ps(kf, ct__v512_set(CT__EXPF_LN2_LO)));
  __m512 p = ct__v512_set(CT__EXPF_P4);
  p = _mm512_add_ps(_mm512_mul_ps(p, r), ct__v512_set(CT__EXPF_P3));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), ct__v512_set(CT__EXPF_P2));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), ct__v512_set(CT__EXPF_P1));
  p = _mm512_add_ps(_mm512_mul_ps(p, r), ct__v512_set(CT__EXPF_P0));
  p = _mm512_add_ps(ct__v512_set(1.0f),
                    _mm512_add_ps(r, _mm512_mul_ps(_mm512_mul_ps(r, r), p)));
  return _mm512_scalef_ps(p, kf);
}

/* ct__vexpf_sm: the same with vmath.h's fused multiply-adds. */
CT__V512 __m512 ct__v512_expf_sm(__m512 x) {
  const __m512 shift = ct__v512_set(CT__EXPF_SHIFT);
  __m512 xc = _mm512_max_ps(ct__v512_set(-104.0f), x);
  __m512 kf = _mm512_fmadd_ps(xc, ct__v512_set(CT__EXPF_LOG2E), shift);
  kf = _mm512_sub_ps(kf, shift);
  __m512 r = _mm512_fmadd_ps(kf, ct__v512_set(-CT__EXPF_LN2_HI), xc);
  r = _mm512_fmadd_ps(kf, ct__v512_set(-CT__EXPF_LN2_LO), r);
  __m512 p = _mm512_fmadd_ps(ct__v512_set(CT__EXPF_P4), r, ct__v512_set(CT__EXPF_P3));
  p = _mm512_fmadd_ps(p, r, ct__v512_set(CT__EXPF_P2));
  p = _mm512_fmadd_ps(p, r, ct__v512_set(CT__EXPF_P1));
  p = _mm512_fmadd_ps(p, r, ct__v512_set(CT__EXPF_P0));
  p = _mm512_fmadd_ps(p, r, ct__v512_set(1.0f));
  p = _mm512_fmadd_ps(p, r, ct__v512_set(1.0f));
  return _mm512_scalef_ps(p, kf);
}

/* ct__vexpf: x above 89 (not NaN) taken as 89 first. */
CT__V512 __m512 ct__v512_expf(__m512 x) {
  __mmask16 big = _mm512_cmp_ps_mask(x, ct__v512_set(89.0f), _CMP_GT_OQ);
  return ct__v512_expf_nonpos(_mm512_mask_mov_ps(x, big, ct__v512_set(89.0f)));
}

/* ct__vsigmoidf: 1 / (1 + exp(-x)). */
CT__V512 __m512 ct__v512_sigmoidf(__m512 x) {
  __m512 nx = _mm512_castsi512_ps(
      _mm512_xor_si512(_mm512_castps_si512(x), _mm512_set1_epi32((int)0x80000000u)));
  return _mm512_div_ps(ct__v512_set(1.0f),
                       _mm512_add_ps(ct__v512_set(1.0f), ct__v512_expf(nx)));
}

/* ct__vtanhf: the polynomial below |x| 0.75, 1 - 2 / (exp(2 min(|x|, 9.5)) + 1) above, the
 * sign put back. */
CT__V512 __m512 ct__v512_tanhf(__m512 x) {
  const __m512i sign = _mm512_set1_epi32((int)0x80000000u);
  __m512 ax = _mm512_castsi512_ps(_mm512_andnot_si512(sign, _mm512_castps_si512(x)));
  __m512 u = _mm512_mul_ps(ax, ax);
  __m512 p = ct__v512_set(CT__TANHF_P6);
  p = _mm512_add_ps(_mm512_mul_ps(p, u), ct__v512_set(CT__TANHF_P5));
  p = _mm512_add_ps(_mm512_mul_ps(p, u), ct__v512_set(CT__TANHF_P4));
  p = _mm512_add_ps(_mm512_mul_ps(p, u), ct__v512_set(CT__TANHF_P3));
  p = _mm512_add_ps(_mm512_mul_ps(p, u), ct__v512_set(CT__TANHF_P2));
  p = _mm512_add_ps(_mm512_mul_ps(p, u), ct__v512_set(CT__TANHF_P1));
  p = _mm512_add_ps(_mm512_mul_ps(p, u), ct__v512_set(CT__TANHF_P0));
  __mmask16 gt = _mm512_cmp_ps_mask(ax, ct__v512_set(9.5f), _CMP_GT_OQ);
  __m512 a = _mm512_mask_mov_ps(ax, gt, ct__v512_set(9.5f));
  __m512 e = ct__v512_expf_nonpos(_mm512_add_ps(a, a));
  __m512 big = _mm512_sub_ps(ct__v512_set(1.0f),
                             _mm512_div_ps(ct__v512_set(2.0f),
                                           _mm512_add_ps(e, ct__v512_set(1.0f))));
  __mmask16 small = _mm512_cmp_ps_mask(ax, ct__v512_set(0.75f), _CMP_LT_OQ);
  __m512 low = _mm512_add_ps(ax, _mm512_mul_ps(_mm512_mul_ps(ax, u), p));
  __m512 t = _mm512_mask_mov_ps(big, small, low);
  return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(t),
                                             _mm512_and_si512(_mm512_castps_si512(x), sign)));
}

#endif /* CT__T16_X86 */

#endif /* CORTEN_OPS_CPU_VMATH512_H */
