/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/onnx_rules.c: the one list of rule families (onnx/onnx_rules.h), and the look-up of the
 * row for an op type at an opset: the last row of that op type whose `since` is at or below it. */
#include <string.h>

#include "onnx/onnx_rules.h"

static const ox_rules *const families[] = {&ox_rules_math, &ox_rules_nn,    &ox_rules_shape,
                                           &ox_rules_ew,   &ox_rules_index, &ox_rules_reduce,
                                           &ox_rules_rnn};

const ox_rule *ox_rule_for(const char *op, size_t len, int64_t opset) {
  const ox_rule *best = NULL;
  for (size_t f = 0; f < sizeof families / sizeof families[0]; f++) {
    for (size_t i = 0; i < families[f]->n; i++) {
      const ox_rule *r = &families[f]->rows[i];
      if (strlen(r->op) != len || memcmp(r->op, op, len) != 0 || r->since > opset) continue;
      if (best == NULL || r->since > best->since) best = r;
    }
  }
  return best;
}
