/* SPDX-License-Identifier: Apache-2.0 */
/* core/interop/dlpack_capsule.c: the PyCapsule destructor of DLPack's Python protocol, for
 * bindings that hand corten's exports to Python (the corten package).
 *
 * DLPack's rule: a capsule still named "dltensor" (or "dltensor_versioned") when it is destroyed
 * was never consumed, so its destructor calls the managed tensor's deleter; a consumer renames
 * it "used_..." and owns the tensor. Python may destroy a capsule while an exception is pending
 * (a consumer that refused it), which code written in Python cannot run under, so this is C:
 * the pending exception is set aside and put back. The CPython functions are looked up in the
 * process when first needed, so the library links no Python and C programs never call this.
 *
 * When the process has no CPython symbols visible (Python loaded with RTLD_LOCAL into a program
 * that dlopens it, or a call from plain C) the destructor cannot read the capsule: it sets the
 * thread's error message (ct_last_error) and returns, and an unconsumed tensor is leaked, not
 * freed. Freeing it without the capsule's API is not possible, and crashing is worse. */
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

#include <corten/dlpack.h>

#include "common/common.h"

typedef struct py_api {
  int (*is_valid)(void *capsule, const char *name);
  void *(*get_pointer)(void *capsule, const char *name);
  void (*fetch)(void **type, void **value, void **tb);
  void (*restore)(void *type, void *value, void *tb);
} py_api;

static py_api api;
static int found; /* set once by look_up: all four functions are in the process */
static pthread_once_t look_up_once = PTHREAD_ONCE_INIT;

static void look_up(void) {
  *(void **)&api.is_valid = dlsym(RTLD_DEFAULT, "PyCapsule_IsValid");
  *(void **)&api.get_pointer = dlsym(RTLD_DEFAULT, "PyCapsule_GetPointer");
  *(void **)&api.fetch = dlsym(RTLD_DEFAULT, "PyErr_Fetch");
  *(void **)&api.restore = dlsym(RTLD_DEFAULT, "PyErr_Restore");
  found = api.is_valid && api.get_pointer && api.fetch && api.restore;
}

/* The CPython functions, looked up once (pthread_once: a destructor may run on any thread that
 * holds a GIL, and sub-interpreters may hold different ones); NULL when the process has none. */
static const py_api *python(void) {
  pthread_once(&look_up_once, look_up);
  return found ? &api : NULL;
}

void ct_dlpack_capsule_destructor(void *capsule) {
  const py_api *py = python();
  if (capsule == NULL) return;
  if (py == NULL) {
    ct__error(CT_ERR_UNSUPPORTED,
             "ct_dlpack_capsule_destructor: no CPython functions (PyCapsule_IsValid...) are "
             "visible in this process, so the capsule's tensor cannot be freed and is leaked; load "
             "Python's library with RTLD_GLOBAL");
    return;
  }
  void *type, *value, *tb;
  py->fetch(&type, &value, &tb);
  if (py->is_valid(capsule, "dltensor_versioned")) {
    DLManagedTensorVersioned *m = py->get_pointer(capsule, "dltensor_versioned");
    if (m != NULL && m->deleter != NULL) m->deleter(m);
  } else if (py->is_valid(capsule, "dltensor")) {
    DLManagedTensor *m = py->get_pointer(capsule, "dltensor");
    if (m != NULL && m->deleter != NULL) m->deleter(m);
  }
  py->restore(type, value, tb);
}
