/* SPDX-License-Identifier: Apache-2.0 */
/* ONNX import (corten/onnx.h): models written byte by byte (tests/onnx_util.h) load into a scope
 * and run; symbolic dims take any size; every node corten cannot import is named in one message;
 * malformed files (cut at every length, dims that overflow or are negative, raw_data of the wrong
 * size, a name nothing defines, a cycle, deep nesting) fail with CT_ERR_FORMAT naming the field;
 * external data is read beside the model and nowhere else; and any failure leaves the scope as it
 * was. */
#define _GNU_SOURCE /* mkdtemp, nftw (file_util.h) */
#include "file_util.h"
#include "onnx_util.h"
#include "op_util.h"

enum { FLOAT = 1, INT64 = 7 };

/* y = relu(x @ W + b), x [N, 3] with N symbolic, W [3, 2], b [2]. */
static pb mlp_graph(void) {
  static const float w[6] = {1, 0, 0, 1, 1, 1}, b[2] = {-4, 1};
  static const int64_t wd[2] = {3, 2}, bd[1] = {2}, xd[2] = {-1, 3}, yd[2] = {-1, 2};
  pb g = {0}, t, n, v;
  n = ox_node_pb("MatMul", (const char *[]){"x", "W", NULL}, (const char *[]){"xw", NULL});
  pb_msg(&g, 1, &n);
  n = ox_node_pb("Add", (const char *[]){"xw", "b", NULL}, (const char *[]){"z", NULL});
  pb_msg(&g, 1, &n);
  n = ox_node_pb("Relu", (const char *[]){"z", NULL}, (const char *[]){"y", NULL});
  pb_msg(&g, 1, &n);
  pb_str(&g, 2, "mlp");
  t = ox_tensor_pb("W", FLOAT, wd, 2, w, sizeof w);
  pb_msg(&g, 5, &t);
  t = ox_tensor_pb("b", FLOAT, bd, 1, b, sizeof b);
  pb_msg(&g, 5, &t);
  v = ox_value_pb("x", FLOAT, xd, 2);
  pb_msg(&g, 11, &v);
  v = ox_value_pb("y", FLOAT, yd, 2);
  pb_msg(&g, 12, &v);
  return g;
}

static pb mlp_model(void) {
  pb g = mlp_graph();
  return ox_model_pb(&g, 13);
}

/* Runs the loaded program with x = rows of (i, i+1, i+2) and checks y. */
static void run_mlp(ct_onnx_model *m, ct_scope *s, int64_t rows) {
  float x[24];
  for (int64_t i = 0; i < rows * 3; i++) x[i] = (float)i;
  ct_tensor *xt = ct_var_tensor(ct_scope_find_var(s, "x"));
  ck_assert_int_eq(ct_tensor_set_value(xt, x, CT_DIMS(rows, 3), CT_FLOAT32, ct_cpu()), CT_OK);
  ct_executor *e = ct_executor_new(ct_onnx_program(m), s, ct_cpu());
  ck_assert_msg(e != NULL && ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  const ct_tensor *y = ct_var_get_tensor(ct_scope_find_var(s, "y"));
  ck_assert(ct_ddim_equal(ct_tensor_dims(y), CT_DIMS(rows, 2)));
  const float *p = ct_tensor_data(y, CT_FLOAT32);
  for (int64_t r = 0; r < rows; r++) {
    float a = x[3 * r], b = x[3 * r + 1], c = x[3 * r + 2];
    float y0 = a + c - 4, y1 = b + c + 1;
    ck_assert(p[2 * r] == (y0 > 0 ? y0 : 0));
    ck_assert(p[2 * r + 1] == (y1 > 0 ? y1 : 0));
  }
  ct_executor_free(e);
}

START_TEST(a_model_loads_and_runs_at_any_batch) {
  pb m = mlp_model();
  ct_scope *s = ct_scope_new();
  ct_onnx_model *om = ct_onnx_load_buffer(m.p, m.n, s);
  ck_assert_msg(om != NULL, "%s", ct_last_error());
  ck_assert_uint_eq(ct_onnx_input_count(om), 1);
  ck_assert_str_eq(ct_onnx_input_name(om, 0), "x");
  ck_assert_uint_eq(ct_onnx_output_count(om), 1);
  ck_assert_str_eq(ct_onnx_output_name(om, 0), "y");
  ck_assert_ptr_null(ct_onnx_input_name(om, 1));
  ck_assert_int_eq(ct_onnx_opset(om), 13);
  ct_ddim d;
  ct_dtype dt;
  ck_assert_int_eq(ct_onnx_input_info(om, 0, &d, &dt), CT_OK);
  ck_assert(ct_ddim_equal(d, CT_DIMS(-1, 3)) && dt == CT_FLOAT32);
  CT_ASSERT_FAILS(ct_onnx_input_info(om, 1, &d, &dt), CT_ERR_OUT_OF_RANGE);
  ck_assert_int_eq(ct_onnx_output_info(om, 0, &d, &dt), CT_OK);
  ck_assert(ct_ddim_equal(d, CT_DIMS(-1, 2)) && dt == CT_FLOAT32);
  CT_ASSERT_FAILS(ct_onnx_output_info(om, 1, &d, &dt), CT_ERR_OUT_OF_RANGE);
  CT_ASSERT_FAILS(ct_onnx_output_info(om, 0, NULL, &dt), CT_ERR_INVALID_ARGUMENT);
  run_mlp(om, s, 1);
  run_mlp(om, s, 8); /* the symbolic batch dim: one load, any size */
  ct_onnx_free(om);
  ct_scope_free(s);
  free(m.p);
}
END_TEST

START_TEST(initializers_become_variables_of_the_scope) {
  pb m = mlp_model();
  ct_scope *s = ct_scope_new();
  ct_onnx_model *om = ct_onnx_load_buffer(m.p, m.n, s);
  ck_assert_ptr_nonnull(om);
  const ct_tensor *w = ct_var_get_tensor(ct_scope_find_var(s, "W"));
  ck_assert(ct_ddim_equal(ct_tensor_dims(w), CT_DIMS(3, 2)) && ct_tensor_dtype(w) == CT_FLOAT32);
  const float *p = ct_tensor_data(w, CT_FLOAT32);
  ck_assert(p[0] == 1 && p[1] == 0 && p[4] == 1 && p[5] == 1);
  /* x exists, empty, for the caller to fill, and the output y, empty until a run; W, b, x and
   * y are all the load made. */
  ck_assert(!ct_tensor_has_memory(ct_var_get_tensor(ct_scope_find_var(s, "x"))));
  ck_assert_ptr_nonnull(ct_scope_find_local_var(s, "y"));
  ck_assert(!ct_tensor_has_memory(ct_var_get_tensor(ct_scope_find_var(s, "y"))));
  ck_assert_uint_eq(ct_scope_var_count(s), 4);
  ct_onnx_free(om);
  /* The variables outlive the model. */
  ck_assert_ptr_nonnull(ct_scope_find_var(s, "W"));
  ct_scope_free(s);
  free(m.p);
}
END_TEST

/* Two nodes of op types nobody maps: one message names both, and the scope stays empty. */
/* An output another node reads (t = Relu(x), y = Identity(t), z = Exp(y); outputs y and z) holds
 * its value after an optimized run: the load makes the outputs the caller's variables, which the
 * passes (assign_elision here) never take away. */
START_TEST(an_output_another_node_reads_survives_the_passes) {
  static const int64_t xd[1] = {3};
  pb g = {0}, n, v;
  n = ox_node_pb("Relu", (const char *[]){"x", NULL}, (const char *[]){"t", NULL});
  pb_msg(&g, 1, &n);
  n = ox_node_pb("Identity", (const char *[]){"t", NULL}, (const char *[]){"y", NULL});
  pb_msg(&g, 1, &n);
  n = ox_node_pb("Exp", (const char *[]){"y", NULL}, (const char *[]){"z", NULL});
  pb_msg(&g, 1, &n);
  pb_str(&g, 2, "g");
  v = ox_value_pb("x", FLOAT, xd, 1);
  pb_msg(&g, 11, &v);
  v = ox_value_pb("y", FLOAT, xd, 1);
  pb_msg(&g, 12, &v);
  v = ox_value_pb("z", FLOAT, xd, 1);
  pb_msg(&g, 12, &v);
  pb m = ox_model_pb(&g, 13);
  ct_scope *s = ct_scope_new();
  ct_onnx_model *om = ct_onnx_load_buffer(m.p, m.n, s);
  ck_assert_msg(om != NULL, "%s", ct_last_error());
  static const float x[3] = {-1, 0.5f, 2};
  ck_assert_int_eq(ct_tensor_set_value(ct_var_tensor(ct_scope_find_var(s, "x")), x, CT_DIMS(3),
                                       CT_FLOAT32, ct_cpu()),
                   CT_OK);
  ct_executor_options o = {.optimize = true};
  ct_executor *e = ct_executor_new_with(ct_onnx_program(om), s, ct_cpu(), &o);
  ck_assert_msg(e != NULL && ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  const ct_tensor *y = ct_var_get_tensor(ct_scope_find_var(s, "y"));
  ck_assert(ct_ddim_equal(ct_tensor_dims(y), CT_DIMS(3)));
  const float *p = ct_tensor_data(y, CT_FLOAT32);
  ck_assert(p[0] == 0 && p[1] == 0.5f && p[2] == 2);
  ct_executor_free(e);
  ct_onnx_free(om);
  ct_scope_free(s);
  free(m.p);
}
END_TEST

START_TEST(unsupported_nodes_are_all_named_and_the_scope_kept) {
  pb g = mlp_graph(), n;
  n = ox_node_pb("FooOp", (const char *[]){"y", NULL}, (const char *[]){"f", NULL});
  pb_msg(&g, 1, &n);
  n = ox_node_pb("BarOp", (const char *[]){"f", NULL}, (const char *[]){"g", NULL});
  pb_msg(&g, 1, &n);
  pb m = ox_model_pb(&g, 13);
  ct_scope *s = ct_scope_new();
  ck_assert_ptr_null(ct_onnx_load_buffer(m.p, m.n, s));
  ck_assert_int_eq(ct_last_status(), CT_ERR_UNSUPPORTED);
  HAS(ct_last_error(), "2 nodes cannot be imported");
  HAS(ct_last_error(), "node 3 (FooOp, opset 13): no corten mapping");
  HAS(ct_last_error(), "node 4 (BarOp, opset 13)");
  ck_assert_uint_eq(ct_scope_var_count(s), 0);
  ct_scope_free(s);
  free(m.p);
}
END_TEST

START_TEST(an_opset_above_17_is_unsupported) {
  pb g = mlp_graph();
  pb m = ox_model_pb(&g, 18);
  ct_scope *s = ct_scope_new();
  ck_assert_ptr_null(ct_onnx_load_buffer(m.p, m.n, s));
  ck_assert_int_eq(ct_last_status(), CT_ERR_UNSUPPORTED);
  HAS(ct_last_error(), "opset 18");
  ct_scope_free(s);
  free(m.p);
}
END_TEST

/* A node reading a name nothing defines, and two nodes reading each other (a cycle). */
START_TEST(a_name_nothing_defines_or_a_cycle_is_a_format_error) {
  for (int cycle = 0; cycle < 2; cycle++) {
    pb g = {0}, n, v;
    static const int64_t xd[1] = {2};
    n = ox_node_pb("Relu", (const char *[]){cycle ? "b" : "nowhere", NULL}, (const char *[]){"a", NULL});
    pb_msg(&g, 1, &n);
    n = ox_node_pb("Relu", (const char *[]){"a", NULL}, (const char *[]){"b", NULL});
    pb_msg(&g, 1, &n);
    v = ox_value_pb("b", FLOAT, xd, 1);
    pb_msg(&g, 12, &v);
    pb m = ox_model_pb(&g, 13);
    ct_scope *s = ct_scope_new();
    ck_assert_ptr_null(ct_onnx_load_buffer(m.p, m.n, s));
    ck_assert_int_eq(ct_last_status(), CT_ERR_FORMAT);
    HAS(ct_last_error(), cycle ? "reads 'b', which no graph input" : "reads 'nowhere'");
    ck_assert_uint_eq(ct_scope_var_count(s), 0);
    ct_scope_free(s);
    free(m.p);
  }
}
END_TEST

/* Every prefix of a valid model fails cleanly (or, cut where a whole field ends, loads what it
 * holds), and a failed load makes no variable. */
START_TEST(a_model_cut_at_every_length_fails_cleanly) {
  pb m = mlp_model();
  for (size_t len = 0; len < m.n; len++) {
    ct_scope *s = ct_scope_new();
    unsigned char *copy = malloc(len + 1);
    memcpy(copy, m.p, len);
    ct_onnx_model *om = ct_onnx_load_buffer(copy, len, s);
    if (om == NULL) {
      ck_assert_msg(ct_last_status() == CT_ERR_FORMAT || ct_last_status() == CT_ERR_UNSUPPORTED,
                    "cut at %zu: %s", len, ct_last_error());
      ck_assert_uint_eq(ct_scope_var_count(s), 0);
    }
    ct_onnx_free(om);
    ct_scope_free(s);
    free(copy);
  }
  free(m.p);
}
END_TEST

/* raw_data of the wrong size, dims whose product overflows and a negative dim name the tensor. */
START_TEST(bad_tensors_are_format_errors_naming_them) {
  static const int64_t short_d[1] = {3}, huge[3] = {1LL << 40, 1LL << 40, 1LL << 40},
                       neg[2] = {2, -2};
  static const float two[2] = {1, 2};
  struct { const int64_t *d; int rank; const char *want; } cases[] = {
      {short_d, 1, "has 8 bytes of raw_data, not 12"},
      {huge, 3, "dims whose product overflows"},
      {neg, 2, "dim 1 is -2"},
  };
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    pb g = mlp_graph(), t = ox_tensor_pb("bad", FLOAT, cases[c].d, cases[c].rank, two, sizeof two);
    pb_msg(&g, 5, &t);
    pb m = ox_model_pb(&g, 13);
    ct_scope *s = ct_scope_new();
    ck_assert_ptr_null(ct_onnx_load_buffer(m.p, m.n, s));
    ck_assert_int_eq(ct_last_status(), CT_ERR_FORMAT);
    HAS(ct_last_error(), cases[c].want);
    ck_assert_uint_eq(ct_scope_var_count(s), 0);
    ct_scope_free(s);
    free(m.p);
  }
}
END_TEST

/* A graph input whose type nests 1,000 sequences deep: read without recursing, refused as a
 * sequence (not a crash, not a stack overflow). */
START_TEST(a_deeply_nested_type_is_refused_without_recursing) {
  pb type = {0}, tensor = {0};
  pb_int(&tensor, 1, FLOAT);
  pb_msg(&type, 1, &tensor);
  for (int k = 0; k < 1000; k++) {
    pb seq = {0}, outer = {0};
    pb_msg(&seq, 1, &type);     /* Sequence.elem_type */
    pb_msg(&outer, 4, &seq);    /* TypeProto.sequence_type */
    type = outer;
  }
  pb v = {0}, g = mlp_graph();
  pb_str(&v, 1, "deep");
  pb_msg(&v, 2, &type);
  pb_msg(&g, 11, &v);
  pb m = ox_model_pb(&g, 13);
  ct_scope *s = ct_scope_new();
  ck_assert_ptr_null(ct_onnx_load_buffer(m.p, m.n, s));
  ck_assert_int_eq(ct_last_status(), CT_ERR_UNSUPPORTED);
  HAS(ct_last_error(), "graph input 'deep' is a sequence");
  ct_scope_free(s);
  free(m.p);
}
END_TEST

/* A node output named "y\0z" (found by fuzz_onnx_load): CT_ERR_FORMAT naming the node, not the
 * op API's own refusal passed through. */
START_TEST(a_name_holding_a_nul_byte_is_a_format_error) {
  pb g = {0}, n = {0}, v;
  static const int64_t xd[1] = {2};
  pb_str(&n, 1, "x");
  pb_len(&n, 2, "y\0z", 3);
  pb_str(&n, 4, "Relu");
  pb_msg(&g, 1, &n);
  v = ox_value_pb("x", FLOAT, xd, 1);
  pb_msg(&g, 11, &v);
  pb m = ox_model_pb(&g, 13);
  ct_scope *s = ct_scope_new();
  ck_assert_ptr_null(ct_onnx_load_buffer(m.p, m.n, s));
  ck_assert_int_eq(ct_last_status(), CT_ERR_FORMAT);
  HAS(ct_last_error(), "node 0 (Relu, opset 13): output 0's name holds a NUL byte");
  ck_assert_uint_eq(ct_scope_var_count(s), 0);
  ct_scope_free(s);
  free(m.p);
}
END_TEST

START_TEST(garbage_names_the_field_and_offset) {
  static const unsigned char junk[] = {0x3a, 0x03, 0x0a, 0x10, 0x01}; /* graph: a node too long */
  ct_scope *s = ct_scope_new();
  ck_assert_ptr_null(ct_onnx_load_buffer(junk, sizeof junk, s));
  ck_assert_int_eq(ct_last_status(), CT_ERR_FORMAT);
  HAS(ct_last_error(), "graph at byte 4: a length of 16 bytes but 1 are left");
  ck_assert_ptr_null(ct_onnx_load_buffer("", 0, s));
  HAS(ct_last_error(), "no graph");
  ct_scope_free(s);
}
END_TEST

START_TEST(a_name_the_scope_holds_is_refused_and_kept) {
  pb m = mlp_model();
  ct_scope *s = ct_scope_new();
  float one = 1;
  ck_assert_int_eq(ct_tensor_set_value(ct_var_tensor(ct_scope_var(s, "b")), &one, CT_DIMS(1),
                                       CT_FLOAT32, ct_cpu()), CT_OK);
  ck_assert_ptr_null(ct_onnx_load_buffer(m.p, m.n, s));
  ck_assert_int_eq(ct_last_status(), CT_ERR_ALREADY_EXISTS);
  HAS(ct_last_error(), "variable 'b'");
  ck_assert_uint_eq(ct_scope_var_count(s), 1);
  ck_assert(*(const float *)ct_tensor_data(ct_var_get_tensor(ct_scope_find_var(s, "b")), CT_FLOAT32) == 1);
  /* A kid of the scope takes the model. */
  ct_scope *kid = ct_scope_new_kid(s);
  ct_onnx_model *om = ct_onnx_load_buffer(m.p, m.n, kid);
  ck_assert_msg(om != NULL, "%s", ct_last_error());
  ct_onnx_free(om);
  ct_scope_free(s);
  free(m.p);
}
END_TEST

/* Constant nodes, a constant Reshape shape, and typed (not raw) tensor payloads, packed and not. */
START_TEST(constants_and_typed_payloads_load) {
  pb g = {0}, n, a = {0}, t, v;
  static const int64_t xd[2] = {2, 3}, sd[1] = {2}, yd[2] = {3, 2};
  n = ox_node_pb("Constant", NULL, (const char *[]){"shape", NULL});
  t = ox_tensor_pb("", INT64, sd, 1, NULL, 0);
  pb_int(&t, 7, 3); /* int64_data, unpacked */
  pb_int(&t, 7, -1);
  pb_str(&a, 1, "value");
  pb_int(&a, 20, 4);
  pb_msg(&a, 5, &t);
  pb_msg(&n, 5, &a);
  pb_msg(&g, 1, &n);
  n = ox_node_pb("Reshape", (const char *[]){"x", "shape", NULL}, (const char *[]){"r", NULL});
  pb_msg(&g, 1, &n);
  n = ox_node_pb("Add", (const char *[]){"r", "c", NULL}, (const char *[]){"y", NULL});
  pb_msg(&g, 1, &n);
  pb packed = {0};
  static const float cv[2] = {10, 20};
  pb_bytes(&packed, cv, sizeof cv);
  t = ox_tensor_pb("c", FLOAT, sd, 1, NULL, 0);
  pb_msg(&t, 4, &packed); /* float_data, packed */
  pb_msg(&g, 5, &t);
  v = ox_value_pb("x", FLOAT, xd, 2);
  pb_msg(&g, 11, &v);
  v = ox_value_pb("y", FLOAT, yd, 2);
  pb_msg(&g, 12, &v);
  pb m = ox_model_pb(&g, 13);
  ct_scope *s = ct_scope_new();
  ct_onnx_model *om = ct_onnx_load_buffer(m.p, m.n, s);
  ck_assert_msg(om != NULL, "%s", ct_last_error());
  float x[6] = {0, 1, 2, 3, 4, 5};
  ck_assert_int_eq(ct_tensor_set_value(ct_var_tensor(ct_scope_find_var(s, "x")), x,
                                       CT_DIMS(2, 3), CT_FLOAT32, ct_cpu()), CT_OK);
  ct_executor *e = ct_executor_new(ct_onnx_program(om), s, ct_cpu());
  ck_assert_msg(e != NULL && ct_executor_run(e) == CT_OK, "%s", ct_last_error());
  const ct_tensor *y = ct_var_get_tensor(ct_scope_find_var(s, "y"));
  ck_assert(ct_ddim_equal(ct_tensor_dims(y), CT_DIMS(3, 2)));
  const float *p = ct_tensor_data(y, CT_FLOAT32);
  for (int i = 0; i < 6; i++) ck_assert(p[i] == x[i] + cv[i % 2]);
  ct_executor_free(e);
  ct_onnx_free(om);
  ct_scope_free(s);
  free(m.p);
}
END_TEST

/* External data beside the model loads; an absolute path or one through '..' is refused. */
START_TEST(external_data_is_read_beside_the_model_only) {
  make_work_dir("onnx-external");
  static const float w[6] = {1, 0, 0, 1, 1, 1};
  write_all(in_dir("w.bin"), w, sizeof w);
  const char *locations[] = {"w.bin", "/etc/passwd", "../w.bin", "sub/../../w.bin"};
  for (size_t c = 0; c < 4; c++) {
    static const int64_t wd[2] = {3, 2};
    /* mlp_graph with W stored in the file at locations[c]. */
    pb g2 = {0}, t, e = {0};
    t = ox_tensor_pb("W", FLOAT, wd, 2, NULL, 0);
    pb_str(&e, 1, "location");
    pb_str(&e, 2, locations[c]);
    pb_msg(&t, 13, &e);
    pb_int(&t, 14, 1);
    static const float b[2] = {-4, 1};
    static const int64_t bd[1] = {2}, xd[2] = {-1, 3}, yd[2] = {-1, 2};
    pb n = ox_node_pb("MatMul", (const char *[]){"x", "W", NULL}, (const char *[]){"xw", NULL});
    pb_msg(&g2, 1, &n);
    n = ox_node_pb("Add", (const char *[]){"xw", "b", NULL}, (const char *[]){"z", NULL});
    pb_msg(&g2, 1, &n);
    n = ox_node_pb("Relu", (const char *[]){"z", NULL}, (const char *[]){"y", NULL});
    pb_msg(&g2, 1, &n);
    pb_msg(&g2, 5, &t);
    pb bt = ox_tensor_pb("b", FLOAT, bd, 1, b, sizeof b);
    pb_msg(&g2, 5, &bt);
    pb v = ox_value_pb("x", FLOAT, xd, 2);
    pb_msg(&g2, 11, &v);
    v = ox_value_pb("y", FLOAT, yd, 2);
    pb_msg(&g2, 12, &v);
    pb m = ox_model_pb(&g2, 13);
    write_all(in_dir("model.onnx"), m.p, m.n);
    ct_scope *s = ct_scope_new();
    ct_onnx_model *om = ct_onnx_load(in_dir("model.onnx"), s);
    if (c == 0) {
      ck_assert_msg(om != NULL, "%s", ct_last_error());
      run_mlp(om, s, 2);
    } else {
      ck_assert_ptr_null(om);
      ck_assert_int_eq(ct_last_status(), CT_ERR_FORMAT);
      HAS(ct_last_error(), "outside the model's folder");
      ck_assert_uint_eq(ct_scope_var_count(s), 0);
    }
    /* From a buffer there is no folder: refused as unsupported. */
    if (c == 0) {
      ct_scope *s2 = ct_scope_new();
      ck_assert_ptr_null(ct_onnx_load_buffer(m.p, m.n, s2));
      ck_assert_int_eq(ct_last_status(), CT_ERR_UNSUPPORTED);
      HAS(ct_last_error(), "ct_onnx_load(path)");
      ct_scope_free(s2);
    }
    ct_onnx_free(om);
    ct_scope_free(s);
    free(m.p);
  }
  remove_work_dir();
}
END_TEST

START_TEST(a_tensor_file_loads_into_a_tensor) {
  make_work_dir("onnx-tensor");
  static const int64_t d[2] = {2, 2};
  static const int64_t v[4] = {1, -2, 3, -4};
  pb t = ox_tensor_pb("t", INT64, d, 2, v, sizeof v);
  write_all(in_dir("t.pb"), t.p, t.n);
  ct_tensor *x = ct_tensor_new();
  ck_assert_int_eq(ct_onnx_load_tensor(in_dir("t.pb"), x), CT_OK);
  ck_assert(ct_ddim_equal(ct_tensor_dims(x), CT_DIMS(2, 2)) && ct_tensor_dtype(x) == CT_INT64);
  ck_assert(memcmp(ct_tensor_data(x, CT_INT64), v, sizeof v) == 0);
  CT_ASSERT_FAILS(ct_onnx_load_tensor(in_dir("missing.pb"), x), CT_ERR_IO);
  ck_assert(ct_ddim_equal(ct_tensor_dims(x), CT_DIMS(2, 2))); /* unchanged */
  ct_tensor_free(x);
  free(t.p);
  remove_work_dir();
}
END_TEST

/* Pad(x [2], pads [1, 1], constant_value c) with c an initializer of x's dtype: uint32 7, and
 * int64 2^53 + 1 (which a double does not hold): y = c x0 x1 c exactly (the constant goes in as
 * the op's PadValue input when a double cannot carry it). */
START_TEST(pad_constants_of_every_integer_width_are_exact) {
  static const int64_t two[1] = {2}, pads_d[1] = {2}, one_d[1] = {1}, pads[2] = {1, 1};
  static const struct {
    int ox;
    ct_dtype t;
    uint64_t c;
  } cases[] = {{12, CT_UINT32, 7}, {7, CT_INT64, ((uint64_t)1 << 53) + 1}, {13, CT_UINT64, UINT64_MAX}};
  for (int k = 0; k < 3; k++) {
    pb g = {0}, t, n, v;
    n = ox_node_pb("Pad", (const char *[]){"x", "pads", "c", NULL}, (const char *[]){"y", NULL});
    pb_msg(&g, 1, &n);
    pb_str(&g, 2, "pad");
    t = ox_tensor_pb("pads", INT64, pads_d, 1, pads, sizeof pads);
    pb_msg(&g, 5, &t);
    size_t es = ct_dtype_size(cases[k].t);
    uint64_t c = cases[k].c;
    t = ox_tensor_pb("c", cases[k].ox, one_d, 0, &c, es); /* a scalar: rank 0 */
    pb_msg(&g, 5, &t);
    v = ox_value_pb("x", cases[k].ox, two, 1);
    pb_msg(&g, 11, &v);
    v = ox_value_pb("y", cases[k].ox, NULL, 0);
    pb_msg(&g, 12, &v);
    pb m = ox_model_pb(&g, 13);
    ct_scope *s = ct_scope_new();
    ct_onnx_model *om = ct_onnx_load_buffer(m.p, m.n, s);
    ck_assert_msg(om != NULL, "%s", ct_last_error());
    uint64_t x[2] = {5, 6};
    unsigned char xb[16];
    for (int i = 0; i < 2; i++) memcpy(xb + (size_t)i * es, &x[i], es); /* little endian */
    ct_tensor *xt = ct_var_tensor(ct_scope_find_var(s, "x"));
    ck_assert_int_eq(ct_tensor_set_value(xt, xb, CT_DIMS(2), cases[k].t, ct_cpu()), CT_OK);
    ct_executor *e = ct_executor_new(ct_onnx_program(om), s, ct_cpu());
    ck_assert_msg(e != NULL && ct_executor_run(e) == CT_OK, "%s", ct_last_error());
    const unsigned char *y = ct_tensor_data(ct_var_get_tensor(ct_scope_find_var(s, "y")),
                                            cases[k].t);
    uint64_t want[4] = {c, 5, 6, c};
    for (int i = 0; i < 4; i++) {
      uint64_t got = 0;
      memcpy(&got, y + (size_t)i * es, es);
      ck_assert_msg(got == (want[i] & (es == 8 ? UINT64_MAX : ((uint64_t)1 << (8 * es)) - 1)),
                    "case %d y[%d]", k, i);
    }
    ct_executor_free(e);
    ct_onnx_free(om);
    ct_scope_free(s);
    free(m.p);
  }
}
END_TEST

/* uint16 in int32_data (5, one varint each), uint32 and uint64 in packed uint64_data (11). */
START_TEST(unsigned_tensor_files_load_from_their_typed_fields) {
  make_work_dir("onnx-utensor");
  static const int64_t d[1] = {3};
  static const uint64_t v[3] = {0, 65535, UINT64_MAX};
  static const struct {
    int ox;
    ct_dtype t;
    uint64_t mask;
  } cases[] = {{4, CT_UINT16, 0xFFFF}, {12, CT_UINT32, 0xFFFFFFFFu}, {13, CT_UINT64, UINT64_MAX}};
  for (int k = 0; k < 3; k++) {
    pb t = ox_tensor_pb("u", cases[k].ox, d, 1, NULL, 0);
    if (cases[k].t == CT_UINT16) {
      for (int i = 0; i < 3; i++) pb_int(&t, 5, (int64_t)(v[i] & cases[k].mask));
    } else {
      pb packed = {0};
      for (int i = 0; i < 3; i++) pb_varint(&packed, v[i] & cases[k].mask);
      pb_len(&t, 11, packed.p, packed.n);
      free(packed.p);
    }
    write_all(in_dir("u.pb"), t.p, t.n);
    ct_tensor *x = ct_tensor_new();
    ck_assert_int_eq(ct_onnx_load_tensor(in_dir("u.pb"), x), CT_OK);
    ck_assert_int_eq(ct_tensor_dtype(x), cases[k].t);
    const void *p = ct_tensor_data(x, cases[k].t);
    for (int i = 0; i < 3; i++) {
      uint64_t got = cases[k].t == CT_UINT16   ? ((const uint16_t *)p)[i]
                     : cases[k].t == CT_UINT32 ? ((const uint32_t *)p)[i]
                                               : ((const uint64_t *)p)[i];
      ck_assert(got == (v[i] & cases[k].mask));
    }
    ct_tensor_free(x);
    free(t.p);
  }
  remove_work_dir();
}
END_TEST

START_TEST(bad_arguments_are_refused) {
  ct_scope *s = ct_scope_new();
  ck_assert_ptr_null(ct_onnx_load(NULL, s));
  ck_assert_int_eq(ct_last_status(), CT_ERR_INVALID_ARGUMENT);
  ck_assert_ptr_null(ct_onnx_load("model.onnx", NULL));
  ck_assert_ptr_null(ct_onnx_load_buffer(NULL, 4, s));
  ck_assert_ptr_null(ct_onnx_load("/nonexistent/model.onnx", s));
  ck_assert_int_eq(ct_last_status(), CT_ERR_IO);
  ck_assert_ptr_null(ct_onnx_program(NULL));
  ck_assert_uint_eq(ct_onnx_input_count(NULL), 0);
  ct_onnx_free(NULL);
  ct_scope_free(s);
}
END_TEST

/* Transpose without perm of an intermediate (its rank unknown at load): the dims reversed when
 * it runs, y = relu(x)^T; exported back as a Transpose without perm, loading to the same. */
START_TEST(a_transpose_without_perm_reverses_any_rank) {
  static const int64_t xd[2] = {2, 3};
  pb g = {0}, n, v;
  n = ox_node_pb("Relu", (const char *[]){"x", NULL}, (const char *[]){"r", NULL});
  pb_msg(&g, 1, &n);
  n = ox_node_pb("Transpose", (const char *[]){"r", NULL}, (const char *[]){"y", NULL});
  pb_msg(&g, 1, &n);
  pb_str(&g, 2, "transpose");
  v = ox_value_pb("x", FLOAT, xd, 2);
  pb_msg(&g, 11, &v);
  v = ox_value_pb("y", FLOAT, NULL, 0);
  pb_msg(&g, 12, &v);
  pb m = ox_model_pb(&g, 13);
  static const float x[6] = {-1, 2, 3, 4, -5, 6}, want[6] = {0, 4, 2, 0, 3, 6};
  make_work_dir("onnx-transpose");
  for (int round = 0; round < 2; round++) {
    ct_scope *s = ct_scope_new();
    ct_onnx_model *om = round == 0 ? ct_onnx_load_buffer(m.p, m.n, s)
                                   : ct_onnx_load(in_dir("t.onnx"), s);
    ck_assert_msg(om != NULL, "%s", ct_last_error());
    put(s, "x", CT_FLOAT32, CT_DIMS(2, 3), x);
    ct_executor *e = ct_executor_new(ct_onnx_program(om), s, ct_cpu());
    ck_assert_msg(e != NULL && ct_executor_run(e) == CT_OK, "%s", ct_last_error());
    ct_executor_free(e);
    const float *y = result(s, "y", CT_FLOAT32, CT_DIMS(3, 2));
    for (int i = 0; i < 6; i++) ck_assert_float_eq(y[i], want[i]);
    if (round == 0) {
      const char *in[] = {"x"}, *out[] = {"y"};
      ck_assert_msg(ct_onnx_save(in_dir("t.onnx"), ct_onnx_program(om), s, in, 1, out, 1) ==
                        CT_OK,
                    "%s", ct_last_error());
      char types[32];
      ck_assert_int_eq(ct_onnx_op_types(in_dir("t.onnx"), types, sizeof types), CT_OK);
      ck_assert_str_eq(types, "Relu,Transpose");
    }
    ct_onnx_free(om);
    ct_scope_free(s);
  }
  remove_work_dir();
  free(m.p);
}
END_TEST

static Suite *make_suite(void) {
  Suite *s = suite_create("onnx");
  CT_ADD_TEST(s, a_model_loads_and_runs_at_any_batch);
  CT_ADD_TEST(s, initializers_become_variables_of_the_scope);
  CT_ADD_TEST(s, an_output_another_node_reads_survives_the_passes);
  CT_ADD_TEST(s, unsupported_nodes_are_all_named_and_the_scope_kept);
  CT_ADD_TEST(s, an_opset_above_17_is_unsupported);
  CT_ADD_TEST(s, a_name_nothing_defines_or_a_cycle_is_a_format_error);
  CT_ADD_TEST(s, a_model_cut_at_every_length_fails_cleanly);
  CT_ADD_TEST(s, bad_tensors_are_format_errors_naming_them);
  CT_ADD_TEST(s, a_deeply_nested_type_is_refused_without_recursing);
  CT_ADD_TEST(s, a_name_holding_a_nul_byte_is_a_format_error);
  CT_ADD_TEST(s, garbage_names_the_field_and_offset);
  CT_ADD_TEST(s, a_name_the_scope_holds_is_refused_and_kept);
  CT_ADD_TEST(s, constants_and_typed_payloads_load);
  CT_ADD_TEST(s, external_data_is_read_beside_the_model_only);
  CT_ADD_TEST(s, a_tensor_file_loads_into_a_tensor);
  CT_ADD_TEST(s, unsigned_tensor_files_load_from_their_typed_fields);
  CT_ADD_TEST(s, pad_constants_of_every_integer_width_are_exact);
  CT_ADD_TEST(s, bad_arguments_are_refused);
  CT_ADD_TEST(s, a_transpose_without_perm_reverses_any_rank);
  return s;
}

CT_TEST_MAIN(make_suite)
