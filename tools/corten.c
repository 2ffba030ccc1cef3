/* SPDX-License-Identifier: Apache-2.0 */
/* tools/corten.c: the `corten` command-line tool: reads the arguments and runs a subcommand.
 *
 *   corten inspect FILE      the tensors of a TVM / CVM-runtime parameter file (tools/inspect.c)
 *   corten ops [NAME]        the registered op types, or one, as Markdown (tools/ops_ref.c)
 *   corten onnx MODEL        what an ONNX model holds and what corten cannot import of it
 *   corten onnx MODEL --round-trip   save and load again, outputs compared (tools/onnx_roundtrip.c)
 *   corten run MODEL ...     runs an ONNX model on given or random inputs (tools/onnx_run.c)
 *   corten onnx-test DIR...  ONNX's backend conformance tests (tools/onnx_test.c)
 *   corten [CMD] --help      usage, of the tool or of one command
 *   corten --version         the library's version
 *
 * Exit status: 0 success; 1 the command failed (the message on stderr says why, and nothing is
 * printed on stdout); 2 a usage error. The tool uses the public API only. */
#include <stdio.h>
#include <string.h>

#include <corten/corten.h>

#include "tool.h"

static const char usage[] =
    "usage: corten <command> [arguments]\n"
    "\n"
    "commands:\n"
    "  inspect FILE   list the tensors of a TVM / CVM-runtime parameter file\n"
    "  ops [NAME]     list the registered op types (or the one named) as Markdown\n"
    "  onnx MODEL     describe an ONNX model: inputs, outputs, op types, what corten\n"
    "                 cannot import and where\n"
    "  onnx MODEL --round-trip\n"
    "                 load, save (ct_onnx_save) and load again; compare the outputs of\n"
    "                 both on random inputs bit for bit\n"
    "  run MODEL [--input NAME=FILE.npy ...] [--threads N] [--repeat K]\n"
    "                 run an ONNX model (random inputs of the declared dims when none\n"
    "                 are given): each output's dims and checksum, and the median time\n"
    "  onnx-test [--verbose] [--min-pass PCT] [--round-trip] [--threads N] DIR...\n"
    "                 run ONNX's backend conformance tests under DIR: passed,\n"
    "                 unsupported and wrong per op type\n"
    "  --help, -h     show this text; `corten <command> --help` shows a command's\n"
    "  --version      show the version of corten\n"
    "\n"
    "exit status: 0 success, 1 the command failed (the message says why), 2 a usage error\n";

static const char inspect_usage[] =
    "usage: corten inspect FILE\n"
    "\n"
    "Lists the tensors of a TVM / CVM-runtime parameter file (a dictionary, or one tensor written\n"
    "by NDArray::Save): a header row, then one tab-separated row per tensor in file order with\n"
    "name, dtype, shape, data bytes, CRC-32 of the data and the sum of the elements, then a\n"
    "summary line starting with '#' (tensors, parameters, data bytes, bytes in all).\n"
    "A malformed file prints nothing on stdout; stderr says what is wrong and at which byte\n"
    "offset and entry, and the exit status is 1.\n";

static const char ops_usage[] =
    "usage: corten ops [NAME]\n"
    "\n"
    "Prints every op type registered in this build of corten, or only the one named, as\n"
    "Markdown: its input and output slots with their flags, its attributes with type and\n"
    "default, the dtypes it has a kernel for on each device, and whether it has a gradient.\n"
    "docs/ops.md is this output for a CUDA build. An unknown NAME exits with 1.\n";

static int is_help(const char *arg) {
  return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0 || strcmp(arg, "help") == 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(usage, stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (is_help(cmd)) {
    fputs(usage, stdout);
    return 0;
  }
  if (strcmp(cmd, "--version") == 0) {
    printf("corten %d.%d.%d\n", CORTEN_VERSION_MAJOR, CORTEN_VERSION_MINOR, CORTEN_VERSION_PATCH);
    return 0;
  }
  if (strcmp(cmd, "inspect") == 0) {
    if (argc == 3 && is_help(argv[2])) {
      fputs(inspect_usage, stdout);
      return 0;
    }
    if (argc != 3) {
      fprintf(stderr, "corten inspect: give exactly one file, e.g. corten inspect model.params\n");
      return 2;
    }
    return corten_inspect(argv[2]);
  }
  if (strcmp(cmd, "ops") == 0) {
    if (argc == 3 && is_help(argv[2])) {
      fputs(ops_usage, stdout);
      return 0;
    }
    if (argc > 3) {
      fprintf(stderr, "corten ops: give at most one op type, e.g. corten ops matmul\n");
      return 2;
    }
    return corten_ops(argc == 3 ? argv[2] : NULL);
  }
  if (strcmp(cmd, "onnx") == 0) {
    if (argc == 4 && strcmp(argv[3], "--round-trip") == 0) return corten_onnx_round_trip(argv[2]);
    if (argc != 3 || is_help(argv[2])) {
      fputs("usage: corten onnx MODEL [--round-trip]\n", argc == 3 ? stdout : stderr);
      return argc == 3 ? 0 : 2;
    }
    if (ct_onnx_describe(argv[2], stdout) != CT_OK) {
      fprintf(stderr, "corten onnx: %s\n", ct_last_error());
      return 1;
    }
    return 0;
  }
  if (strcmp(cmd, "onnx-test") == 0) return corten_onnx_test(argc - 2, argv + 2);
  if (strcmp(cmd, "run") == 0) return corten_run(argc - 2, argv + 2);
  fprintf(stderr, "corten: unknown command '%s'\n\n%s", cmd, usage);
  return 2;
}
