/* SPDX-License-Identifier: Apache-2.0 */
/* core/variable/variable.c: a type-erased value behind a static type descriptor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "common/common.h"
#include "variable/variable_impl.h"

#define DEFAULT_ALIGN (alignof(max_align_t))

_Static_assert(offsetof(ct_var, inline_obj) == 64,
               "the inline storage starts 64 bytes into the variable (variable_impl.h)");

void ct__var_init(ct_var *v) {
  v->head.type = NULL;
  v->head.obj = NULL;
  atomic_init(&v->name, NULL);
  atomic_init(&v->name_len, 0);
  v->heap_name = NULL;
  v->owner = NULL;
  v->next_free = NULL;
}

ct_var *ct_var_new(void) {
  ct_var *v = ct__small_alloc(CT__VAR_BYTES);
  if (v == NULL) {
    return ct__error_null(CT_ERR_OUT_OF_MEMORY, "ct_var_new: out of host memory for a variable");
  }
  ct__var_init(v);
  return v;
}

/* The name for messages: "variable 'fc1.w'" or "standalone variable". */
static const char *label_of(const ct_var *v, char *buf, size_t cap) {
  const char *n = ct_var_name(v);
  if (n[0] == '\0') return "standalone variable";
  snprintf(buf, cap, "variable '%s'", n);
  return buf;
}

void ct_var_clear(ct_var *v) {
  if (v == NULL || v->head.type == NULL) return;
  const ct_type *t = v->head.type;
  void *obj = v->head.obj;
  v->head.type = NULL; /* empty before destroy runs: a destroy that looks at v sees it empty */
  v->head.obj = NULL;
  if (t->destroy) t->destroy(obj);
  if (obj != (void *)v->inline_obj) free(obj);
}

void ct_var_free(ct_var *v) {
  if (v == NULL) return;
  if (v->owner != NULL) {
    char buf[96];
    ct__error(CT_ERR_INVALID_ARGUMENT,
              "ct_var_free: %s belongs to a scope: erase it with ct_scope_erase_vars instead",
              label_of(v, buf, sizeof buf));
    return;
  }
  ct_var_clear(v);
  ct__small_free(v, CT__VAR_BYTES);
}

/* A type's name for messages; a type may leave it NULL. */
static const char *tname(const ct_type *type) {
  return type->name != NULL ? type->name : "(unnamed type)";
}

static int type_valid(const ct_type *type) {
  size_t a = type->align ? type->align : DEFAULT_ALIGN;
  return type->size > 0 && (a & (a - 1)) == 0;
}

CT__COLD static void *get_mutable_slow(ct_var *v, const ct_type *type) {
  char buf[96];
  if (v == NULL || type == NULL) {
    return ct__error_null(CT_ERR_INVALID_ARGUMENT, "ct_var_get_mutable: %s is NULL",
                          v == NULL ? "the variable" : "the type");
  }
  if (v->head.type != NULL) {
    return ct__error_null(CT_ERR_TYPE_MISMATCH,
                          "%s holds %s, asked for %s: get it as %s, or ct_var_clear it first",
                          label_of(v, buf, sizeof buf), tname(v->head.type), tname(type),
                          tname(v->head.type));
  }
  if (!type_valid(type)) {
    return ct__error_null(CT_ERR_INVALID_ARGUMENT,
                          "ct_var_get_mutable: type '%s' has size %zu and align %zu: a type "
                          "needs a size > 0 and a power-of-two align (or 0)",
                          tname(type), type->size, type->align);
  }
  size_t align = type->align ? type->align : DEFAULT_ALIGN;
  void *obj;
  if (type->size <= CT__VAR_INLINE && align <= 16) {
    obj = v->inline_obj;
  } else {
    /* aligned_alloc wants a size that is a multiple of the alignment it is given. */
    size_t a = align < sizeof(void *) ? sizeof(void *) : align;
    size_t size = (type->size + a - 1) & ~(a - 1);
    /* size < type->size: the rounding wrapped, no allocator can provide it */
    obj = size < type->size ? NULL : ct__aligned_alloc(a, size);
    if (obj == NULL) {
      return ct__error_null(CT_ERR_OUT_OF_MEMORY, "%s: out of host memory for a %s of %zu bytes",
                            label_of(v, buf, sizeof buf), tname(type), type->size);
    }
  }
  memset(obj, 0, type->size);
  if (type->init) type->init(obj);
  v->head.obj = obj;
  v->head.type = type;
  return obj;
}

void *(ct_var_get_mutable)(ct_var *v, const ct_type *type) {
  if (CT__LIKELY(v != NULL && type != NULL && v->head.type == type)) return v->head.obj;
  /* Creating a small value inside an empty variable (a tensor, an id): the common way a value
   * appears, kept off the cold path (which handles errors and heap-held values). */
  if (CT__LIKELY(v != NULL && type != NULL && v->head.type == NULL && type->size > 0 &&
                 type->size <= CT__VAR_INLINE && type->align <= 16 &&
                 (type->align & (type->align - 1)) == 0)) {
    void *obj = v->inline_obj;
    memset(obj, 0, type->size);
    if (type->init) type->init(obj);
    v->head.obj = obj;
    v->head.type = type;
    return obj;
  }
  return get_mutable_slow(v, type);
}

CT__COLD static const void *get_slow(const ct_var *v, const ct_type *type) {
  char buf[96];
  if (v == NULL || type == NULL) {
    return ct__error_null(CT_ERR_INVALID_ARGUMENT, "ct_var_get: %s is NULL",
                          v == NULL ? "the variable" : "the type");
  }
  if (v->head.type == NULL) {
    return ct__error_null(CT_ERR_UNINITIALIZED,
                          "%s holds nothing, asked for %s: create the value with "
                          "ct_var_get_mutable first",
                          label_of(v, buf, sizeof buf), tname(type));
  }
  return ct__error_null(CT_ERR_TYPE_MISMATCH, "%s holds %s, asked for %s: get it as %s",
                        label_of(v, buf, sizeof buf), tname(v->head.type), tname(type),
                          tname(v->head.type));
}

const void *(ct_var_get)(const ct_var *v, const ct_type *type) {
  if (CT__LIKELY(v != NULL && type != NULL && v->head.type == type)) return v->head.obj;
  return get_slow(v, type);
}

bool ct_var_is(const ct_var *v, const ct_type *type) {
  return v != NULL && type != NULL && v->head.type == type;
}

const ct_type *ct_var_type(const ct_var *v) { return v ? v->head.type : NULL; }

const char *ct_var_name(const ct_var *v) {
  if (v == NULL) return "";
  const char *n = atomic_load_explicit((const char *_Atomic *)&v->name, memory_order_acquire);
  return n ? n : "";
}

const ct_type ct_int64_type = {
    .name = "int64", .size = sizeof(int64_t), .align = alignof(int64_t), .init = NULL,
    .destroy = NULL};
