/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/resample_grid.c: the CPU kernels of grid_sample, grid_sample_grad and roi_align
 * (ops/defs/resample.h), float32 and float64, from one template (resample_grid_tmpl.h).
 *
 * grid_sample follows ONNX's GridSample (opset 16) as onnxruntime and ONNX's reference compute
 * it: a grid value g in [-1, 1] is the pixel coordinate (g + 1) (W - 1) / 2 with align_corners,
 * else ((g + 1) W - 1) / 2; nearest rounds it half to even; a coordinate outside [0, W - 1]
 * (align_corners) or [-0.5, W - 0.5] moves both coordinates by padding_mode "border" (clamped
 * into [0, W - 1]) or "reflection" (mirrored at the bounds until inside); then bilinear takes
 * the 4 pixels around it, bicubic the 16 with Keys' coefficients (a = -0.75), pixels outside
 * the image being 0 ("zeros"), the edge ("border") or mirrored ("reflection"). A NaN grid
 * value samples NaN, and so does an infinite one under "reflection" (it has no mirror image);
 * under "zeros" and "border" an infinity is simply far outside.
 *
 * roi_align follows ONNX's RoiAlign as onnxruntime computes it: each roi, scaled by
 * spatial_scale and shifted by half a pixel when `aligned` (ONNX's half_pixel), is cut into
 * pooled_height x pooled_width bins; each bin takes sampling_ratio^2 samples (when 0,
 * ceil(bin extent) along each dim), each sample a bilinear interpolation (zero outside
 * [-1, extent], clamped to the edge inside it). mode "avg" averages the samples; "max" takes,
 * as onnxruntime and ONNX's reference do, the largest weighted corner value over the samples.
 * A roi holding NaN pools NaN. */
#include <math.h>
#include <string.h>

#include "ops/cpu/resample.h"
#include "ops/defs/index.h"

#define T float
#define SUF f32
#define FLOOR floorf
#define CEIL ceilf
#define NEARBY nearbyintf
#include "ops/cpu/resample_grid_tmpl.h"
#undef T
#undef SUF
#undef FLOOR
#undef CEIL
#undef NEARBY

#define T double
#define SUF f64
#define FLOOR floor
#define CEIL ceil
#define NEARBY nearbyint
#include "ops/cpu/resample_grid_tmpl.h"
#undef T
#undef SUF
#undef FLOOR
#undef CEIL
#undef NEARBY
