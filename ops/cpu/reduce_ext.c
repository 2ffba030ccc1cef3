/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/reduce_ext.c: CPU kernels of ops/defs/reduce_ext.c. */
#include "ops/cpu/cpu_kernels.h"

const ct__kernel_table ct__cpu_reduce_ext = {NULL, 0};
