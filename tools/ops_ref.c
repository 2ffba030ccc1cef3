/* SPDX-License-Identifier: Apache-2.0 */
/* tools/ops_ref.c: `corten ops [NAME]`, the reference of the registered op types, as Markdown,
 * read from the registry itself (ct_op_type_names, ct_op_type_get, ct_op_type_doc,
 * ct_kernel_get), so it cannot drift from the code: for each type what it computes, its slots
 * with their flags, its attributes with type and default, which dtypes have a kernel on which
 * device, and whether it has a gradient. docs/ops.md is its output for a CUDA build; the
 * `ops_reference` test compares the two. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <corten/corten.h>

#include "tool.h"

static void print_slots(const char *what, const ct_slot_def *slots, size_t n) {
  printf("- %s:", what);
  if (n == 0) printf(" none");
  for (size_t i = 0; i < n; i++) {
    unsigned f = slots[i].flags;
    printf("%s `%s`", i ? "," : "", slots[i].name);
    if (f & (CT_SLOT_OPTIONAL | CT_SLOT_MANY | CT_SLOT_ANY_TYPE)) {
      printf(" (%s%s%s%s%s)", f & CT_SLOT_OPTIONAL ? "optional" : "",
             (f & CT_SLOT_OPTIONAL) && (f & (CT_SLOT_MANY | CT_SLOT_ANY_TYPE)) ? ", " : "",
             f & CT_SLOT_MANY ? "many" : "",
             (f & CT_SLOT_MANY) && (f & CT_SLOT_ANY_TYPE) ? ", " : "",
             f & CT_SLOT_ANY_TYPE ? "any type" : "");
    }
  }
  printf("\n");
}

static void print_default(const ct_attr_def *a) {
  if (a->required) {
    printf("required");
    return;
  }
  const ct_attr_value *v = &a->value;
  switch (v->type) {
    case CT_ATTR_INT:
      printf("%lld", (long long)v->u.i);
      if (strcmp(a->name, "dtype") == 0) printf(" (%s)", ct_dtype_name((ct_dtype)v->u.i));
      break;
    case CT_ATTR_FLOAT: printf("%g", v->u.f); break;
    case CT_ATTR_BOOL: printf("%s", v->u.b ? "true" : "false"); break;
    case CT_ATTR_STRING: printf("\"%s\"", v->u.s ? v->u.s : ""); break;
    case CT_ATTR_INTS:
      printf("[");
      for (size_t i = 0; i < v->u.ints.n; i++) {
        printf("%s%lld", i ? ", " : "", (long long)v->u.ints.v[i]);
      }
      printf("]");
      break;
    case CT_ATTR_FLOATS:
      printf("[");
      for (size_t i = 0; i < v->u.floats.n; i++) printf("%s%g", i ? ", " : "", v->u.floats.v[i]);
      printf("]");
      break;
    default: printf("none"); break;
  }
}

/* "cpu: float32, float64; cuda: any dtype" */
static void print_kernels(const char *type) {
  static const struct {
    ct_device_kind kind;
    const char *name;
  } devices[] = {{CT_DEVICE_CPU, "cpu"}, {CT_DEVICE_CUDA, "cuda"}};
  printf("- kernels:");
  bool any_device = false;
  for (size_t k = 0; k < sizeof devices / sizeof devices[0]; k++) {
    bool first = true;
    for (int t = CT_DTYPE_UNDEFINED; t <= CT_UINT64; t++) {
      if (ct_kernel_get(type, devices[k].kind, (ct_dtype)t) == NULL) continue;
      printf("%s%s%s", first ? (any_device ? "; " : " ") : ", ", first ? devices[k].name : "",
             first ? ": " : "");
      printf("%s", t == CT_DTYPE_UNDEFINED ? "any dtype" : ct_dtype_name((ct_dtype)t));
      first = false;
      any_device = true;
    }
  }
  printf("%s\n", any_device ? "" : " none");
}

static void print_type(const ct_op_def *d) {
  printf("\n## `%s`\n\n", d->type);
  const char *doc = ct_op_type_doc(d->type);
  size_t len = strlen(d->type);
  if (doc != NULL) {
    printf("%s\n\n", doc);
  } else if (len > 5 && strcmp(d->type + len - 5, "_grad") == 0) { /* documented by its forward */
    printf("The gradient of `%.*s` (docs/design/backward.md): from the forward op's inputs and "
           "its outputs' gradients (`...@GRAD`), the gradients of its inputs.\n\n",
           (int)(len - 5), d->type);
  }
  print_slots("inputs", d->inputs, d->n_inputs);
  print_slots("outputs", d->outputs, d->n_outputs);
  print_kernels(d->type);
  if (d->dtype_attr != NULL) {
    printf("- the kernel is chosen by attribute `%s`\n", d->dtype_attr);
  } else {
    printf("- the kernel is chosen by the dtype of the first input\n");
  }
  printf("- gradient: %s\n", d->grad != NULL ? "yes" : "no");
  char onnx[1024];
  if (ct_onnx_names_of(d->type, onnx, sizeof onnx) > 0) printf("- imported from ONNX: %s\n", onnx);
  if (d->n_attrs == 0) return;
  printf("\n| attribute | type | default |\n|---|---|---|\n");
  for (size_t i = 0; i < d->n_attrs; i++) {
    printf("| `%s` | %s | ", d->attrs[i].name, ct_attr_type_name(d->attrs[i].value.type));
    print_default(&d->attrs[i]);
    printf(" |\n");
  }
}

int corten_ops(const char *name) {
  ct_op_def d;
  if (name != NULL) {
    if (ct_op_type_get(name, &d) != CT_OK) {
      fprintf(stderr, "corten ops: %s\n", ct_last_error());
      return 1;
    }
    print_type(&d);
    return 0;
  }
  size_t n = ct_op_type_names(NULL, 0);
  const char **names = malloc((n ? n : 1) * sizeof *names);
  if (names == NULL) {
    fprintf(stderr, "corten ops: out of memory for %zu op types\n", n);
    return 1;
  }
  n = ct_op_type_names(names, n);
  printf("# Op reference\n\n"
         "Every op type built into corten %d.%d.%d, as `corten ops` prints it from the registry of "
         "a\nCUDA build (do not edit: the `ops_reference` test fails when this file and the "
         "registry\ndiffer; regenerate it with `build/tools/corten ops > docs/ops.md`). Slots and "
         "attributes\nare PaddlePaddle's; a kernel for \"any dtype\" serves every dtype without "
         "one of its own.\n",
         CORTEN_VERSION_MAJOR, CORTEN_VERSION_MINOR, CORTEN_VERSION_PATCH);
  for (size_t i = 0; i < n; i++) {
    if (ct_op_type_get(names[i], &d) == CT_OK) print_type(&d);
  }
  free(names);
  return 0;
}
