/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/rnn_layers.c: op types being added for ONNX import (issue 33). */
#include "ops/defs.h"

const ct__def_table ct__rnn_layers_defs = {NULL, 0};
