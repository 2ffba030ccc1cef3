/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/rules_rnn.c: rules being added (issue 33). */
#include "onnx/onnx_rules.h"

const ox_rules ox_rules_rnn = {NULL, 0};
