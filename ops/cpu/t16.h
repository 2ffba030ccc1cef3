/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/t16.h: a 16 x 16 float32 transpose in AVX-512 registers, for kernels compiled for
 * AVX-512 alone (target attributes; the caller checks the CPU): r[i] lane l becomes r[l] lane
 * i, pairs interleaved, then quads, then 128-bit lanes exchanged twice (64 shuffles). Used by
 * the GEMM's transposed tile stores (gemm_ukr.c) and the small depthwise planes' channels-last
 * blocks (conv.c). CT__T16_X86 says whether it exists. */
#ifndef CORTEN_OPS_CPU_T16_H
#define CORTEN_OPS_CPU_T16_H

#if defined(__x86_64__) && defined(__GNUC__)
#define CT__T16_X86 1
#include <immintrin.h>

__attribute__((target("avx512f"))) static inline void ct__t16_f32(__m512 r[16]) {
  __m512 t[16];
  for (int i = 0; i < 8; i++) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);
  }
  for (int i = 0; i < 4; i++) {
    __m512d a = _mm512_castps_pd(t[4 * i]), b = _mm512_castps_pd(t[4 * i + 1]);
    __m512d c = _mm512_castps_pd(t[4 * i + 2]), d = _mm512_castps_pd(t[4 * i + 3]);
    r[4 * i] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, c));
    r[4 * i + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, c));
    r[4 * i + 2] = _mm512_castpd_ps(_mm512_unpacklo_pd(b, d));
    r[4 * i + 3] = _mm512_castpd_ps(_mm512_unpackhi_pd(b, d));
  }
  for (int i = 0; i < 4; i++) {
    t[i] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0x88);
    t[i + 4] = _mm512_shuffle_f32x4(r[i], r[i + 4], 0xdd);
    t[i + 8] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0x88);
    t[i + 12] = _mm512_shuffle_f32x4(r[i + 8], r[i + 12], 0xdd);
  }
  for (int i = 0; i < 4; i++) {
    r[i] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0x88);
    r[i + 8] = _mm512_shuffle_f32x4(t[i], t[i + 8], 0xdd);
    r[i + 4] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0x88);
    r[i + 12] = _mm512_shuffle_f32x4(t[i + 4], t[i + 12], 0xdd);
  }
}
#endif

#endif /* CORTEN_OPS_CPU_T16_H */
