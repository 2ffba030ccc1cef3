/* SPDX-License-Identifier: Apache-2.0 */
/* NVRTC and the table of compiled expression kernels (ops/expr/nvrtc.h), on the CPU: NVRTC needs
 * no GPU, so the generated sources compile to PTX and to a CUBIN here, and the table's use of the
 * disk cache (miss, compile, hit; a corrupt entry recompiled), its bound, the devices a dropped
 * entry's unload is told and a compile failure's report are checked for real. CORTEN_NVRTC
 * names the library (the build sets it from the toolkit it finds); without one only the
 * "missing" report is checked and the suite reports itself skipped (77). Links the static
 * library for the internal entry points. Each test runs in its own process (Check forks), so
 * each loads NVRTC and starts with an empty table afresh. */
#define _GNU_SOURCE /* mkdtemp, nftw (file_util.h), setenv */
#include <dlfcn.h>

#include "expr_util.h"
#include "file_util.h"

#include "ops/expr/nvrtc.h"

char *ct__expr_source_for(ct_tensor *dst, ct_assign mode, const ct_expr *e, const char *name);
char *ct__expr_param_kinds_for(ct_tensor *dst, ct_assign mode, const ct_expr *e);

/* The source of d = a * b + c (all of dtype dt; b broadcasts over dim 0 when bcast). */
static char *source(ct_dtype dt, bool bcast, double s) {
  ct_tensor *a = tensor_k(dt, CT_DIMS(4, 5), 1), *b = tensor_k(dt, CT_DIMS(bcast ? 1 : 4, 5), 2);
  ct_tensor *c = tensor_k(dt, CT_DIMS(4, 5), 3), *d = ct_tensor_new();
  ct_expr *e = BIN(ADD, BIN(MUL, LEAF(a), LEAF(b)), BIN(MUL, LEAF(c), ct_expr_scalar(s)));
  ck_assert_ptr_nonnull(e);
  char *src = ct__expr_source_for(d, CT_SAVETO, e, "ct_expr_kernel");
  ck_assert_msg(src != NULL, "%s", ct_last_error());
  ct_expr_free(e);
  ct_tensor *all[] = {a, b, c, d};
  for (int i = 0; i < 4; i++) ct_tensor_free(all[i]);
  return src;
}

/* Each test's disk cache: a fresh directory. */
static void use_cache_dir(void) {
  make_work_dir("expr-nvrtc");
  ck_assert_int_eq(setenv("CORTEN_KERNEL_CACHE", in_dir("kernels"), 1), 0);
}

static ct__kernel_stats stats(void) {
  ct__kernel_stats s;
  ct__kernels_stats(&s);
  return s;
}

START_TEST(every_dtype_compiles_to_ptx_and_to_a_cubin) {
  static const ct_dtype dts[] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16};
  for (int i = 0; i < 4; i++) {
    char *src = source(dts[i], i % 2 == 0, 2);
    void *bin = NULL;
    size_t n = 0;
    ck_assert_msg(ct__nvrtc_compile(src, "compute_80", &bin, &n) == CT_OK, "%s", ct_last_error());
    ck_assert_ptr_nonnull(strstr(bin, ".entry ct_expr_kernel")); /* PTX text, NUL-terminated */
    free(bin);
    ck_assert_msg(ct__nvrtc_compile(src, "sm_80", &bin, &n) == CT_OK, "%s", ct_last_error());
    ck_assert_uint_gt(n, 4);
    ck_assert_int_eq(memcmp(bin, "\x7f" "ELF", 4), 0);
    free(bin);
    free(src);
  }
}
END_TEST

/* The kinds of the compiled kernel's parameters as its PTX lists them: 'x' for a 64-bit
 * integer or pointer, 'f' and 'd' for float and double. */
static void ptx_kinds(const char *ptx, char *out, size_t cap) {
  size_t n = 0;
  const char *at = strstr(ptx, ".entry ct_expr_kernel(");
  ck_assert_ptr_nonnull(at);
  const char *end = strchr(at, ')');
  for (const char *q = strstr(at, ".param ."); q != NULL && q < end; q = strstr(q + 1, ".param .")) {
    ck_assert_uint_lt(n + 1, cap);
    out[n++] = strncmp(q, ".param .f32", 11) == 0 ? 'f' : strncmp(q, ".param .f64", 11) == 0 ? 'd'
             : strncmp(q, ".param .u64", 11) == 0 || strncmp(q, ".param .b64", 11) == 0 ? 'x'
                                                                                        : '?';
  }
  out[n] = '\0';
}

/* The parameters the CUDA engine passes (ct__expr_cuda_params) are those the kernel takes, in
 * number, order and type, for scalars, broadcasts along several dims, modes and every dtype. */
START_TEST(the_engine_passes_the_parameters_the_kernel_takes) {
  static const ct_dtype dts[] = {CT_FLOAT32, CT_FLOAT64, CT_FLOAT16, CT_BFLOAT16};
  for (int i = 0; i < 4; i++) {
    ct_dtype dt = dts[i];
    ct_tensor *a = tensor_k(dt, CT_DIMS(2, 3, 4), 1), *b = tensor_k(dt, CT_DIMS(3, 1), 2);
    ct_tensor *c = tensor_k(dt, CT_DIMS(2, 1, 4), 3), *one = tensor_k(dt, CT_DIMS(1), 4);
    ct_tensor *d = tensor_k(dt, CT_DIMS(2, 3, 4), 5);
    ct_expr *e = BIN(MAX, BIN(MUL, BIN(ADD, LEAF(a), LEAF(b)), ct_expr_scalar(1.5)),
                     BIN(SUB, LEAF(c), BIN(MUL, LEAF(one), ct_expr_scalar(-2))));
    ck_assert_ptr_nonnull(e);
    ct_assign mode = i % 2 ? CT_PLUSTO : CT_SAVETO;
    char *src = ct__expr_source_for(d, mode, e, "ct_expr_kernel");
    char *kinds = ct__expr_param_kinds_for(d, mode, e);
    ck_assert_ptr_nonnull(src);
    ck_assert_ptr_nonnull(kinds);
    void *ptx = NULL;
    size_t n = 0;
    ck_assert_msg(ct__nvrtc_compile(src, "compute_80", &ptx, &n) == CT_OK, "%s", ct_last_error());
    char got[64], want[64];
    ptx_kinds(ptx, got, sizeof got);
    /* 'p' (pointers) and 'i' (long long) are both 64-bit integers in PTX. */
    size_t k = 0;
    for (; kinds[k] != '\0'; k++) want[k] = kinds[k] == 'p' || kinds[k] == 'i' ? 'x' : kinds[k];
    want[k] = '\0';
    ck_assert_str_eq(got, want);
    /* dst, n, 4 leaves (5 with dst in PLUSTO), 2 scalars, 3 extents, b's stride along dim 1
     * and c's along dims 0 and 2. */
    ck_assert_uint_eq(strlen(kinds), (size_t)(2 + (mode == CT_PLUSTO ? 5 : 4) + 2 + 3 + 3));
    free(ptx);
    free(src);
    free(kinds);
    ct_expr_free(e);
    ct_tensor *all[] = {a, b, c, one, d};
    for (int j = 0; j < 5; j++) ct_tensor_free(all[j]);
  }
}
END_TEST

START_TEST(a_device_nvrtc_does_not_know_gets_ptx_of_an_older_one) {
  char t[32];
  ck_assert_int_eq(ct__nvrtc_target(9, 0, t, sizeof t), CT_OK);
  ck_assert_str_eq(t, "sm_90");
  ck_assert_int_eq(ct__nvrtc_target(99, 9, t, sizeof t), CT_OK);
  ck_assert_int_eq(strncmp(t, "compute_", 8), 0);
}
END_TEST

START_TEST(a_kernel_is_compiled_once_then_read_from_memory_then_from_disk) {
  use_cache_dir();
  char *src = source(CT_FLOAT32, true, 2);
  ct__kernel *k = ct__kernels_get(src, "compute_80");
  ck_assert_msg(k != NULL, "%s", ct_last_error());
  ck_assert_ptr_nonnull(strstr(k->bin, ".entry ct_expr_kernel"));
  ct__kernel_stats s = stats();
  ck_assert_uint_eq(s.compiles, 1);
  ck_assert_uint_eq(s.disk_hits, 0);
  ck_assert_int_eq(s.live, 1);
  ct__kernel *again = ct__kernels_get(src, "compute_80");
  ck_assert_ptr_eq(again, k); /* the same entry, from memory */
  s = stats();
  ck_assert_uint_eq(s.compiles, 1);
  ck_assert_uint_eq(s.memory_hits, 1);
  ct__kernels_put(again);
  ct__kernels_put(k);
  /* Another process (here: an emptied table) reads the binary from the disk cache. */
  ct__kernels_reset(0);
  k = ct__kernels_get(src, "compute_80");
  ck_assert_ptr_nonnull(k);
  s = stats();
  ck_assert_uint_eq(s.compiles, 0);
  ck_assert_uint_eq(s.disk_hits, 1);
  ck_assert_ptr_nonnull(strstr(k->bin, ".entry ct_expr_kernel"));
  ct__kernels_put(k);
  /* Another target is another kernel. */
  k = ct__kernels_get(src, "compute_90");
  ck_assert_ptr_nonnull(k);
  ck_assert_uint_eq(stats().compiles, 1);
  ct__kernels_put(k);
  free(src);
  remove_work_dir();
}
END_TEST

START_TEST(a_corrupt_cache_entry_is_recompiled) {
  use_cache_dir();
  char *src = source(CT_FLOAT64, false, 2);
  ct__kernels_put(ct__kernels_get(src, "compute_80"));
  ck_assert_uint_eq(stats().compiles, 1);
  /* Flip a byte near the end (the binary) of the one entry. */
  DIR *d = opendir(in_dir("kernels"));
  ck_assert_ptr_nonnull(d);
  char path[512] = "";
  for (struct dirent *de; (de = readdir(d)) != NULL;) {
    if (strstr(de->d_name, ".ctk") != NULL) {
      snprintf(path, sizeof path, "%s/%s", in_dir("kernels"), de->d_name);
    }
  }
  closedir(d);
  ck_assert_str_ne(path, "");
  FILE *f = fopen(path, "r+b");
  ck_assert_ptr_nonnull(f);
  ck_assert_int_eq(fseek(f, -10, SEEK_END), 0);
  int c = fgetc(f);
  ck_assert_int_eq(fseek(f, -10, SEEK_END), 0);
  fputc(c ^ 0x55, f);
  ck_assert_int_eq(fclose(f), 0);
  ct__kernels_reset(0);
  ct__kernel *k = ct__kernels_get(src, "compute_80");
  ck_assert_ptr_nonnull(k);
  ct__kernel_stats s = stats();
  ck_assert_uint_eq(s.disk_hits, 0);
  ck_assert_uint_eq(s.compiles, 1); /* not trusted: compiled again, and stored again */
  ck_assert_ptr_nonnull(strstr(k->bin, ".entry ct_expr_kernel"));
  ct__kernels_put(k);
  ct__kernels_reset(0);
  ct__kernels_put(ct__kernels_get(src, "compute_80"));
  ck_assert_uint_eq(stats().disk_hits, 1);
  free(src);
  remove_work_dir();
}
END_TEST

START_TEST(a_source_that_does_not_compile_is_a_device_error_with_the_log) {
  use_cache_dir();
  const char *bad = "extern \"C\" __global__ void ct_expr_kernel(float *d) { d[0] = nope; }\n";
  void *bin = NULL;
  size_t n = 0;
  ck_assert_int_eq(ct__nvrtc_compile(bad, "compute_80", &bin, &n), CT_ERR_DEVICE);
  ck_assert_ptr_null(bin);
  const char *m = ct_last_error();
  ck_assert_msg(strstr(m, "NVRTC could not compile") != NULL, "%s", m);
  ck_assert_msg(strstr(m, "\"nope\" is undefined") != NULL, "%s", m); /* NVRTC's own log */
  ck_assert_ptr_null(ct__kernels_get(bad, "compute_80"));
  ck_assert_int_eq(ct_last_status(), CT_ERR_DEVICE);
  ct__kernel_stats s = stats();
  ck_assert_uint_eq(s.compiles, 0);
  ck_assert_int_eq(s.live, 0);
  remove_work_dir();
}
END_TEST

START_TEST(the_table_keeps_at_most_its_bound_dropping_the_least_recently_used) {
  ck_assert_int_eq(setenv("CORTEN_KERNEL_CACHE", "off", 1), 0);
  ct__kernels_reset(2);
  char *src[3] = {source(CT_FLOAT32, false, 2), source(CT_FLOAT32, true, 2),
                  source(CT_FLOAT64, true, 2)};
  ct__kernels_put(ct__kernels_get(src[0], "compute_80"));
  ct__kernels_put(ct__kernels_get(src[1], "compute_80"));
  ct__kernels_put(ct__kernels_get(src[0], "compute_80")); /* src[1] is now the oldest */
  ct__kernel *held = ct__kernels_get(src[2], "compute_80");
  ct__kernel_stats s = stats();
  ck_assert_uint_eq(s.compiles, 3);
  ck_assert_uint_eq(s.evictions, 1);
  ck_assert_int_eq(s.live, 2);
  ct__kernels_put(ct__kernels_get(src[0], "compute_80")); /* still there */
  ck_assert_uint_eq(stats().compiles, 3);
  ct__kernels_put(ct__kernels_get(src[1], "compute_80")); /* dropped: compiled again */
  s = stats();
  ck_assert_uint_eq(s.compiles, 4);
  ck_assert_uint_eq(s.evictions, 2);
  ck_assert_int_eq(s.live, 2);
  /* An entry dropped while held stays valid until put. */
  ck_assert_ptr_nonnull(strstr(held->bin, ".entry ct_expr_kernel"));
  ct__kernels_put(held);
  for (int i = 0; i < 3; i++) free(src[i]);
  ct__kernels_reset(0);
}
END_TEST

/* What the device engine's unload was given, by a stand-in that records it. */
static struct {
  int calls;
  void *handle;
  uint64_t devices;
} unloaded;

static void record_unload(void *handle, uint64_t devices) {
  unloaded.calls++;
  unloaded.handle = handle;
  unloaded.devices = devices;
}

/* The unload of a dropped entry is told the devices it was launched on (bit 63 standing for any
 * from 63 on), so the device engine waits for those only; one never launched waits for none. */
START_TEST(a_dropped_kernel_is_unloaded_with_the_devices_it_was_launched_on) {
  ck_assert_int_eq(setenv("CORTEN_KERNEL_CACHE", "off", 1), 0);
  ct__kernels_reset(1);
  char *src[2] = {source(CT_FLOAT32, false, 2), source(CT_FLOAT32, true, 2)};
  static int lib_a, lib_b, fn;
  ct__kernel *k = ct__kernels_get(src[0], "compute_80");
  ck_assert_msg(k != NULL, "%s", ct_last_error());
  ck_assert(ct__kernels_attach(k, &lib_a, &fn, record_unload));
  ct__kernels_launching(k, 3);
  ct__kernels_launching(k, 3);
  ct__kernels_launching(k, 70);
  ct__kernels_put(k);
  ck_assert_int_eq(unloaded.calls, 0); /* still listed */
  k = ct__kernels_get(src[1], "compute_80"); /* drops src[0]'s entry: the bound is 1 */
  ck_assert_ptr_nonnull(k);
  ck_assert_int_eq(unloaded.calls, 1);
  ck_assert_ptr_eq(unloaded.handle, &lib_a);
  ck_assert_uint_eq(unloaded.devices, ((uint64_t)1 << 3) | ((uint64_t)1 << 63));
  ck_assert(ct__kernels_attach(k, &lib_b, &fn, record_unload));
  ct__kernels_put(k);
  ct__kernels_reset(0);
  ck_assert_int_eq(unloaded.calls, 2);
  ck_assert_ptr_eq(unloaded.handle, &lib_b);
  ck_assert_uint_eq(unloaded.devices, 0);
  for (int i = 0; i < 2; i++) free(src[i]);
}
END_TEST

static Suite *expr_nvrtc_suite(void) {
  Suite *s = suite_create("expr_nvrtc");
  CT_ADD_TEST(s, every_dtype_compiles_to_ptx_and_to_a_cubin);
  CT_ADD_TEST(s, the_engine_passes_the_parameters_the_kernel_takes);
  CT_ADD_TEST(s, a_device_nvrtc_does_not_know_gets_ptx_of_an_older_one);
  CT_ADD_TEST(s, a_kernel_is_compiled_once_then_read_from_memory_then_from_disk);
  CT_ADD_TEST(s, a_corrupt_cache_entry_is_recompiled);
  CT_ADD_TEST(s, a_source_that_does_not_compile_is_a_device_error_with_the_log);
  CT_ADD_TEST(s, the_table_keeps_at_most_its_bound_dropping_the_least_recently_used);
  CT_ADD_TEST(s, a_dropped_kernel_is_unloaded_with_the_devices_it_was_launched_on);
  return s;
}

START_TEST(a_missing_nvrtc_is_unsupported_naming_the_library_and_the_fix) {
  ck_assert_int_eq(setenv("CORTEN_NVRTC", "libnvrtc-not-here.so.0", 1), 0);
  ck_assert_int_eq(ct__nvrtc_available(), CT_ERR_UNSUPPORTED);
  const char *m = ct_last_error();
  ck_assert_msg(strstr(m, "libnvrtc-not-here.so.0") != NULL, "%s", m);
  ck_assert_msg(strstr(m, "LD_LIBRARY_PATH") != NULL, "%s", m);
  ck_assert_ptr_null(ct__kernels_get("extern \"C\" __global__ void k() {}", "compute_80"));
  ck_assert_int_eq(ct_last_status(), CT_ERR_UNSUPPORTED);
  ck_assert_str_eq(ct__nvrtc_version(), "");
}
END_TEST

int main(void) {
  Suite *missing = suite_create("expr_nvrtc_missing");
  CT_ADD_TEST(missing, a_missing_nvrtc_is_unsupported_naming_the_library_and_the_fix);
  int failed = ct_test_run(missing);
  /* Whether NVRTC loads, asked here without loading it into this process (the tests do). */
  const char *env = getenv("CORTEN_NVRTC");
  void *lib = dlopen(env != NULL && env[0] != '\0' ? env : "libnvrtc.so", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    printf("skipped: no NVRTC to load (%s): set CORTEN_NVRTC to libnvrtc's path\n", dlerror());
    return failed != 0 ? EXIT_FAILURE : 77;
  }
  failed += ct_test_run(expr_nvrtc_suite());
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
