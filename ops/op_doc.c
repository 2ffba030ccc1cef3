/* SPDX-License-Identifier: Apache-2.0 */
/* ops/op_doc.c: what each op type computes (ct_op_type_doc, ct_op_set_doc). The built-in types'
 * texts are static tables beside their definitions (ops/defs/<family>.c), installed when the
 * registry registers the built-ins; a caller's type gets a copy of its text. A type's text is
 * set once and never changes or goes away afterwards, so readers take it with one atomic load
 * and may keep the pointer. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/alloc.h"
#include "ops/defs.h"

static pthread_mutex_t doc_lock = PTHREAD_MUTEX_INITIALIZER;

ct_status ct__op_docs_install(const ct__builtins *b) {
  for (size_t t = 0; t < b->n_docs; t++) {
    for (size_t i = 0; i < b->docs[t]->n; i++) {
      const ct__op_doc *doc = &b->docs[t]->v[i];
      ct__opdef *d = ct__op_find(doc->type);
      if (d == NULL) {
        return ct__error(CT_ERR_NOT_FOUND, "documentation of op type '%s', which is not "
                         "registered", doc->type);
      }
      if (atomic_load(&d->doc) != NULL) {
        return ct__error(CT_ERR_ALREADY_EXISTS, "op type '%s' is documented twice", doc->type);
      }
      atomic_store(&d->doc, doc->text);
    }
  }
  return CT_OK;
}

const char *ct_op_type_doc(const char *type) {
  if (type == NULL) return NULL;
  const ct__opdef *d = ct__op_lookup(type);
  return d != NULL ? atomic_load(&d->doc) : NULL;
}

ct_status ct_op_set_doc(const char *type, const char *doc) {
  if (type == NULL || doc == NULL || doc[0] == '\0') {
    return ct__error(CT_ERR_INVALID_ARGUMENT, "ct_op_set_doc: the type name or the text is NULL "
                     "or empty");
  }
  ct__opdef *d = ct__ops_ready() == CT_OK ? ct__op_find(type) : NULL;
  if (d == NULL) {
    return ct__error(CT_ERR_NOT_FOUND, "ct_op_set_doc: no op type '%s' is registered: register "
                     "it with ct_op_register first", type);
  }
  size_t n = strlen(doc) + 1;
  char *copy = ct__malloc(n);
  if (copy == NULL) {
    return ct__error(CT_ERR_OUT_OF_MEMORY, "ct_op_set_doc: out of host memory for the %zu-byte "
                     "text of op type '%s'", n, type);
  }
  memcpy(copy, doc, n);
  pthread_mutex_lock(&doc_lock);
  bool taken = atomic_load(&d->doc) != NULL;
  if (!taken) {
    d->doc_owned = true;
    atomic_store(&d->doc, copy);
  }
  pthread_mutex_unlock(&doc_lock);
  if (taken) {
    free(copy);
    return ct__error(CT_ERR_ALREADY_EXISTS, "ct_op_set_doc: op type '%s' already has its "
                     "documentation (it is set once: readers keep the text)", type);
  }
  return CT_OK;
}

