/* SPDX-License-Identifier: Apache-2.0 */
/* ops/defs/index.c: op types being added for ONNX import (issue 33). */
#include "ops/defs.h"

const ct__def_table ct__index_defs = {NULL, 0};
