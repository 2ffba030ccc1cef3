/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/index.h: the CPU kernels of ops/cpu/index_misc.c and index_layout.c, which the table of
 * ops/cpu/index.c lists: ct__ix_k_<op> serves every dtype, ct__ix_k_<op>_<dtype> one. */
#ifndef CORTEN_OPS_CPU_INDEX_H
#define CORTEN_OPS_CPU_INDEX_H

#include "ops/cpu/cpu_kernels.h"
#include "ops/defs/index.h"

#define CT__IX_K(n) ct_status ct__ix_k_##n(const ct_kernel_ctx *c)
#define CT__IX_K4(n) CT__IX_K(n##_i32); CT__IX_K(n##_i64); CT__IX_K(n##_f32); CT__IX_K(n##_f64)
CT__IX_K(tri);
CT__IX_K4(cumsum);
CT__IX_K(tal);
CT__IX_K4(pal);
CT__IX_K(pal_u8);
CT__IX_K(pal_u16);
CT__IX_K(pal_any);
CT__IX_K4(snd);
CT__IX_K(snd_u8);
CT__IX_K(snd_u16);
CT__IX_K(snd_any);
CT__IX_K(gnd);
CT__IX_K(oh);
CT__IX_K(d2s);
CT__IX_K(s2d);
CT__IX_K(eye);
CT__IX_K(where);
CT__IX_K(compress);
CT__IX_K(rs);
CT__IX_K4(topk);

#endif /* CORTEN_OPS_CPU_INDEX_H */
