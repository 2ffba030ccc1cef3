/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: ct_params_load_memory and ct_tensor_load_memory on arbitrary bytes.
 * Promises checked besides "no crash, no leak, no hang": a failed load leaves the scope exactly
 * as it was (one variable, its tensor intact); a successful one leaves every entry as a CPU
 * tensor whose data can be read in full; a single-tensor load that fails leaves the tensor as
 * it was. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void read_all(const ct_tensor *t) {
  const unsigned char *p = ct_tensor_data(t, ct_tensor_dtype(t));
  FZ_CHECK(p != NULL);
  size_t n = (size_t)ct_tensor_numel(t) * ct_dtype_size(ct_tensor_dtype(t));
  FZ_CHECK(n <= ct_tensor_capacity(t));
  volatile unsigned char acc = 0;
  for (size_t i = 0; i < n; i += 61) acc ^= p[i];
  if (n > 0) acc ^= p[n - 1];
  (void)acc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_cap_host_memory();
  ct_scope *s = ct_scope_new();
  FZ_CHECK(s != NULL);
  const float old[3] = {1, 2, 3};
  ct_tensor *keep = ct_var_tensor(ct_scope_var(s, "keep"));
  FZ_CHECK(ct_tensor_set_value(keep, old, CT_DIMS(3), CT_FLOAT32, ct_cpu()) == CT_OK);

  ct_status st = ct_params_load_memory(data, size, s);
  if (st != CT_OK) {
    FZ_CHECK(st == ct_last_status());
    FZ_CHECK(st == CT_ERR_FORMAT || st == CT_ERR_OUT_OF_MEMORY || st == CT_ERR_TYPE_MISMATCH);
    FZ_CHECK(ct_scope_var_count(s) == 1);
    const float *k = ct_tensor_data(keep, CT_FLOAT32);
    FZ_CHECK(k != NULL && k[2] == 3.0f && ct_ddim_equal(ct_tensor_dims(keep), CT_DIMS(3)));
  } else {
    const char *names[64];
    size_t n = ct_scope_local_var_names(s, names, 64);
    for (size_t i = 0; i < n && i < 64; i++) {
      const ct_tensor *t = ct_var_get_tensor(ct_scope_find_local_var(s, names[i]));
      FZ_CHECK(t != NULL);
      FZ_CHECK(ct_place_equal(ct_tensor_place(t), ct_cpu()));
      read_all(t);
    }
  }
  ct_scope_free(s);

  ct_tensor *t = ct_tensor_new();
  FZ_CHECK(ct_tensor_set_value(t, old, CT_DIMS(3), CT_FLOAT32, ct_cpu()) == CT_OK);
  st = ct_tensor_load_memory(data, size, t);
  if (st != CT_OK) {
    FZ_CHECK(st == CT_ERR_FORMAT || st == CT_ERR_OUT_OF_MEMORY);
    FZ_CHECK(ct_ddim_equal(ct_tensor_dims(t), CT_DIMS(3)) && ct_tensor_dtype(t) == CT_FLOAT32);
  } else {
    read_all(t);
  }
  ct_tensor_free(t);
  return 0;
}
