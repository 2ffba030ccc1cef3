/* SPDX-License-Identifier: Apache-2.0 */
/* ops/philox.h: the counter-based generator Philox4x32-10 (Salmon et al., "Parallel
 * random numbers: as easy as 1, 2, 3", SC 2011) and the mapping from its words to uniform and
 * normal values. Written once for the CPU and for CUDA device code: only integer arithmetic and
 * IEEE +, -, x, /, sqrt, which round identically on both, so a seed gives bit-identical tensors
 * wherever it runs. (libm's log, sin and cos are not bit-identical across the two, so the normal
 * transform uses its own series here.)
 *
 * Element i of a float32 tensor takes word i % 4 of block i / 4; a float64 element takes two
 * words. Block b is Philox(counter = (b, b >> 32, 0, 0), key = (seed, seed >> 32)). */
#ifndef CORTEN_CORE_OP_PHILOX_H
#define CORTEN_CORE_OP_PHILOX_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define CT__HD __host__ __device__ __forceinline__
#else
#define CT__HD static inline
#endif

typedef struct ct__philox_block {
  uint32_t w[4];
} ct__philox_block;

CT__HD ct__philox_block ct__philox(uint64_t block, uint64_t seed) {
  uint32_t c0 = (uint32_t)block, c1 = (uint32_t)(block >> 32), c2 = 0, c3 = 0;
  uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);
  for (int r = 0; r < 10; r++) {
    uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
    uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
    uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
    c0 = hi1 ^ c1 ^ k0;
    c1 = lo1;
    c2 = hi0 ^ c3 ^ k1;
    c3 = lo0;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  ct__philox_block b = {{c0, c1, c2, c3}};
  return b;
}

/* [0, 1) from 24 bits, and (0, 1] (never 0, for a logarithm). */
CT__HD double ct__u24(uint32_t w) { return (double)(w >> 8) * (1.0 / 16777216.0); }
CT__HD double ct__u24_open0(uint32_t w) { return (double)((w >> 8) + 1) * (1.0 / 16777216.0); }
/* [0, 1) from 53 bits of two words, and (0, 1]. */
CT__HD double ct__u53(uint32_t a, uint32_t b) {
  return (double)(((uint64_t)(a >> 5) << 26) | (b >> 6)) * (1.0 / 9007199254740992.0);
}
CT__HD double ct__u53_open0(uint32_t a, uint32_t b) {
  return (double)((((uint64_t)(a >> 5) << 26) | (b >> 6)) + 1) * (1.0 / 9007199254740992.0);
}

/* ln x for x in (0, 1]: x = m 2^e with m in [sqrt(1/2), sqrt(2)), ln m = 2 atanh(s),
 * s = (m - 1) / (m + 1), |s| < 0.172, summed to s^21 (error below 1e-18 relative). */
CT__HD double ct__ln01(double x) {
  int e = 0;
  while (x < 0.70710678118654752) { /* u >= 2^-53 here: at most 53 exact doublings */
    x *= 2.0;
    e--;
  }
  double s = (x - 1.0) / (x + 1.0), s2 = s * s;
  double t = 1.0 / 21;
  t = t * s2 + 1.0 / 19;
  t = t * s2 + 1.0 / 17;
  t = t * s2 + 1.0 / 15;
  t = t * s2 + 1.0 / 13;
  t = t * s2 + 1.0 / 11;
  t = t * s2 + 1.0 / 9;
  t = t * s2 + 1.0 / 7;
  t = t * s2 + 1.0 / 5;
  t = t * s2 + 1.0 / 3;
  t = t * s2 + 1.0;
  /* ln 2 split so that e * LN2_HI is exact. */
  return (double)e * 6.93147180369123816490e-01 + ((double)e * 1.90821492927058770002e-10 +
                                                   2.0 * s * t);
}

/* sin and cos of a in [0, pi/4], by their series to a^17 / a^18. */
CT__HD void ct__sincos_small(double a, double *s, double *c) {
  double a2 = a * a;
  double p = 1.0 / 355687428096000.0;          /* 1/17! */
  p = p * -a2 + 1.0 / 1307674368000.0;         /* 1/15! */
  p = p * -a2 + 1.0 / 6227020800.0;            /* 1/13! */
  p = p * -a2 + 1.0 / 39916800.0;              /* 1/11! */
  p = p * -a2 + 1.0 / 362880.0;                /* 1/9!  */
  p = p * -a2 + 1.0 / 5040.0;                  /* 1/7!  */
  p = p * -a2 + 1.0 / 120.0;                   /* 1/5!  */
  p = p * -a2 + 1.0 / 6.0;                     /* 1/3!  */
  *s = a - a * a2 * p;
  double q = 1.0 / 6402373705728000.0;         /* 1/18! */
  q = q * -a2 + 1.0 / 20922789888000.0;        /* 1/16! */
  q = q * -a2 + 1.0 / 87178291200.0;           /* 1/14! */
  q = q * -a2 + 1.0 / 479001600.0;             /* 1/12! */
  q = q * -a2 + 1.0 / 3628800.0;               /* 1/10! */
  q = q * -a2 + 1.0 / 40320.0;                 /* 1/8!  */
  q = q * -a2 + 1.0 / 720.0;                   /* 1/6!  */
  q = q * -a2 + 1.0 / 24.0;                    /* 1/4!  */
  q = q * -a2 + 0.5;                           /* 1/2!  */
  *c = 1.0 - a2 * q;
}

/* sin and cos of 2 pi u for u in [0, 1): the quadrant and the fraction in it are exact. */
CT__HD void ct__sincos_2pi(double u, double *s, double *c) {
  double t = u * 4.0;
  int q = (int)t;
  double r = t - (double)q, ss, cc;
  const double half_pi = 1.57079632679489661923;
  if (r <= 0.5) {
    ct__sincos_small(half_pi * r, &ss, &cc);
  } else {
    ct__sincos_small(half_pi * (1.0 - r), &cc, &ss);
  }
  switch (q & 3) {
    case 0: *s = ss; *c = cc; break;
    case 1: *s = cc; *c = -ss; break;
    case 2: *s = -ss; *c = -cc; break;
    default: *s = -cc; *c = ss; break;
  }
}

/* Two independent standard normals from u1 in (0, 1] and u2 in [0, 1) (Box-Muller). */
CT__HD void ct__box_muller(double u1, double u2, double *z0, double *z1) {
  double r = sqrt(-2.0 * ct__ln01(u1)), s, c;
  ct__sincos_2pi(u2, &s, &c);
  *z0 = r * c;
  *z1 = r * s;
}

/* dropout's mask (ops/defs/nn.c): element i of a run with this seed is kept when its 24-bit
 * uniform, word i % 4 of block i / 4, is at least the drop probability p. */
CT__HD bool ct__dropout_keep_word(uint32_t w, double p) { return ct__u24(w) >= p; }
CT__HD bool ct__dropout_keep(uint64_t i, uint64_t seed, double p) {
  return ct__dropout_keep_word(ct__philox(i / 4, seed).w[i % 4], p);
}

#endif /* CORTEN_CORE_OP_PHILOX_H */
