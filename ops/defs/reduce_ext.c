/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/reduce_ext.c: op types being added for ONNX import (issue 33). */
#include "ops/defs.h"

const ct__def_table ct__reduce_ext_defs = {NULL, 0};
