/* SPDX-License-Identifier: Apache-2.0 */
/* tools/tool.h: the subcommands of the `corten` tool (tools/corten.c dispatches to them). Each
 * returns the process's exit status: 0 success, 1 a failure it reported on stderr. */
#ifndef CORTEN_TOOLS_TOOL_H
#define CORTEN_TOOLS_TOOL_H

/* corten inspect FILE (tools/inspect.c). */
int corten_inspect(const char *path);

/* corten ops [NAME] (tools/ops_ref.c): every registered op type, or the one named, as Markdown. */
int corten_ops(const char *name);

/* corten onnx-test [--verbose] [--min-pass PCT] DIR... (tools/onnx_test.c): ONNX's backend tests. */
int corten_onnx_test(int argc, char **argv);

/* corten run MODEL [--input NAME=FILE.npy ...] [--threads N] [--repeat K] [--no-optimize]
 * [--profile FILE] (tools/onnx_run.c). */
int corten_run(int argc, char **argv);

/* `corten onnx MODEL --round-trip` (tools/onnx_roundtrip.c): load, save, load again, compare. */
int corten_onnx_round_trip(const char *path);

#include <stdbool.h>
#include <stddef.h>

#include <corten/onnx.h>

/* Fills t with values of model m's input i at its declared dims (symbolic ones 1; floats uniform
 * in [-1, 1) from a fixed seed, other dtypes 0); false with the reason on stderr
 * (tools/onnx_run.c). */
bool tool_random_input(ct_onnx_model *m, size_t i, ct_tensor *t);

#endif /* CORTEN_TOOLS_TOOL_H */
