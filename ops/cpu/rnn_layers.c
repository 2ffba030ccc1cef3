/* SPDX-License-Identifier: Apache-2.0 */
/* ops/cpu/rnn_layers.c: CPU kernels of ops/defs/rnn_layers.c. */
#include "ops/cpu/cpu_kernels.h"

const ct__kernel_table ct__cpu_rnn_layers = {NULL, 0};
