/* SPDX-License-Identifier: Apache-2.0 */
/* onnx/onnx_rules.c: the one list of rule families (onnx/onnx_rules.h), and the look-up of the
 * row for an op type at an opset: the last row of that op type whose `since` is at or below it. */
#include <stdio.h>
#include <string.h>

#include <corten/onnx.h>

#include "onnx/onnx_rules.h"

/* The families and their domains: NULL is the default domain (ai.onnx). */
static const struct {
  const ox_rules *rules;
  const char *domain;
} families[] = {{&ox_rules_math, NULL},  {&ox_rules_nn, NULL},     {&ox_rules_shape, NULL},
                {&ox_rules_ew, NULL},    {&ox_rules_index, NULL},  {&ox_rules_reduce, NULL},
                {&ox_rules_rnn, NULL},   {&ox_rules_train, "ai.onnx.preview.training"},
                {&ox_rules_misc, NULL},
                {&ox_rules_quant, NULL},
                {&ox_rules_resample, NULL},
                {&ox_rules_conv, NULL},
                {&ox_rules_pool, NULL},
                {&ox_rules_corten, "ai.corten"},
                {&ox_rules_ms, "com.microsoft"}};

#define N_FAMILIES (sizeof families / sizeof families[0])

/* Whether family f is of the domain named by the dlen bytes at domain. */
static bool of_domain(size_t f, const char *domain, size_t dlen) {
  const char *d = families[f].domain;
  if (dlen == 0 || (dlen == 7 && memcmp(domain, "ai.onnx", 7) == 0)) return d == NULL;
  return d != NULL && strlen(d) == dlen && memcmp(d, domain, dlen) == 0;
}

const ox_rule *ox_rule_for(const char *domain, size_t dlen, const char *op, size_t len,
                           int64_t opset) {
  const ox_rule *best = NULL;
  for (size_t f = 0; f < N_FAMILIES; f++) {
    if (!of_domain(f, domain, dlen)) continue;
    for (size_t i = 0; i < families[f].rules->n; i++) {
      const ox_rule *r = &families[f].rules->rows[i];
      bool any = strcmp(r->op, "*") == 0; /* ai.corten: every op type */
      if (!any && (strlen(r->op) != len || memcmp(r->op, op, len) != 0)) continue;
      if (r->since > opset) continue;
      if (best == NULL || r->since > best->since) best = r;
    }
  }
  return best;
}

/* Whether the comma-separated list names `type` as one of its entries. */
static bool lists(const char *list, const char *type) {
  size_t n = strlen(type);
  for (const char *p = list; p != NULL && *p;) {
    while (*p == ' ' || *p == ',') p++;
    const char *end = p;
    while (*end && *end != ',' && *end != ' ') end++;
    if ((size_t)(end - p) == n && memcmp(p, type, n) == 0) return true;
    p = end;
  }
  return false;
}

size_t ct_onnx_names_of(const char *type, char *buf, size_t cap) {
  size_t count = 0, pos = 0;
  if (buf != NULL && cap > 0) buf[0] = '\0';
  if (type == NULL) return 0;
  for (size_t f = 0; f < N_FAMILIES; f++) {
    const char *domain = families[f].domain;
    for (size_t i = 0; i < families[f].rules->n; i++) {
      const ox_rule *r = &families[f].rules->rows[i];
      if (r->corten == NULL || !lists(r->corten, type)) continue;
      if (buf != NULL && pos + 1 < cap) {
        int w = snprintf(buf + pos, cap - pos, "%s%s (%s%s%d)", count ? ", " : "", r->op,
                         domain ? domain : "", domain ? " " : "", r->since);
        if (w > 0) pos += (size_t)w < cap - pos ? (size_t)w : cap - pos - 1;
      }
      count++;
    }
  }
  return count;
}
