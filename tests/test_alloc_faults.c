/* SPDX-License-Identifier: Apache-2.0 */
/* tests/test_alloc_faults.c: every allocation of the core's public calls (scopes, variables,
 * tensors and their views, external buffers, DLPack, parameter files) failed in turn
 * (tests/fault_sweep.h); the ops, programs and executors are in test_alloc_faults_ops.c. Built
 * where corten has CORTEN_FAULT_INJECTION (the sanitizer build). */
#include <corten/dlpack.h>

#include "fault_sweep.h"

static const float k12[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};

static void put(ct_scope *s, const char *name, ct_ddim dims) {
  ct_tensor *t = ct_var_tensor(ct_scope_var(s, name));
  ck_assert_ptr_nonnull(t);
  ck_assert_int_eq(ct_tensor_set_value(t, k12, dims, CT_FLOAT32, ct_cpu()), CT_OK);
}

static ct_status st_of(const void *made) { return made != NULL ? CT_OK : ct_last_status(); }

/* ---- Scopes and variables ---------------------------------------------------------------- */

static void no_setup(fs_fixture *f) { (void)f; }

static void scope_setup(fs_fixture *f) {
  f->s = ct_scope_new();
  ck_assert_ptr_nonnull(f->s);
  put(f->s, "a", CT_DIMS(3, 4));
  f->scope[0] = f->s;
  f->tensor[0] = ct_var_tensor(ct_scope_var(f->s, "a"));
}

static ct_status scope_new_call(fs_fixture *f) { return st_of(f->s = ct_scope_new()); }
static const fs_case scope_new = {"ct_scope_new", no_setup, scope_new_call, NULL, 0};

static ct_status scope_var_call(fs_fixture *f) { return st_of(ct_scope_var(f->s, "b")); }
static const fs_case scope_var = {"ct_scope_var", scope_setup, scope_var_call, NULL, 0};

/* A scope holding 40 variables, so that the names table has grown a few times. */
static void scope40_setup(fs_fixture *f) {
  scope_setup(f);
  for (int i = 0; i < 39; i++) {
    char name[16];
    snprintf(name, sizeof name, "v%d", i);
    ck_assert_ptr_nonnull(ct_scope_var(f->s, name));
  }
}

static ct_status scope_var_many_call(fs_fixture *f) {
  for (int i = 0; i < 40; i++) { /* 40 more: every growth of the table on the way */
    char name[16];
    snprintf(name, sizeof name, "w%d", i);
    if (ct_scope_find_local_var(f->s, name) == NULL && ct_scope_var(f->s, name) == NULL) {
      return ct_last_status();
    }
  }
  return CT_OK;
}
/* Watches nothing: the calls before the failing one made their variables. */
static const fs_case scope_var_40 = {"ct_scope_var x40", scope40_setup, scope_var_many_call, NULL,
                                     1};

static ct_status scope_kid_call(fs_fixture *f) { return st_of(ct_scope_new_kid(f->s)); }
static const fs_case scope_kid = {"ct_scope_new_kid", scope_setup, scope_kid_call, NULL, 0};

static ct_status scope_erase_call(fs_fixture *f) {
  const char *names[] = {"a"};
  (void)ct_scope_erase_vars(f->s, names, 1);
  ct_tensor *t = ct_var_tensor(ct_scope_var(f->s, "a")); /* reuses the erased variable */
  return t ? ct_tensor_set_value(t, k12, CT_DIMS(3, 4), CT_FLOAT32, ct_cpu()) : ct_last_status();
}
static void erase_setup(fs_fixture *f) {
  scope_setup(f);
  f->tensor[0] = NULL;
}
static ct_status scope_erase_reuse_call(fs_fixture *f) {
  const char *names[] = {"a"};
  (void)ct_scope_erase_vars(f->s, names, 1);
  return st_of(ct_scope_var(f->s, "c"));
}
static const fs_case scope_erase = {"ct_scope_erase_vars", erase_setup, scope_erase_call, NULL, 1};
static const fs_case scope_erase_var = {"ct_scope_erase_vars + ct_scope_var", erase_setup,
                                        scope_erase_reuse_call, NULL, 1};

static ct_status scope_rename_call(fs_fixture *f) {
  ct_status s = ct_scope_rename(f->s, "a", "renamed");
  if (s == CT_OK) s = ct_scope_rename(f->s, "renamed", "a");
  return s;
}
static const fs_case scope_rename = {"ct_scope_rename", scope_setup, scope_rename_call, NULL, 0};

static ct_status steps_call(fs_fixture *f) {
  ct_scope_list *l = ct_var_get_mutable(ct_scope_var(f->s, "steps"), &ct_scope_list_type);
  if (l == NULL) return ct_last_status();
  ct_status s = ct_scope_list_resize(l, f->s, 5);
  /* A failure leaves the scopes made so far in l, each a kid of the scope (step_scopes.h). */
  ck_assert_uint_eq(ct_scope_list_size(l), ct_scope_kid_count(f->s));
  return s;
}
static void steps_setup(fs_fixture *f) {
  scope_setup(f);
  ck_assert_ptr_nonnull(ct_var_get_mutable(ct_scope_var(f->s, "steps"), &ct_scope_list_type));
}
static const fs_case steps = {"ct_scope_list_resize", steps_setup, steps_call, NULL, 1};

static ct_status var_new_call(fs_fixture *f) { return st_of(f->v = ct_var_new()); }
static const fs_case var_new = {"ct_var_new", no_setup, var_new_call, NULL, 0};

static void var_setup(fs_fixture *f) {
  f->v = ct_var_new();
  ck_assert_ptr_nonnull(f->v);
}
static ct_status var_mutable_call(fs_fixture *f) {
  return st_of(ct_var_get_mutable(f->v, &ct_tensor_type));
}
static const fs_case var_mutable = {"ct_var_get_mutable", var_setup, var_mutable_call, NULL, 0};

/* ---- Tensors ------------------------------------------------------------------------------- */

static void tensors_setup(fs_fixture *f) {
  f->t = ct_tensor_new();
  f->u = ct_tensor_new();
  ck_assert_ptr_nonnull(f->t);
  ck_assert_ptr_nonnull(f->u);
  ck_assert_int_eq(ct_tensor_set_value(f->t, k12, CT_DIMS(3, 4), CT_FLOAT32, ct_cpu()), CT_OK);
  ck_assert_int_eq(ct_tensor_set_value(f->u, k12, CT_DIMS(2), CT_FLOAT32, ct_cpu()), CT_OK);
  f->tensor[0] = f->t;
  f->tensor[1] = f->u;
}

static ct_status tensor_new_call(fs_fixture *f) { return st_of(f->t = ct_tensor_new()); }
static const fs_case tensor_new = {"ct_tensor_new", no_setup, tensor_new_call, NULL, 0};

static ct_status mutable_call(fs_fixture *f) {
  if (ct_tensor_resize(f->u, CT_DIMS(64)) != CT_OK) return ct_last_status();
  return st_of(ct_tensor_mutable_data(f->u, CT_FLOAT32, ct_cpu()));
}
/* Resize itself allocates nothing; the failed mutable_data leaves the new dims, no memory. */
static const fs_case tensor_mutable = {"ct_tensor_mutable_data", tensors_setup, mutable_call, NULL,
                                       1};

static ct_status set_value_call(fs_fixture *f) {
  return ct_tensor_set_value(f->u, k12, CT_DIMS(12), CT_FLOAT32, ct_cpu());
}
static const fs_case tensor_set_value = {"ct_tensor_set_value", tensors_setup, set_value_call,
                                         NULL, FS_DROPS_MEMORY};

static ct_status copy_call(fs_fixture *f) { return ct_tensor_copy(f->u, f->t, ct_cpu()); }
static const fs_case tensor_copy = {"ct_tensor_copy", tensors_setup, copy_call, NULL,
                                    FS_DROPS_MEMORY};

static ct_status share_call(fs_fixture *f) { return ct_tensor_share(f->u, f->t); }
static ct_status slice_call(fs_fixture *f) { return ct_tensor_slice(f->u, f->t, 1, 2); }
static ct_status flatten_call(fs_fixture *f) { return ct_tensor_flatten_to_2d(f->u, f->t, 1); }
static const fs_case tensor_share = {"ct_tensor_share", tensors_setup, share_call, NULL, 0};
static const fs_case tensor_slice = {"ct_tensor_slice", tensors_setup, slice_call, NULL, 0};
static const fs_case tensor_flatten = {"ct_tensor_flatten_to_2d", tensors_setup, flatten_call,
                                       NULL, 0};

static void note_release(void *ctx) { ((fs_fixture *)ctx)->n_released++; }

static float ext_buf[8];
static ct_status wrap_call(fs_fixture *f) {
  ct_status s = ct_tensor_wrap(f->u, ext_buf, CT_DIMS(8), CT_FLOAT32, ct_cpu(), note_release, f);
  /* A failed wrap does not take the buffer: its release has not run. */
  ck_assert_int_eq(f->n_released, 0);
  return s;
}
static const fs_case tensor_wrap = {"ct_tensor_wrap", tensors_setup, wrap_call, NULL, 0};

/* ---- DLPack -------------------------------------------------------------------------------- */

static void free_export(fs_fixture *f) {
  DLManagedTensor *m = f->out;
  if (m != NULL) m->deleter(m);
}
static ct_status to_dlpack_call(fs_fixture *f) {
  DLManagedTensor *m = NULL;
  ct_status s = ct_tensor_to_dlpack(f->t, &m);
  if (s == CT_OK) f->out = m;
  return s;
}
static const fs_case to_dlpack = {"ct_tensor_to_dlpack", tensors_setup, to_dlpack_call,
                                  free_export, 0};

static int deleted;
static void dl_delete(DLManagedTensor *m) {
  deleted++;
  free(m);
}
static ct_status from_dlpack_call(fs_fixture *f) {
  static int64_t shape[1] = {8};
  DLManagedTensor *m = calloc(1, sizeof *m);
  ck_assert_ptr_nonnull(m);
  m->dl_tensor.data = ext_buf;
  m->dl_tensor.device = (DLDevice){kDLCPU, 0};
  m->dl_tensor.ndim = 1;
  m->dl_tensor.dtype = (DLDataType){kDLFloat, 32, 1};
  m->dl_tensor.shape = shape;
  m->deleter = dl_delete;
  deleted = 0;
  ct_status s = ct_tensor_from_dlpack(f->u, m);
  if (s != CT_OK) {
    ck_assert_int_eq(deleted, 0); /* still the caller's */
    free(m);
  }
  return s;
}
static const fs_case from_dlpack = {"ct_tensor_from_dlpack", tensors_setup, from_dlpack_call, NULL,
                                    0};

/* ---- Parameter files ----------------------------------------------------------------------- */

static void params_setup(fs_fixture *f) {
  scope_setup(f);
  put(f->s, "b", CT_DIMS(2, 2));
  put(f->s, "c", CT_DIMS(5));
  const char *dir = getenv("TMPDIR");
  snprintf(f->path, sizeof f->path, "%s/corten_faults_%d.params", dir ? dir : "/tmp",
           (int)getpid());
  const char *names[] = {"a"};
  ck_assert_int_eq(ct_params_save(f->path, f->s, names, 1), CT_OK); /* the old file */
  f->file = f->path;
  f->s2 = ct_scope_new();
  ck_assert_ptr_nonnull(f->s2);
  put(f->s2, "b", CT_DIMS(1));
  f->scope[1] = f->s2;
  f->tensor[1] = ct_var_tensor(ct_scope_var(f->s2, "b"));
}

static ct_status save_call(fs_fixture *f) { return ct_params_save(f->path, f->s, NULL, 0); }
static const fs_case params_save = {"ct_params_save", params_setup, save_call, NULL, 0};

static ct_status load_call(fs_fixture *f) { return ct_params_load(f->path, f->s2); }
static const fs_case params_load = {"ct_params_load", params_setup, load_call, NULL, 0};

static unsigned char file_bytes[4096];
static size_t file_len;
static void params_memory_setup(fs_fixture *f) {
  params_setup(f);
  FILE *fp = fopen(f->path, "rb");
  ck_assert_ptr_nonnull(fp);
  file_len = fread(file_bytes, 1, sizeof file_bytes, fp);
  fclose(fp);
}
static ct_status load_memory_call(fs_fixture *f) {
  return ct_params_load_memory(file_bytes, file_len, f->s2);
}
static const fs_case params_load_memory = {"ct_params_load_memory", params_memory_setup,
                                           load_memory_call, NULL, 0};

static ct_status tensor_save_call(fs_fixture *f) {
  return ct_tensor_save(f->path, ct_var_get_tensor(ct_scope_find_var(f->s, "c")));
}
static const fs_case tensor_save = {"ct_tensor_save", params_setup, tensor_save_call, NULL, 0};

static void tensor_file_setup(fs_fixture *f) {
  params_setup(f);
  ck_assert_int_eq(tensor_save_call(f), CT_OK);
}
static ct_status tensor_load_call(fs_fixture *f) {
  return ct_tensor_load(f->path, ct_var_tensor(ct_scope_find_var(f->s2, "b")));
}
static const fs_case tensor_load = {"ct_tensor_load", tensor_file_setup, tensor_load_call, NULL,
                                    0};

SWEEP_TEST(scope_new)
SWEEP_TEST(scope_var)
SWEEP_TEST(scope_var_40)
SWEEP_TEST(scope_kid)
SWEEP_TEST(scope_erase)
SWEEP_TEST(scope_erase_var)
SWEEP_TEST(scope_rename)
SWEEP_TEST(steps)
SWEEP_TEST(var_new)
SWEEP_TEST(var_mutable)
SWEEP_TEST(tensor_new)
SWEEP_TEST(tensor_mutable)
SWEEP_TEST(tensor_set_value)
SWEEP_TEST(tensor_copy)
SWEEP_TEST(tensor_share)
SWEEP_TEST(tensor_slice)
SWEEP_TEST(tensor_flatten)
SWEEP_TEST(tensor_wrap)
SWEEP_TEST(to_dlpack)
SWEEP_TEST(from_dlpack)
SWEEP_TEST(params_save)
SWEEP_TEST(params_load)
SWEEP_TEST(params_load_memory)
SWEEP_TEST(tensor_save)
SWEEP_TEST(tensor_load)

static Suite *make_suite(void) {
  Suite *s = suite_create("alloc_faults");
  CT_ADD_TEST(s, sweep_scope_new);
  CT_ADD_TEST(s, sweep_scope_var);
  CT_ADD_TEST(s, sweep_scope_var_40);
  CT_ADD_TEST(s, sweep_scope_kid);
  CT_ADD_TEST(s, sweep_scope_erase);
  CT_ADD_TEST(s, sweep_scope_erase_var);
  CT_ADD_TEST(s, sweep_scope_rename);
  CT_ADD_TEST(s, sweep_steps);
  CT_ADD_TEST(s, sweep_var_new);
  CT_ADD_TEST(s, sweep_var_mutable);
  CT_ADD_TEST(s, sweep_tensor_new);
  CT_ADD_TEST(s, sweep_tensor_mutable);
  CT_ADD_TEST(s, sweep_tensor_set_value);
  CT_ADD_TEST(s, sweep_tensor_copy);
  CT_ADD_TEST(s, sweep_tensor_share);
  CT_ADD_TEST(s, sweep_tensor_slice);
  CT_ADD_TEST(s, sweep_tensor_flatten);
  CT_ADD_TEST(s, sweep_tensor_wrap);
  CT_ADD_TEST(s, sweep_to_dlpack);
  CT_ADD_TEST(s, sweep_from_dlpack);
  CT_ADD_TEST(s, sweep_params_save);
  CT_ADD_TEST(s, sweep_params_load);
  CT_ADD_TEST(s, sweep_params_load_memory);
  CT_ADD_TEST(s, sweep_tensor_save);
  CT_ADD_TEST(s, sweep_tensor_load);
  return s;
}

CT_TEST_MAIN(make_suite)
