#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Every ```c block of README.md is a complete program of the repository, byte for byte: the line
# before the block names it (<!-- file: examples/tour_scope.c -->), the block equals that file,
# and the suite builds and runs the file (examples/CMakeLists.txt). A block without the marker,
# or one that drifted from its file, fails.
# Usage: check_readme_tour.sh README ROOT WORK_DIR
set -u
readme=$1
root=$2
work=$3
mkdir -p "$work"
rm -f "$work"/block.*
# Splits the C blocks out: block.N holds block N, name.N the file its marker names ("" if none).
awk -v dir="$work" '
  /^<!-- file: .* -->$/ { marker = $3; next }
  /^```c$/ { n++; inblock = 1; printf "%s", marker > (dir "/name." n); close(dir "/name." n);
             printf "" > (dir "/block." n); marker = ""; next }
  /^```$/ && inblock { inblock = 0; close(dir "/block." n); next }
  inblock { print >> (dir "/block." n) }
  !inblock && !/^<!-- file: / && !/^$/ { marker = "" }
' "$readme"
fails=0
count=0
for block in "$work"/block.*; do
  [ -e "$block" ] || break
  count=$((count + 1))
  n=${block##*.}
  name=$(cat "$work/name.$n")
  if [ -z "$name" ]; then
    echo "FAIL: C block $n of README.md has no <!-- file: examples/... --> line before it"
    fails=$((fails + 1))
  elif ! diff -u "$root/$name" "$block"; then
    echo "FAIL: C block $n of README.md differs from $name (above): copy the file into the block"
    fails=$((fails + 1))
  fi
done
if [ "$count" -eq 0 ]; then
  echo "FAIL: README.md has no C block"
  exit 1
fi
[ "$fails" -eq 0 ] && echo "readme_tour: $count C blocks, each a built and tested example"
exit $((fails > 0))
