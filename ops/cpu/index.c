/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/index.c: CPU kernels of ops/defs/index.c. */
#include "ops/cpu/cpu_kernels.h"

const ct__kernel_table ct__cpu_index = {NULL, 0};
