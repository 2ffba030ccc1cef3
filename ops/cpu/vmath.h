/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/vmath.h: corten's own exp, log, tanh, sigmoid and float32 erf for the CPU kernels,
 * written so that GCC and clang vectorise a loop calling them (docs/design/vmath.md).
 *
 * Every function is straight-line code: range reduction, a polynomial, a scale by a power of two
 * built in the integer bits, and the special cases chosen by bit-mask selects, not branches; only
 * operations SSE2 has for packed floats and integers (no int64 <-> double conversion, no
 * arithmetic shift of 64-bit lanes, no table look-up), so the x86-64 baseline build vectorises
 * them. The library compiles without FMA contraction, so each function gives the same bits
 * whether a loop runs it packed or scalar, at any -march (softmax's exp fuses its multiply-adds
 * itself, with fmaf). Every CPU kernel computing these functions calls these (the ops, softmax,
 * the losses, the expression engine), so fused and op-by-op results are equal bit for bit. They
 * differ from the C library in the last bit of some results; the measured bounds (float32: all
 * 2^32 inputs) are in docs/design/vmath.md.
 *
 *   ct__vexpf, ct__vexp   exp; +inf -> +inf, -inf -> 0, NaN -> NaN, 0 -> 1 exactly, overflow to
 *                         +inf, results below the smallest normal rounded once to subnormals.
 *   ct__vexpf_nonpos, ... the same for arguments that cannot overflow (x <= 0), without the
 *                         clamp from above; the same bits there.
 *   ct__vexpf_sm          softmax's float32 exp (x <= 89): ct__vexpf_nonpos's steps with fused
 *                         multiply-adds, other bits (within 0.882 ulp).
 *   ct__vlogf, ct__vlog   log; 0 -> -inf, < 0 -> NaN, +inf -> +inf, 1 -> 0, subnormal inputs
 *                         scaled to normal first.
 *   ct__vtanhf            tanh of float32, in float from a polynomial or exp (within 1.1 ulp);
 *                         +-0 and the sign kept, +-inf -> +-1. (float64 tanh stays the C
 *                         library's.)
 *   ct__vsigmoidf, ...    1 / (1 + exp(-x)) with the functions above.
 *   ct__verff             erf of float32, in float from three polynomials (within 0.83 ulp);
 *                         +-0 kept, +-inf -> +-1, NaN kept. (float64 erf stays the C
 *                         library's.)
 * CT__VEXP, CT__VEXP_NONPOS, CT__VEXP_SM, CT__VLOG, CT__VTANH, CT__VSIGMOID, CT__VERF pick the
 * function by the argument's type. */
#ifndef CORTEN_OPS_CPU_VMATH_H
#define CORTEN_OPS_CPU_VMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#define CT__VM static inline __attribute__((always_inline))

/* On a kernel's range function whose loop calls these: GCC on x86-64 compiles it three times,
 * for the SSE2 baseline, AVX2 (x86-64-v3: 8 float lanes, FMA for fmaf) and AVX-512 (16), with no
 * FMA contraction (the same bits in each), and picks the widest the CPU runs at load time (an
 * ifunc). clang 14 and later on Linux: AVX-512, AVX2 and the baseline, as clang can neither
 * clone for AVX2 and FMA together nor dispatch to arch=x86-64-v3 (its resolver tests the CPU's
 * name, never true), so its AVX2 copy calls the C library's fmaf for softmax's exp (the same
 * bits, slower). Empty elsewhere, and in sanitizer builds. Without the clones a build runs the
 * baseline copy everywhere (a clang build without them: 24 ns a softmax score for rows of 10
 * where GCC's AVX2 copy takes 1.3). clang makes each clone's resolver a global symbol, static
 * function or not: the functions need names unique across the library, and the shared library
 * keeps the resolvers inside (cmake/corten.map). */
#if defined(__clang__) && defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define CT__VM_SANITIZED 1
#endif
#endif
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && \
    !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#define CT__VM_CLONES __attribute__((target_clones("avx512f", "arch=x86-64-v3", "default")))
#elif defined(__clang__) && __clang_major__ >= 14 && defined(__x86_64__) && \
    defined(__linux__) && !defined(CT__VM_SANITIZED)
#define CT__VM_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define CT__VM_CLONES
#endif

CT__VM uint32_t ct__vm_ubits(float x) {
  uint32_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}
CT__VM float ct__vm_fbits(uint32_t u) {
  float x;
  memcpy(&x, &u, sizeof x);
  return x;
}
CT__VM uint64_t ct__vm_ubits64(double x) {
  uint64_t u;
  memcpy(&u, &x, sizeof u);
  return u;
}
CT__VM double ct__vm_dbits(uint64_t u) {
  double x;
  memcpy(&x, &u, sizeof x);
  return x;
}
/* m ? a : b for a mask m of all ones or zeros (CT__VM_M32 / CT__VM_M64 of a condition). GCC
 * will not if-convert a chain of floating-point ternaries in a loop (with its default
 * -ftrapping-math) nor widen an int condition inside an inline function to a 64-bit mask, and
 * leaves such a loop scalar; this form it vectorises. */
#define CT__VM_M32(c) ((uint32_t) - (int32_t)(c))
#define CT__VM_M64(c) ((uint64_t) - (int64_t)(c))
CT__VM float ct__vm_self(uint32_t m, float a, float b) {
  return ct__vm_fbits((m & ct__vm_ubits(a)) | (~m & ct__vm_ubits(b)));
}
CT__VM double ct__vm_seld(uint64_t m, double a, double b) {
  return ct__vm_dbits((m & ct__vm_ubits64(a)) | (~m & ct__vm_ubits64(b)));
}

/* ---- exp --------------------------------------------------------------------------------------
 * x = k ln2 + r, k = round(x / ln2) by the shifter trick (adding 1.5 x 2^p leaves k in the low
 * bits of the sum), |r| <= ln2 / 2 + a little; ln2 is split in two (Cody and Waite) with few
 * enough bits in the high part that k * hi is exact. exp(r) = 1 + r + r^2 P(r), P fitted to
 * (exp(r) - 1 - r) / r^2 by weighted least squares at Chebyshev nodes (relative error 4e-9 for
 * float32's degree 4, 1e-18 for float64's degree 10). 2^k is applied as 2^(k>>1) x 2^(k-(k>>1)),
 * both normal numbers, so an overflowing result becomes inf and a subnormal one is rounded once.
 * x is clamped first to where exp is already inf or 0, which also keeps k in range. */

/* float32 exp's constants (vmath512.h computes the same arithmetic on AVX-512 with them): the
 * shifter, 1 / ln2, ln2 in two parts and P's coefficients from the highest degree. */
#define CT__EXPF_SHIFT 0x1.8p23f
#define CT__EXPF_LOG2E 0x1.715476p+0f
#define CT__EXPF_LN2_HI 0x1.62e4p-1f
#define CT__EXPF_LN2_LO 0x1.7f7d1cp-20f
#define CT__EXPF_P4 0x1.686aa8p-10f
#define CT__EXPF_P3 0x1.124194p-7f
#define CT__EXPF_P2 0x1.555b96p-5f
#define CT__EXPF_P1 0x1.555486p-3f
#define CT__EXPF_P0 0x1.fffff8p-2f

/* exp of x <= 89 or NaN (no clamp from above: softmax's x - max is never positive, and its loop
 * saves the compare and select); ct__vexpf is this after the clamp, so the bits are the same. */
CT__VM float ct__vexpf_nonpos(float x) {
  const float shift = CT__EXPF_SHIFT;
  float xc = ct__vm_self(CT__VM_M32(x < -104.0f), -104.0f, x);
  float kf = xc * CT__EXPF_LOG2E + shift;
  uint32_t u = ct__vm_ubits(kf) - (ct__vm_ubits(shift) - 256u); /* k + 256 */
  kf -= shift;
  float r = (xc - kf * CT__EXPF_LN2_HI) - kf * CT__EXPF_LN2_LO;
  float p = CT__EXPF_P4;
  p = p * r + CT__EXPF_P3;
  p = p * r + CT__EXPF_P2;
  p = p * r + CT__EXPF_P1;
  p = p * r + CT__EXPF_P0;
  p = 1.0f + (r + r * r * p);
  uint32_t h = u >> 1; /* (k >> 1) + 128 */
  float s1 = ct__vm_fbits((h - 1u) << 23), s2 = ct__vm_fbits((u - h - 1u) << 23);
  return p * s1 * s2;
}

CT__VM float ct__vexpf(float x) {
  return ct__vexpf_nonpos(ct__vm_self(CT__VM_M32(x > 89.0f), 89.0f, x));
}

/* softmax's exp of x <= 89 or NaN (the softmax rows, ops/cpu/softmax_row.h): ct__vexpf_nonpos's
 * reduction and polynomial on its constants, each multiply and its add fused (fmaf: one
 * rounding), and 1 + r + r^2 P(r) evaluated as 1 + r (1 + r P(r)): 9 multiply-adds and an add
 * a value where ct__vexpf_nonpos has 9 multiplies and 10 adds (about 0.33 against 0.54 ns a
 * softmax score on AVX-512), within 0.882 ulp (all inputs up to 89, vmath.md). fmaf is exact
 * everywhere, so the bits do not depend on the CPU: the AVX2 and AVX-512 clones
 * (CT__VM_CLONES) compile it to the instruction, the baseline x86-64 clone calls the C
 * library's (slow, for CPUs without FMA). */
CT__VM float ct__vexpf_sm(float x) {
  const float shift = CT__EXPF_SHIFT;
  float xc = ct__vm_self(CT__VM_M32(x < -104.0f), -104.0f, x);
  float kf = fmaf(xc, CT__EXPF_LOG2E, shift);
  uint32_t u = ct__vm_ubits(kf) - (ct__vm_ubits(shift) - 256u); /* k + 256 */
  kf -= shift;
  /* the constants negated, not kf: a NaN keeps its sign, as in vmath512.h's multiply-adds */
  float r = fmaf(kf, -CT__EXPF_LN2_HI, xc);
  r = fmaf(kf, -CT__EXPF_LN2_LO, r);
  float p = fmaf(CT__EXPF_P4, r, CT__EXPF_P3);
  p = fmaf(p, r, CT__EXPF_P2);
  p = fmaf(p, r, CT__EXPF_P1);
  p = fmaf(p, r, CT__EXPF_P0);
  p = fmaf(p, r, 1.0f); /* 1 + r + r^2 P as 1 + r (1 + r P) */
  p = fmaf(p, r, 1.0f);
  uint32_t h = u >> 1; /* (k >> 1) + 128 */
  float s1 = ct__vm_fbits((h - 1u) << 23), s2 = ct__vm_fbits((u - h - 1u) << 23);
  return p * s1 * s2;
}

/* exp of x already in [-746, 710] (no clamp). */
CT__VM double ct__vexp_core(double xc) {
  const double shift = 0x1.8p52;
  double kd = xc * 0x1.71547652b82fep+0 + shift;
  uint64_t u = ct__vm_ubits64(kd) - (ct__vm_ubits64(shift) - 2048u); /* k + 2048 */
  kd -= shift;
  double r = (xc - kd * 0x1.62e42fefa38p-1) - kd * 0x1.ef35793c7673p-45;
  double p = 0x1.1dd24ffafd6ddp-29;
  p = p * r + 0x1.af71efa5a7c52p-26;
  p = p * r + 0x1.27e60b3bcb028p-22;
  p = p * r + 0x1.71ddeca02a86dp-19;
  p = p * r + 0x1.a01a0101d7363p-16;
  p = p * r + 0x1.a01a01b4eb95ep-13;
  p = p * r + 0x1.6c16c16c3eea4p-10;
  p = p * r + 0x1.111111110e893p-7;
  p = p * r + 0x1.55555555554c9p-5;
  p = p * r + 0x1.555555555555cp-3;
  p = p * r + 0x1p-1;
  p = 1.0 + (r + r * r * p);
  uint64_t h = u >> 1; /* (k >> 1) + 1024 */
  double s1 = ct__vm_dbits((h - 1u) << 52), s2 = ct__vm_dbits((u - h - 1u) << 52);
  return p * s1 * s2;
}

/* exp of x <= 710 or NaN (as ct__vexpf_nonpos). */
CT__VM double ct__vexp_nonpos(double x) {
  return ct__vexp_core(ct__vm_seld(CT__VM_M64(x < -746.0), -746.0, x));
}

CT__VM double ct__vexp(double x) {
  return ct__vexp_nonpos(ct__vm_seld(CT__VM_M64(x > 710.0), 710.0, x));
}

/* ---- log --------------------------------------------------------------------------------------
 * x = 2^e m with m in [sqrt(1/2), sqrt(2)) (subnormals scaled by 2^54 first; e as a double
 * through the 2^52 shifter, SSE2 having no int64 -> double conversion). With f = m - 1 (exact)
 * and s = f / (2 + f): log(m) = 2 atanh(s) = f - (f^2/2 - s (f^2/2 + R)), R = 2 atanh(s) / s - 2
 * = s^2 Q(s^2), Q of degree 7 fitted like exp's P (error 4e-19): the large part f is exact and
 * the rest small, so the result is within about one rounding of the true value.
 * log(x) = e ln2_hi + (that + e ln2_lo). */

CT__VM double ct__vlog(double x) {
  uint64_t sub = CT__VM_M64(x < 0x1p-1022); /* also 0 and negatives, set below */
  double xs = ct__vm_seld(sub, x * 0x1p54, x);
  uint64_t b = ct__vm_ubits64(xs);
  double e = ct__vm_dbits((b >> 52) | 0x4330000000000000u) - (0x1p52 + 1023.0);
  e = ct__vm_seld(sub, e - 54.0, e);
  double m = ct__vm_dbits((b & 0x000fffffffffffffu) | 0x3ff0000000000000u);
  uint64_t big = CT__VM_M64(m > 0x1.6a09e667f3bcdp+0);
  m = ct__vm_seld(big, m * 0.5, m);
  e = ct__vm_seld(big, e + 1.0, e);
  double f = m - 1.0, s = f / (2.0 + f), z = s * s;
  double q = 0x1.0fbc2e0710132p-3;
  q = q * z + 0x1.0f52e354c5281p-3;
  q = q * z + 0x1.3b211d5eecebcp-3;
  q = q * z + 0x1.745cdb8fe491bp-3;
  q = q * z + 0x1.c71c7261a92f3p-3;
  q = q * z + 0x1.2492492423a1ep-2;
  q = q * z + 0x1.9999999999e66p-2;
  q = q * z + 0x1.5555555555555p-1;
  double hf = 0.5 * f * f;
  double y = e * 0x1.62e42fefa38p-1 + (f - (hf - (s * (hf + z * q) + e * 0x1.ef35793c7673p-45)));
  y = ct__vm_seld(CT__VM_M64(x == 0), -HUGE_VAL, y);
  y = ct__vm_seld(CT__VM_M64(x < 0), (double)NAN, y);
  y = ct__vm_seld(CT__VM_M64(x == HUGE_VAL), HUGE_VAL, y);
  return ct__vm_seld(CT__VM_M64(x != x), x, y);
}


/* float32 log: the same steps in float (subnormals scaled by 2^24; Q of degree 3, error 4e-10),
 * so a float32 loop holds only 32-bit lanes. */
CT__VM float ct__vlogf(float x) {
  uint32_t sub = CT__VM_M32(x < 0x1p-126f); /* also 0 and negatives, set below */
  float xs = ct__vm_self(sub, x * 0x1p24f, x);
  uint32_t b = ct__vm_ubits(xs);
  float e = (float)((int32_t)(b >> 23) - 127);
  e = ct__vm_self(sub, e - 24.0f, e);
  float m = ct__vm_fbits((b & 0x007fffffu) | 0x3f800000u);
  uint32_t big = CT__VM_M32(m > 0x1.6a09e6p+0f);
  m = ct__vm_self(big, m * 0.5f, m);
  e = ct__vm_self(big, e + 1.0f, e);
  float f = m - 1.0f, s = f / (2.0f + f), z = s * s;
  float q = 0x1.e351ecp-3f;
  q = q * z + 0x1.243676p-2f;
  q = q * z + 0x1.999a84p-2f;
  q = q * z + 0x1.555554p-1f;
  float hf = 0.5f * f * f;
  float y = e * 0x1.62e4p-1f + (f - (hf - (s * (hf + z * q) + e * 0x1.7f7d1cp-20f)));
  y = ct__vm_self(CT__VM_M32(x == 0), -HUGE_VALF, y);
  y = ct__vm_self(CT__VM_M32(x < 0), NAN, y);
  y = ct__vm_self(CT__VM_M32(x == HUGE_VALF), HUGE_VALF, y);
  return ct__vm_self(CT__VM_M32(x != x), x, y);
}

/* ---- tanh and sigmoid -------------------------------------------------------------------------
 * float32 tanh in float alone: |x| < 0.75, |x| + |x|^3 P(x^2), P of degree 6 fitted like exp's
 * (the sum's rounding leads, under 0.87 ulp); above, 1 - 2 / (exp(2|x|) + 1) with |x| clamped to
 * 9.5 (tanh rounds to 1 there), exp's error scaled by 2 / (exp(2|x|) + 1) <= 0.37; the sign
 * put back on the bits. It was computed in double (8 lanes a vector, a division of 16 cycles):
 * an LSTM's cells spent most of their time there. */

/* float32 tanh's P, from the highest degree (shared with vmath512.h). */
#define CT__TANHF_P6 -0x1.4c3746p-11f
#define CT__TANHF_P5 0x1.8575c6p-9f
#define CT__TANHF_P4 -0x1.19bc5cp-7f
#define CT__TANHF_P3 0x1.654008p-6f
#define CT__TANHF_P2 -0x1.ba099ep-5f
#define CT__TANHF_P1 0x1.1110c8p-3f
#define CT__TANHF_P0 -0x1.555554p-2f

CT__VM float ct__vtanhf(float x) {
  float ax = ct__vm_fbits(ct__vm_ubits(x) & 0x7fffffffu), u = ax * ax;
  float p = CT__TANHF_P6;
  p = p * u + CT__TANHF_P5;
  p = p * u + CT__TANHF_P4;
  p = p * u + CT__TANHF_P3;
  p = p * u + CT__TANHF_P2;
  p = p * u + CT__TANHF_P1;
  p = p * u + CT__TANHF_P0;
  float a = ct__vm_self(CT__VM_M32(ax > 9.5f), 9.5f, ax);
  float big = 1.0f - 2.0f / (ct__vexpf_nonpos(a + a) + 1.0f);
  float t = ct__vm_self(CT__VM_M32(ax < 0.75f), ax + (ax * u) * p, big);
  return ct__vm_fbits(ct__vm_ubits(t) | (ct__vm_ubits(x) & 0x80000000u));
}

/* ---- erf (float32) -----------------------------------------------------------------------------
 * In float, three polynomials by Horner's rule (the only arithmetic: each result rounded once, so
 * the bits do not depend on the lanes), chosen by |x| = a:
 *   a < 0.75:        a + a P(a^2), P fitted to erf(a) / a - 1 (degree 6). Adding a last keeps
 *                    the leading term exact, so the polynomial's rounding errors are scaled by
 *                    |P| <= 0.13.
 *   0.75 <= a < 1.5: E + (e + u M(u)), u = a - 1.125 (exact: Sterbenz), E + e = erf(1.125) in
 *                    two floats, M of degree 9 fitted to (erf(1.125 + u) - E - e) / u.
 *   1.5 <= a < 3.92: 1 - C(v), v = a - 2.71, C of degree 13 fitted to erfc (absolute error
 *                    6e-10, under a hundredth of the result's ulp).
 *   a >= 3.92:       1 (erf rounds to 1 in float32 from there).
 * All three are computed for every element and selected (no branches); the sign put back from x
 * (erf(-0) = -0), NaN returned as given. Coefficients fitted by least squares at 300 Chebyshev
 * points, each rounded to float in turn and the rest refitted. Within 0.83 ulp of erf over all
 * 2^32 inputs (docs/design/vmath.md). */
static const float ct__verf_a[7] = {
    0x1.06eba8p-3f,  -0x1.812744p-2f, 0x1.ce2e8ap-4f, -0x1.b81ceap-6f,
    0x1.55730cp-8f,  -0x1.b164eep-11f, 0x1.79319ep-14f};
static const float ct__verf_m[9] = {
    0x1.45e99cp-2f, -0x1.6ea6d2p-2f, 0x1.4cb3b4p-3f,  0x1.ca5ae2p-6f, -0x1.f65494p-5f,
    0x1.fb7f0ap-7f,  0x1.39d126p-7f, -0x1.711ab8p-8f, -0x1.46662ap-12f};
static const float ct__verf_c[14] = {
    0x1.09ffd8p-13f, -0x1.7e672cp-11f, 0x1.03130ep-9f,  -0x1.b435e2p-9f, 0x1.f8bef6p-9f,
    -0x1.a02af6p-9f, 0x1.e25d2ap-10f,  -0x1.6009d4p-11f, 0x1.07f65ep-14f, 0x1.96d31ep-14f,
    -0x1.15196ep-14f, 0x1.b1ef90p-17f, 0x1.6425fap-18f,  -0x1.3f329cp-19f};

/* c[0] + c[1] u + ... + c[n - 1] u^(n - 1) by Horner's rule, n a constant: the loop unrolled
 * whole, so that a loop calling this vectorises. */
CT__VM float ct__vm_hornerf(const float *c, int n, float u) {
  float p = c[n - 1];
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 16
#elif defined(__clang__)
#pragma clang loop unroll(full)
#endif
  for (int k = n - 2; k >= 0; k--) p = p * u + c[k];
  return p;
}

CT__VM float ct__verff(float x) {
  float a = ct__vm_fbits(ct__vm_ubits(x) & 0x7fffffffu), u = a - 1.125f;
  float small = a + a * ct__vm_hornerf(ct__verf_a, 7, a * a);
  float mid = 0x1.c6dad2p-1f + (0x1.053d8cp-26f + u * ct__vm_hornerf(ct__verf_m, 9, u));
  float big = 1.0f - ct__vm_hornerf(ct__verf_c, 14, a - 0x1.5ae148p+1f);
  float r = ct__vm_self(CT__VM_M32(a < 1.5f), mid, ct__vm_self(CT__VM_M32(a < 3.92f), big, 1.0f));
  r = ct__vm_self(CT__VM_M32(a < 0.75f), small, r);
  float f = ct__vm_fbits(ct__vm_ubits(r) | (ct__vm_ubits(x) & 0x80000000u));
  return ct__vm_self(CT__VM_M32(x != x), x, f);
}

CT__VM float ct__vsigmoidf(float x) { return 1.0f / (1.0f + ct__vexpf(-x)); }
CT__VM double ct__vsigmoid(double x) { return 1.0 / (1.0 + ct__vexp(-x)); }

#define CT__VEXP(a) _Generic((a), float: ct__vexpf, double: ct__vexp)(a)
#define CT__VEXP_NONPOS(a) _Generic((a), float: ct__vexpf_nonpos, double: ct__vexp_nonpos)(a)
/* softmax's exp: ct__vexpf_sm for float32, float64's the same as CT__VEXP_NONPOS. */
#define CT__VEXP_SM(a) _Generic((a), float: ct__vexpf_sm, double: ct__vexp_nonpos)(a)
#define CT__VLOG(a) _Generic((a), float: ct__vlogf, double: ct__vlog)(a)
#define CT__VTANH(a) _Generic((a), float: ct__vtanhf, double: tanh)(a)
#define CT__VSIGMOID(a) _Generic((a), float: ct__vsigmoidf, double: ct__vsigmoid)(a)
#define CT__VERF(a) _Generic((a), float: ct__verff, double: erf)(a)

#endif /* CORTEN_OPS_CPU_VMATH_H */
