#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Tests of the `corten` command-line tool: --help, usage errors, `corten inspect` on every real
# parameter file in $CORTEN_PARAMS_DIR against its manifest, on a single-tensor file cut out of
# one, and on broken files (cut short, foreign, missing), whose errors must say what and where.
# Usage: test_tool.sh CORTEN_BINARY WORK_DIR. Exits 77 (skipped) without the data folder.
set -u
tool=$1
work=$2
fails=0

fail() {
  echo "FAIL: $*"
  fails=$((fails + 1))
}

# expect_status WANT CMD... : runs CMD, stdout to $work/out, stderr to $work/err.
expect_status() {
  want=$1
  shift
  "$@" >"$work/out" 2>"$work/err"
  got=$?
  if [ "$got" -ne "$want" ]; then
    fail "'$*' exited $got, expected $want"
    cat "$work/err"
  fi
}

# expect_in FILE TEXT : FILE contains TEXT.
expect_in() {
  grep -qF -- "$2" "$1" || { fail "'$2' not in $1:"; cat "$1"; }
}

rm -rf "$work"
mkdir -p "$work"

expect_status 0 "$tool" --help
expect_in "$work/out" "inspect FILE"
expect_status 0 "$tool" inspect --help
expect_in "$work/out" "usage: corten inspect FILE"
expect_status 0 "$tool" ops --help
expect_in "$work/out" "usage: corten ops [NAME]"
expect_status 0 "$tool" ops matmul
expect_in "$work/out" "## \`matmul\`"
expect_in "$work/out" "| \`transpose_x\` | bool | false |"
expect_status 0 "$tool" ops fill_constant
expect_in "$work/out" "| \`dtype\` | int | 9 (float32) |"
expect_status 1 "$tool" ops no_such_op
expect_in "$work/err" "no op type 'no_such_op'"
expect_status 2 "$tool" ops a b
expect_status 0 "$tool" --version
expect_in "$work/out" "corten "
expect_status 2 "$tool"
expect_in "$work/err" "usage: corten"
expect_status 2 "$tool" frobnicate
expect_in "$work/err" "unknown command 'frobnicate'"
expect_status 2 "$tool" inspect
expect_in "$work/err" "give exactly one file"

expect_status 1 "$tool" inspect "$work/missing.params"
expect_in "$work/err" "missing.params"
expect_in "$work/err" "cannot open"

# An MXNet .params file (magic 0x112) is refused as such.
printf '\022\001\000\000\000\000\000\000\000\000\000\000\000\000\000\000' >"$work/mxnet.params"
expect_status 1 "$tool" inspect "$work/mxnet.params"
expect_in "$work/err" "MXNet"
expect_in "$work/err" "offset 0"

dir=${CORTEN_PARAMS_DIR:-}
if [ -z "$dir" ] || [ ! -d "$dir" ]; then
  echo "SKIPPED the real-file checks: CORTEN_PARAMS_DIR '$dir' is not a directory" \
    "($fails failures before)"
  [ "$fails" -eq 0 ] && exit 77
  exit 1
fi

n=0
for manifest in "$dir"/*.manifest.tsv; do
  [ -f "$manifest" ] || continue
  file=${manifest%.manifest.tsv}
  n=$((n + 1))
  expect_status 0 "$tool" inspect "$file"
  # Every row but the last is the manifest, byte for byte; the last sums up.
  sed '$d' "$work/out" >"$work/rows"
  if ! cmp -s "$work/rows" "$manifest"; then
    fail "corten inspect $file does not match $manifest"
    diff "$work/rows" "$manifest" | head -20
  fi
  rows=$(($(wc -l <"$manifest") - 1))
  tail -n 1 "$work/out" >"$work/summary"
  expect_in "$work/summary" "# parameter dictionary: $rows tensors"
  expect_in "$work/summary" "$(wc -c <"$file" | tr -d ' ') bytes in all"
done
if [ "$n" -eq 0 ]; then
  echo "SKIPPED: no .manifest.tsv in $dir"
  [ "$fails" -eq 0 ] && exit 77
  exit 1
fi

# A single tensor (NDArray::Save layout) cut out of the jakariamd file: its first record, p7,
# float32 [1,10], starts after the header (24), 8 names of 2 bytes (80) and the count (8).
small="$dir/jakariamd_mnist_mod.params"
if [ -f "$small" ]; then
  dd if="$small" of="$work/p7.ndarray" bs=1 skip=112 count=96 2>/dev/null
  expect_status 0 "$tool" inspect "$work/p7.ndarray"
  expect_in "$work/out" "-	float32	1,10	40	2650b41b	-1.09663"
  expect_in "$work/out" "# single tensor (NDArray::Save), 10 parameters, 40 data bytes, 96 bytes in all"

  # Cut short inside p4's data (the fourth record, at 576; its data at 640): the message names
  # the entry, the claim and the offset, and nothing reaches stdout (no half table).
  head -c 1000 "$small" >"$work/cut.params"
  expect_status 1 "$tool" inspect "$work/cut.params"
  expect_in "$work/err" "cut.params"
  expect_in "$work/err" "tensor 3 ('p4'): claims 737280 data bytes, 360 remain at offset 640"
  if [ -s "$work/out" ]; then fail "a broken file printed rows on stdout"; fi
  expect_in "$work/err" "format error"

  # Trailing garbage after a complete file.
  cat "$small" >"$work/trail.params"
  printf 'xyz' >>"$work/trail.params"
  expect_status 1 "$tool" inspect "$work/trail.params"
  expect_in "$work/err" "3 bytes follow the end of the last tensor at offset 745680"
fi

rm -rf "$work"
if [ "$fails" -ne 0 ]; then
  echo "$fails failures"
  exit 1
fi
echo "tool: all checks passed ($n real files)"
exit 0
