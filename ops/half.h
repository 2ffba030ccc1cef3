/* SPDX-License-Identifier: Apache-2.0 */
/* ops/half.h: float16 (IEEE binary16) and bfloat16 conversions, by bit manipulation,
 * rounding to nearest even. Storage types are uint16_t. Under nvcc the functions are
 * __host__ __device__, so the CUDA kernels convert exactly as the CPU ones do (NaNs included). */
#ifndef CORTEN_CORE_OP_HALF_H
#define CORTEN_CORE_OP_HALF_H

#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__)
#define CT__HALF_FN __host__ __device__ __forceinline__
#else
#define CT__HALF_FN static inline
#endif

CT__HALF_FN uint32_t ct__f32_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

CT__HALF_FN float ct__f32_from_bits(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}

CT__HALF_FN float ct__half_to_float(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  if (exp == 0x1f) return ct__f32_from_bits(sign | 0x7f800000u | (man << 13)); /* inf, NaN */
  if (exp != 0) return ct__f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
  /* Zero or subnormal: man x 2^-24, exact in float. */
  float v = (float)man * (1.0f / 16777216.0f);
  return sign ? -v : v;
}

CT__HALF_FN uint16_t ct__float_to_half(float f) {
  uint32_t u = ct__f32_bits(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t abs = u & 0x7fffffffu;
  if (abs >= 0x7f800000u) { /* inf or NaN (kept quiet) */
    return (uint16_t)(sign | 0x7c00u | (abs > 0x7f800000u ? 0x200u | ((abs >> 13) & 0x3ffu) : 0));
  }
  if (abs >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds past 65504: inf */
  if (abs < 0x38800000u) { /* below 2^-14: subnormal half (or zero) */
    if (abs < 0x33000000u) return sign; /* below half the smallest subnormal */
    uint32_t man = (abs & 0x7fffffu) | 0x800000u;
    int shift = 126 - (int)(abs >> 23); /* 14..24 */
    uint32_t q = man >> shift, rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1u))) q++;
    return (uint16_t)(sign | q);
  }
  uint32_t r = abs - 0x38000000u; /* rebias the exponent: 127 - 15 = 112 << 23 */
  uint32_t q = r >> 13, rem = r & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (q & 1u))) q++;
  return (uint16_t)(sign | q);
}

CT__HALF_FN float ct__bf16_to_float(uint16_t b) { return ct__f32_from_bits((uint32_t)b << 16); }

CT__HALF_FN uint16_t ct__float_to_bf16(float f) {
  uint32_t u = ct__f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u); /* quiet NaN */
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

/* Rounding to odd: the value truncated toward zero, with the last bit of the significand set
 * when anything was cut off. Rounding such a float to nearest even in a format with at least
 * two fewer significand bits (float16, bfloat16) gives the correctly rounded value of the
 * original, where going through a float rounded to nearest would round twice (1 + 2^-11 +
 * 2^-40 would become the tie 1 + 2^-11 and then 1, not 1 + 2^-10). */
CT__HALF_FN float ct__f64_to_f32_odd(double d) {
  float f = (float)d;
  double back = (double)f;
  if (back == d || d != d) return f; /* exact, or NaN */
  uint32_t u = ct__f32_bits(f);
  if (d > 0 ? back > d : back < d) u -= 1; /* rounded away from zero: step back */
  return ct__f32_from_bits(u | 1u);
}

/* An unsigned 64-bit integer rounded to a float32 with round-to-odd: the bits shifted out are
 * folded into the lowest kept one, so a later rounding to a narrower type rounds once. */
CT__HALF_FN float ct__u64_to_f32_odd(uint64_t m) {
  int shift = 0;
  while ((m >> shift) >= ((uint64_t)1 << 24)) shift++;
  uint64_t q = m >> shift;
  if ((m & (((uint64_t)1 << shift) - 1)) != 0) q |= 1u;
  float f = (float)q; /* q < 2^24: exact */
  for (int i = 0; i < shift; i++) f *= 2.0f; /* exact */
  return f;
}

/* A signed one, the same way (its magnitude, then the sign). */
CT__HALF_FN float ct__i64_to_f32_odd(int64_t n) {
  float f = ct__u64_to_f32_odd(n < 0 ? 0 - (uint64_t)n : (uint64_t)n);
  return n < 0 ? -f : f;
}


/* Doubles and integers to float16 / bfloat16, rounded once to nearest even. */
CT__HALF_FN uint16_t ct__f64_to_half(double d) {
  return ct__float_to_half(ct__f64_to_f32_odd(d));
}
CT__HALF_FN uint16_t ct__f64_to_bf16(double d) {
  return ct__float_to_bf16(ct__f64_to_f32_odd(d));
}
CT__HALF_FN uint16_t ct__i64_to_half(int64_t n) {
  return ct__float_to_half(ct__i64_to_f32_odd(n));
}
CT__HALF_FN uint16_t ct__i64_to_bf16(int64_t n) {
  return ct__float_to_bf16(ct__i64_to_f32_odd(n));
}
CT__HALF_FN uint16_t ct__u64_to_half(uint64_t n) {
  return ct__float_to_half(ct__u64_to_f32_odd(n));
}
CT__HALF_FN uint16_t ct__u64_to_bf16(uint64_t n) {
  return ct__float_to_bf16(ct__u64_to_f32_odd(n));
}

#endif /* CORTEN_CORE_OP_HALF_H */
