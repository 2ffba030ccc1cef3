/* SPDX-License-Identifier: Apache-2.0 */
/* ops/gelu.h: gelu and its derivative in double, written once for the CPU and for CUDA device
 * code (CT__HD, ops/philox.h), so both backends evaluate the same expressions; only the math
 * library's erf, tanh and exp may differ in the last bit.
 *   exact (tanh_form false): gelu(x) = x Phi(x) = x (1 + erf(x / sqrt 2)) / 2,
 *                            gelu'(x) = Phi(x) + x phi(x)
 *   tanh_form: gelu(x) = x (1 + t) / 2 with t = tanh(sqrt(2 / pi) (x + 0.044715 x^3)),
 *              gelu'(x) = (1 + t) / 2 + x (1 - t^2) sqrt(2 / pi) (1 + 3 0.044715 x^2) / 2 */
#ifndef CORTEN_OPS_GELU_H
#define CORTEN_OPS_GELU_H

#include <stdbool.h>

#include "ops/philox.h"

#define CT__GELU_K 0.7978845608028654 /* sqrt(2 / pi) */
#define CT__GELU_C 0.044715

CT__HD double ct__gelu(double x, bool tanh_form) {
  if (tanh_form) return 0.5 * x * (1.0 + tanh(CT__GELU_K * (x + CT__GELU_C * x * x * x)));
  return 0.5 * x * (1.0 + erf(x * 0.7071067811865476));
}

CT__HD double ct__gelu_slope(double x, bool tanh_form) {
  if (tanh_form) {
    double t = tanh(CT__GELU_K * (x + CT__GELU_C * x * x * x));
    return 0.5 * (1.0 + t) +
           0.5 * x * (1.0 - t * t) * CT__GELU_K * (1.0 + 3.0 * CT__GELU_C * x * x);
  }
  return 0.5 * (1.0 + erf(x * 0.7071067811865476)) +
         x * exp(-0.5 * x * x) * 0.3989422804014327; /* 1 / sqrt(2 pi) */
}

#endif /* CORTEN_OPS_GELU_H */
