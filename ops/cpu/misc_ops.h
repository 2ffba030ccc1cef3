/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/misc_ops.h: the misc family's CPU kernels that ops/cpu/misc_ops_linalg.c defines for the
 * table of ops/cpu/misc_ops.c. */
#ifndef CORTEN_OPS_CPU_MISC_OPS_H
#define CORTEN_OPS_CPU_MISC_OPS_H

#include "ops/defs/misc_ops.h"

ct_status ct__misc_k_einsum(const ct_kernel_ctx *c);      /* float32, float64 */
ct_status ct__misc_k_einsum_grad(const ct_kernel_ctx *c); /* float32, float64 */
ct_status ct__misc_k_det(const ct_kernel_ctx *c);         /* float32, float64 */
ct_status ct__misc_k_det_grad(const ct_kernel_ctx *c);    /* float32, float64 */

/* Input (slot, i) of float32 or float64 as a new array of doubles (NULL: out of memory, recorded
 * naming the op); free it with free. */
double *ct__misc_doubles(const ct_kernel_ctx *c, size_t slot, size_t i);
/* Stores the n doubles v into output (slot, i) of dtype dt (float32 or float64). */
ct_status ct__misc_store(const ct_kernel_ctx *c, size_t slot, size_t i, ct_dtype dt,
                         const double *v, int64_t n);

#endif /* CORTEN_OPS_CPU_MISC_OPS_H */
