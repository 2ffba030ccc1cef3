/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/math.c: CPU kernels of ops/defs/math.c. */
#include "ops/cpu/cpu_kernels.h"

const ct__kernel_table ct__cpu_math = {NULL, 0};
