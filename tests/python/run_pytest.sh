#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/python/run_pytest.sh ENV TESTS [PATTERN]: runs the pytest suites in TESTS matching
# PATTERN (default test_py_*.py) with the virtual environment ENV (made by make_envs.sh), against
# the library in CORTEN_LIB; exits 77 (skipped) when make_envs.sh left that environment out,
# saying why.
set -eu
env=$1 tests=$2 pattern=${3:-test_py_*.py}
if [ -f "$env.skip" ]; then
  echo "SKIPPED: $(cat "$env.skip")"
  exit 77
fi
cd "$tests"
# shellcheck disable=SC2086 # the pattern is a glob, expanded here
exec "$env/bin/python" -m pytest -q -p no:cacheprovider -W error::pytest.PytestUnraisableExceptionWarning $pattern
