#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/check_simd.sh: fails unless the CPU kernels in the built library hold packed SIMD code:
# each kernel function named below must contain a packed arithmetic instruction (addps, vmulpd,
# cvtps2pd, paddd ... on x86-64), or for the copying kernels a packed move of 16 bytes or more
# (adam's: a packed sqrt, which a loop calling sqrtf for errno's sake lacks).
# It reads the library's disassembly (objdump -d) by function, so a build at -O2 without the
# kernels' flags (CMakeLists.txt, CORTEN_KERNEL_FLAGS) or a loop the compiler stopped vectorising
# shows here. Other architectures than x86-64 are not checked (exit 77: skipped).
# Usage: check_simd.sh LIBRARY   or   check_simd.sh --self-test (a scalar library must fail)
set -u
lib=$1
arith='v?(add|sub|mul|div|max|min|and|or|xor|andn)p[sd]|v?cvt[a-z0-9]*p[sd][a-z0-9]*|v?p(add|sub|mull|and|or|xor|max|min|cmp)[a-z]*|v?cmp[a-z]*p[sd]|v?blendv?p[sd]'
moves='v?mov(ups|upd|aps|apd|dqu|dqa)'
# kernel function : what it must hold
kernels="add_f32_range:$arith add_f64_range:$arith sub_f32_range:$arith mul_f32_range:$arith
div_f32_range:$arith add_i32_range:$arith relu_f32_range:$arith scale_f32_range:$arith
cast_range:$arith sum_f32_range:$arith fold_f32:$arith fold_f64:$arith sm_f32_range:$arith
rs_f32_rows:$arith sm_f32_block:$arith
rs_f32_walk:$arith sgd_f32_range:$arith momentum_f32_range:$arith adam_f32_range:v?sqrtps
add_grad_f32_brange:$arith mul_grad_f32_range:$arith sigmoid_grad_f32_range:$arith
tanh_grad_f32_range:$arith relu_grad_f32_range:$arith tr_copy32_rows:$moves tr_copy32_tiles:$moves
exp_f32_c_range:$arith exp_f32_range16:$arith exp_f64_range:$arith log_f32_range:$arith
log_f64_range:$arith tanh_f32_c_range:$arith tanh_f32_range16:$arith sigmoid_f32_c_range:$arith
sigmoid_f32_range16:$arith sigmoid_f64_range:$arith"

if [ "$lib" = "--self-test" ]; then
  # A library the check must refuse: the same kernels' names with scalar code only.
  tmp=$(mktemp -d) || exit 2
  trap 'rm -rf "$tmp"' EXIT
  for k in $kernels; do
    printf 'float %s(float a, float b) { return a + b; }\n' "${k%%:*}"
  done >"$tmp/s.c"
  cc -O0 -shared -fPIC -o "$tmp/libs.so" "$tmp/s.c" || exit 2
  if sh "$0" "$tmp/libs.so" >/dev/null 2>&1; then
    echo "simd self-test: a library of scalar code passed"
    exit 1
  fi
  echo "simd self-test: scalar code refused"
  exit 0
fi
case $(uname -m) in x86_64 | amd64) ;; *) echo "simd: not x86-64, not checked"; exit 77 ;; esac
command -v objdump >/dev/null || { echo "simd: objdump not found (binutils)"; exit 1; }

dis=$(mktemp) || exit 2
trap 'rm -f "$dis"' EXIT
objdump -d --no-show-raw-insn "$lib" >"$dis" || exit 1
bad=0
for k in $kernels; do
  name=${k%%:*}
  pat=${k#*:}
  n=$(awk -v f="$name" -v pat="$pat" '
    /^[0-9a-f]+ <[^>]*>:$/ { s = $2; gsub(/[<>:]/, "", s); sub(/\..*/, "", s); inside = (s == f); if (inside) found = 1; next }
    inside { split($0, a, "\t"); op = a[2]; sub(/ .*/, "", op); if (op ~ "^(" pat ")$") hits++ }
    END { if (!found) print "missing"; else print hits + 0 }' "$dis")
  if [ "$n" = "missing" ]; then
    echo "simd: kernel $name not found in $lib (renamed? update tests/check_simd.sh)"
    bad=$((bad + 1))
  elif [ "$n" -eq 0 ]; then
    echo "simd: kernel $name holds no packed instruction: the loop is not vectorised"
    bad=$((bad + 1))
  else
    echo "simd: $name: $n packed instructions"
  fi
done
[ "$bad" -eq 0 ]
