/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/math.c: op types being added for ONNX import (issue 33). */
#include "ops/defs.h"

const ct__def_table ct__math_defs = {NULL, 0};
