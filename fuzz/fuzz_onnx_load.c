/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: ct_onnx_load_buffer on arbitrary bytes (seeded from ONNX's conformance models).
 * Promises checked besides "no crash, no leak, no hang": a failed load returns NULL with one of
 * its documented statuses and leaves the scope exactly as it was (one variable, its tensor
 * intact); a successful one names every input and output, and its program can be given to an
 * executor and run (the run may fail, the inputs being empty, but must not crash). */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_cap_host_memory();
  ct_scope *s = ct_scope_new();
  FZ_CHECK(s != NULL);
  const float old[3] = {1, 2, 3};
  ct_tensor *keep = ct_var_tensor(ct_scope_var(s, "keep"));
  FZ_CHECK(ct_tensor_set_value(keep, old, CT_DIMS(3), CT_FLOAT32, ct_cpu()) == CT_OK);

  ct_onnx_model *m = ct_onnx_load_buffer(data, size, s);
  if (m == NULL) {
    ct_status st = ct_last_status();
    FZ_CHECK(st == CT_ERR_FORMAT || st == CT_ERR_UNSUPPORTED || st == CT_ERR_OUT_OF_MEMORY ||
             st == CT_ERR_ALREADY_EXISTS);
    FZ_CHECK(ct_scope_var_count(s) == 1);
    const float *k = ct_tensor_data(keep, CT_FLOAT32);
    FZ_CHECK(k != NULL && k[2] == 3.0f && ct_ddim_equal(ct_tensor_dims(keep), CT_DIMS(3)));
  } else {
    for (size_t i = 0; i < ct_onnx_input_count(m); i++) FZ_CHECK(ct_onnx_input_name(m, i) != NULL);
    for (size_t i = 0; i < ct_onnx_output_count(m); i++) FZ_CHECK(ct_onnx_output_name(m, i) != NULL);
    ct_executor *e = ct_executor_new(ct_onnx_program(m), s, ct_cpu());
    if (e != NULL) (void)ct_executor_run(e);
    ct_executor_free(e);
    ct_onnx_free(m);
  }
  ct_scope_free(s);
  return 0;
}
