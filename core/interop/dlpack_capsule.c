/* SPDX-License-Identifier: Apache-2.0 */
/* core/interop/dlpack_capsule.c: the PyCapsule destructor of DLPack's Python protocol, for
 * bindings that hand corten's exports to Python (the corten package).
 *
 * DLPack's rule: a capsule still named "dltensor" (or "dltensor_versioned") when it is destroyed
 * was never consumed, so its destructor calls the managed tensor's deleter; a consumer renames
 * it "used_..." and owns the tensor. Python may destroy a capsule while an exception is pending
 * (a consumer that refused it), which code written in Python cannot run under, so this is C:
 * the pending exception is set aside and put back. The CPython functions are looked up in the
 * process when first needed, so the library links no Python and C programs never call this. */
#include <dlfcn.h>
#include <stddef.h>

#include <corten/dlpack.h>

typedef struct py_api {
  int (*is_valid)(void *capsule, const char *name);
  void *(*get_pointer)(void *capsule, const char *name);
  void (*fetch)(void **type, void **value, void **tb);
  void (*restore)(void *type, void *value, void *tb);
} py_api;

/* Called with the GIL held, which serialises the first lookup. */
static const py_api *python(void) {
  static py_api api;
  static int state; /* 0 not looked up, 1 found, -1 missing */
  if (state == 0) {
    *(void **)&api.is_valid = dlsym(RTLD_DEFAULT, "PyCapsule_IsValid");
    *(void **)&api.get_pointer = dlsym(RTLD_DEFAULT, "PyCapsule_GetPointer");
    *(void **)&api.fetch = dlsym(RTLD_DEFAULT, "PyErr_Fetch");
    *(void **)&api.restore = dlsym(RTLD_DEFAULT, "PyErr_Restore");
    state = api.is_valid && api.get_pointer && api.fetch && api.restore ? 1 : -1;
  }
  return state == 1 ? &api : NULL;
}

void ct_dlpack_capsule_destructor(void *capsule) {
  const py_api *py = python();
  if (py == NULL || capsule == NULL) return;
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
