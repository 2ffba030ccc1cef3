/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz target: op wiring. The input describes a few variables (name, dtype, small dims, or
 * none/another type) and a few ops (a type from the built-in list or an unknown one, slot names
 * right or wrong, variable names from the pool, attributes by name with values of any type and
 * shape lists with extreme extents); each op runs alone with ct_op_run and then all together
 * through a program and an executor (with and without freeing intermediates). Any status may
 * come back; nothing may crash, leak or hang, and a failure must be the thread's last status.
 * Host memory is capped (fuzz_util.h), so a shape asking for gigabytes is CT_ERR_OUT_OF_MEMORY. */
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const op_types[] = {
    "matmul", "elementwise_add", "elementwise_sub", "elementwise_mul", "elementwise_div",
    "relu", "scale", "cast", "assign", "fill_constant", "uniform_random", "gaussian_random",
    "sum", "reduce_sum", "mean", "softmax", "reshape", "transpose", "concat", "no_such_op"};
static const char *const slots[] = {"X", "Y", "Out", "Bogus"};
static const char *const attrs[] = {"axis", "bias", "bias_after_scale", "dim", "dtype",
                                    "keep_dim", "max", "mean", "min", "reverse", "scale",
                                    "seed", "shape", "std", "transpose_x", "transpose_y",
                                    "value", "nope"};
static const char *const vars[] = {"a", "b", "c", "d", "e", "f"};
static const ct_dtype dtypes[] = {CT_FLOAT32, CT_FLOAT64, CT_INT32, CT_INT64,
                                  CT_INT8,    CT_BOOL,    CT_FLOAT16, CT_UINT8};
#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static void make_var(fz_bytes *in, ct_scope *s, const char *name) {
  uint8_t kind = fz_u8(in) % 8;
  if (kind == 0) return; /* missing */
  ct_var *v = ct_scope_var(s, name);
  if (kind == 1) return; /* empty */
  if (kind == 2) {
    (void)ct_var_get_mutable(v, &ct_int64_type); /* another type */
    return;
  }
  ct_tensor *t = ct_var_tensor(v);
  int rank = fz_u8(in) % 5;
  int64_t d[4];
  for (int i = 0; i < rank; i++) d[i] = fz_u8(in) % 6;
  ct_ddim dims = ct_ddim_make(d, rank);
  if (kind == 3) {
    (void)ct_tensor_resize(t, dims); /* dims, no memory */
    return;
  }
  ct_dtype dt = dtypes[fz_u8(in) % N_OF(dtypes)];
  if (ct_tensor_resize(t, dims) != CT_OK) return;
  unsigned char *p = ct_tensor_mutable_data(t, dt, ct_cpu());
  if (p == NULL) return;
  size_t n = (size_t)ct_ddim_numel(dims) * ct_dtype_size(dt);
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(i * 37 + 11);
  if (dt == CT_BOOL) for (size_t i = 0; i < n; i++) p[i] &= 1;
}

static void set_attr(fz_bytes *in, ct_op *op) {
  const char *name = attrs[fz_u8(in) % N_OF(attrs)];
  int64_t ints[6];
  double floats[3];
  size_t n = fz_u8(in) % 7;
  for (size_t i = 0; i < n; i++) ints[i] = fz_dim(in, -2, 5);
  for (size_t i = 0; i < 3; i++) floats[i] = (double)(int8_t)fz_u8(in) / 4.0;
  switch (fz_u8(in) % 7) {
    case 0: (void)ct_op_set_attr_int(op, name, fz_dim(in, -3, 11)); break;
    case 1: (void)ct_op_set_attr_float(op, name, floats[0]); break;
    case 2: (void)ct_op_set_attr_bool(op, name, fz_u8(in) & 1); break;
    case 3: (void)ct_op_set_attr_string(op, name, "x"); break;
    case 4: (void)ct_op_set_attr_ints(op, name, n ? ints : NULL, n); break;
    case 5: (void)ct_op_set_attr_floats(op, name, floats, n % 4); break;
    default: (void)ct_op_set_attr_program(op, name, ct_program_new()); break;
  }
}

static ct_op *make_op(fz_bytes *in) {
  ct_op *op = ct_op_new(op_types[fz_u8(in) % N_OF(op_types)]);
  if (op == NULL) return NULL;
  int wirings = fz_u8(in) % 5;
  for (int w = 0; w < wirings; w++) {
    const char *slot = slots[fz_u8(in) % N_OF(slots)];
    const char *names[3];
    size_t n = fz_u8(in) % 4;
    for (size_t i = 0; i < n; i++) names[i] = vars[fz_u8(in) % N_OF(vars)];
    if (fz_u8(in) & 1) {
      (void)ct_op_set_inputs(op, slot, names, n);
    } else {
      (void)ct_op_set_outputs(op, slot, names, n);
    }
  }
  int n_attrs = fz_u8(in) % 4;
  for (int i = 0; i < n_attrs; i++) set_attr(in, op);
  return op;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fz_cap_host_memory();
  fz_bytes in = {data, size};
  ct_scope *s = ct_scope_new();
  FZ_CHECK(s != NULL);
  for (size_t i = 0; i < N_OF(vars); i++) make_var(&in, s, vars[i]);
  ct_program *p = ct_program_new();
  FZ_CHECK(p != NULL);
  int n_ops = 1 + fz_u8(&in) % 4;
  for (int i = 0; i < n_ops; i++) {
    ct_op *op = make_op(&in);
    if (op == NULL) continue;
    ct_status st = ct_op_run(op, s, ct_cpu());
    FZ_CHECK(st == CT_OK || st == ct_last_status());
    FZ_CHECK(ct_program_append(p, op) == CT_OK);
  }
  ct_executor_options opt = {.free_intermediates = fz_u8(&in) & 1};
  ct_executor *e = ct_executor_new_with(p, s, ct_cpu(), &opt);
  if (e != NULL) {
    for (int r = 0; r < 2; r++) {
      ct_status st = ct_executor_run(e);
      FZ_CHECK(st == CT_OK || st == ct_last_status());
    }
    ct_executor_free(e);
  }
  ct_program_free(p);
  ct_scope_free(s);
  return 0;
}
