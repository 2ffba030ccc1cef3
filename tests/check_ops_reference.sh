#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# docs/ops.md is what `corten ops` prints from the registry of a CUDA build: fails when the two
# differ (regenerate with `build/tools/corten ops > docs/ops.md`), so the reference cannot drift
# from the code. A build without CUDA lists no CUDA kernels and reports itself skipped (77).
# Usage: check_ops_reference.sh CORTEN_BINARY DOCS_OPS_MD HAVE_CUDA(ON|OFF) WORK_DIR
set -u
tool=$1
doc=$2
cuda=$3
work=$4
if [ "$cuda" != "ON" ]; then
  echo "SKIPPED: docs/ops.md describes a CUDA build and this build has no CUDA"
  exit 77
fi
mkdir -p "$work"
if ! "$tool" ops >"$work/ops.md"; then
  echo "FAIL: corten ops failed"
  exit 1
fi
if ! diff -u "$doc" "$work/ops.md"; then
  echo "FAIL: docs/ops.md differs from the registry (above): regenerate it with"
  echo "      build/tools/corten ops > docs/ops.md"
  exit 1
fi
echo "ops_reference: docs/ops.md matches the registry ($(grep -c '^## ' "$doc") op types)"
