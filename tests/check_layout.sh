#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The dependency rules of the house (docs/design/layout.md), checked over the source tree:
#   1. nothing under core/ includes anything from ops/;
#   2. nothing under ops/cpu/ names CUDA (in code or comments);
#   3. a backend's folder is included only by itself and by ops/backends.c, the one registration
#      table (plus the GPU test suites, which test the CUDA backend from inside);
#   4. the `corten` tool (tools/) includes public headers only (<corten/...>; "..." only for its
#      own headers in tools/);
#   5. no library or tool source file is longer than 600 lines;
#   6. every source, build and script file carries the licence's SPDX line in its first lines;
#   7. core/, ops/ and onnx/ allocate through core/common/alloc.h only (the door fault
#      injection watches): no direct malloc, calloc, realloc, strdup, strndup or aligned_alloc
#      elsewhere;
#   8. ONNX knowledge stays above ops/: onnx/ includes nothing from ops/ (it builds programs
#      through the public op API), and nothing under core/ or ops/ includes onnx/.
# Usage: check_layout.sh ROOT   checks the tree at ROOT; exits 1 naming each violation.
#        check_layout.sh --self-test   builds a small tree that breaks each rule once and checks
#        that every rule fires (so the check cannot pass by matching nothing).
set -u

check() {
  root=$1
  bad=0
  report() {
    echo "layout: $*"
    bad=$((bad + 1))
  }
  cd "$root" || { echo "layout: cannot enter $root"; return 2; }

  hits=$(grep -rnE '#[[:space:]]*include[[:space:]]*[<"](\.\./)*ops/' core 2>/dev/null)
  [ -n "$hits" ] && report "core/ includes from ops/ (core sits below ops; move the code up):
$hits"

  hits=$(grep -rni 'cuda' ops/cpu 2>/dev/null)
  [ -n "$hits" ] && report "ops/cpu names CUDA (backend-neutral code belongs in ops/ or ops/defs/):
$hits"

  for backend in cpu cuda; do
    hits=$(grep -rnE "#[[:space:]]*include[[:space:]]*\"ops/$backend/" core ops tools bench \
             2>/dev/null | grep -v "^ops/$backend/" | grep -v '^ops/backends\.c:')
    [ -n "$hits" ] && report "ops/$backend is included from outside it and ops/backends.c:
$hits"
  done

  # Quoted includes in tools/ may name the tool's own headers, nothing else.
  hits=$(grep -rnE '#[[:space:]]*include[[:space:]]*"' tools 2>/dev/null |
         while IFS= read -r line; do
           inc=$(echo "$line" | sed 's/.*include[[:space:]]*"\([^"]*\)".*/\1/')
           [ -f "tools/$inc" ] || echo "$line"
         done)
  [ -n "$hits" ] && report "tools/ includes a private header (use <corten/...> only):
$hits"

  hits=$(grep -rnE '#[[:space:]]*include[[:space:]]*[<"](\.\./)*ops/' onnx 2>/dev/null)
  [ -n "$hits" ] && report "onnx/ includes from ops/ (the importer uses the public op API only):
$hits"
  hits=$(grep -rnE '#[[:space:]]*include[[:space:]]*[<"](\.\./)*onnx/' core ops 2>/dev/null)
  [ -n "$hits" ] && report "core/ or ops/ includes from onnx/ (ops never learn ONNX names):
$hits"
  for f in $(find core ops tools onnx -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) \
             2>/dev/null | sort); do
    n=$(wc -l <"$f")
    [ "$n" -gt 600 ] && report "$f has $n lines: split it (a file should fit in your head)"
  done
  for f in $(find core ops onnx tools tests bench examples fuzz include scripts cmake python -type f \
             \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' -o -name '*.cc' \
             -o -name '*.sh' -o -name '*.py' -o -name '*.cmake' -o -name 'CMakeLists.txt' \) \
             2>/dev/null | grep -v '/corpus/' | grep -v '^python/build/' | sort); do
    head -n 3 "$f" | grep -q 'SPDX-License-Identifier: Apache-2.0' ||
      report "$f has no SPDX-License-Identifier line at its top: add the licence's"
  done
  hits=$(grep -rnE '(^|[^_[:alnum:]])(malloc|calloc|realloc|strdup|strndup|aligned_alloc)[[:space:]]*\(' \
           core ops onnx 2>/dev/null | grep -v '^core/common/alloc\.h:' |
         grep -v '^core/memory/host_allocator\.c:')
  [ -n "$hits" ] && report "a direct C-library allocation in core/ or ops/ (use ct__malloc and the rest of core/common/alloc.h, so fault injection sees it):
$hits"
  return $((bad > 0))
}

self_test() {
  tmp=$(mktemp -d) || exit 2
  trap 'rm -rf "$tmp"' EXIT
  # A clean tree passes.
  mkdir -p "$tmp/ok/core/tensor" "$tmp/ok/ops/cpu" "$tmp/ok/ops/cuda" "$tmp/ok/tools"
  spdx='/* SPDX-License-Identifier: Apache-2.0 */'
  printf '%s\n#include "tensor/tensor_impl.h"\n' "$spdx" >"$tmp/ok/core/tensor/t.c"
  printf '%s\n#include "ops/defs.h"\n' "$spdx" >"$tmp/ok/ops/cpu/k.c"
  printf '%s\n#include "ops/cpu/cpu_kernels.h"\n#include "ops/cuda/cuda_kernels.h"\n' "$spdx" \
    >"$tmp/ok/ops/backends.c"
  printf '%s\n#include <corten/corten.h>\n#include "tool.h"\n' "$spdx" >"$tmp/ok/tools/tool.c"
  printf '%s\n/* the header of the tool */\n' "$spdx" >"$tmp/ok/tools/tool.h"
  if ! (check "$tmp/ok" >/dev/null); then
    echo "layout self-test: a clean tree was refused"
    exit 1
  fi
  # Each broken tree must be refused, naming the rule it breaks.
  fails=0
  expect() {
    name=$1
    want=$2
    if out=$(check "$tmp/$name"); then
      echo "layout self-test: tree '$name' passed but breaks a rule"
      fails=$((fails + 1))
    elif ! echo "$out" | grep -q "$want"; then
      echo "layout self-test: tree '$name' was refused without '$want':"
      echo "$out"
      fails=$((fails + 1))
    fi
  }
  for t in core_up cpu_cuda foreign tool_private long no_spdx raw_alloc onnx_down ops_onnx; do
    cp -r "$tmp/ok" "$tmp/$t"
  done
  echo '#include "ops/op_impl.h"' >>"$tmp/core_up/core/tensor/t.c"
  echo '/* calls cudaMemcpy */' >>"$tmp/cpu_cuda/ops/cpu/k.c"
  printf '%s\n#include "ops/cuda/launch.h"\n' "$spdx" >"$tmp/foreign/ops/prep.c"
  echo '#include "interop/params_format.h"' >>"$tmp/tool_private/tools/tool.c"
  { echo "$spdx"; seq 1 600 | sed 's|.*|/* line */|'; } >"$tmp/long/ops/big.c"
  echo '/* no licence line */' >"$tmp/no_spdx/ops/plain.c"
  echo 'static void *f(void) { return malloc(8); }' >>"$tmp/raw_alloc/core/tensor/t.c"
  mkdir -p "$tmp/onnx_down/onnx"
  printf '%s\n#include "ops/op_impl.h"\n' "$spdx" >"$tmp/onnx_down/onnx/load.c"
  echo '#include "onnx/onnx_rules.h"' >>"$tmp/ops_onnx/ops/cpu/k.c"
  expect core_up "core/ includes from ops/"
  expect cpu_cuda "ops/cpu names CUDA"
  expect foreign "ops/cuda is included from outside"
  expect tool_private "tools/ includes a private header"
  expect long "ops/big.c has 601 lines"
  expect no_spdx "ops/plain.c has no SPDX-License-Identifier"
  expect raw_alloc "a direct C-library allocation"
  expect onnx_down "onnx/ includes from ops/"
  expect ops_onnx "core/ or ops/ includes from onnx/"
  [ "$fails" -eq 0 ] && echo "layout self-test: every rule fires"
  exit $((fails > 0))
}

if [ "${1:-}" = "--self-test" ]; then
  self_test
fi
if [ $# -ne 1 ]; then
  echo "usage: check_layout.sh ROOT | --self-test" >&2
  exit 2
fi
check "$1"
status=$?
[ "$status" -eq 0 ] && echo "layout: the dependency rules hold"
exit "$status"
