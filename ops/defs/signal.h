/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/signal.h: what the op types dft and stft (ops/defs/signal.c) and their CPU kernels
 * (ops/cpu/signal.c) share: slots, attributes and the plans.
 *
 *   dft   ONNX's DFT (opset 17): X [..., N, 1] (real) or [..., N, 2] (complex), DftLength (an
 *         optional int32 or int64 scalar, L: the signal cut or padded with zeros to L; N by
 *         default) -> Y, X's dims with `axis`'s extent the bins and the last 2: forward
 *         Y[k] = sum over n < L of x[n] e^(-2 pi i k n / L), its first L / 2 + 1 bins when
 *         `onesided`; `inverse` the same with e^(+2 pi i k n / L) divided by L; inverse and
 *         onesided together a real signal of L samples (last dim 1; L 2 (N - 1) by default)
 *         from a half spectrum, conjugate-symmetric beyond it (numpy's irfft).
 *   stft  ONNX's STFT (opset 17): Signal [B, T, 1 or 2], FrameStep (int scalar), Window
 *         (optional [W], Signal's dtype), FrameLength (optional int scalar, L: W by default,
 *         else T) -> Y [B, F, L / 2 + 1 (`onesided`, the default) or L, 2] with F = 1 +
 *         (T - L) / FrameStep: frame f is the W samples from f FrameStep (zeros past the end)
 *         times the window (ones without one), then its DFT of length L.
 *
 * The sums are in float64, each bin's terms in order (n from 0), the twiddles cos and sin of
 * 2 pi j / L with the quarter turns exact (0 and +-1), then rounded to the dtype once. No
 * gradient. */
#ifndef CORTEN_OPS_DEFS_SIGNAL_H
#define CORTEN_OPS_DEFS_SIGNAL_H

#include "ops/defs.h"

enum { CT__DFT_X, CT__DFT_LENGTH };
enum { CT__DFT_AXIS, CT__DFT_INVERSE, CT__DFT_ONESIDED };
enum { CT__STFT_SIGNAL, CT__STFT_STEP, CT__STFT_WINDOW, CT__STFT_LENGTH };
enum { CT__STFT_ONESIDED };

/* X seen as [outer, n, inner, comps] around the axis; the transform's length `len`, the bins
 * written (Y's extent on the axis) and whether Y is real (irfft: its last dim 1). */
typedef struct ct__dft_plan {
  int64_t outer, n, inner, comps, len, bins;
  bool inverse, onesided, real_out;
  ct_ddim out;
} ct__dft_plan;

/* Signal [batch, length, comps], frames of `win` samples `step` apart, each transformed at
 * length `len` into `bins` bins. */
typedef struct ct__stft_plan {
  int64_t batch, length, comps, step, win, len, frames, bins;
  ct_ddim out;
} ct__stft_plan;

/* Check the op's inputs and attributes (reading the scalars on the host; CT_ERR_SHAPE,
 * CT_ERR_TYPE_MISMATCH, CT_ERR_OUT_OF_RANGE or CT_ERR_UNSUPPORTED naming the op, the input and
 * the fix) and plan it. */
ct_status ct__dft_plan_make(const ct_kernel_ctx *c, ct__dft_plan *p);
ct_status ct__stft_plan_make(const ct_kernel_ctx *c, ct__stft_plan *p);


#endif /* CORTEN_OPS_DEFS_SIGNAL_H */
