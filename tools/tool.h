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

/* corten run MODEL [--input NAME=FILE.npy ...] [--threads N] [--repeat K] (tools/onnx_run.c). */
int corten_run(int argc, char **argv);

#endif /* CORTEN_TOOLS_TOOL_H */
