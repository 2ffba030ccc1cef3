#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/python/run_pytest.sh ENV TESTS: runs the pytest suites in TESTS with the virtual
# environment ENV (made by make_envs.sh), against the library in CORTEN_LIB; exits 77 (skipped)
# when make_envs.sh left that environment out, saying why.
set -eu
env=$1 tests=$2
if [ -f "$env.skip" ]; then
  echo "SKIPPED: $(cat "$env.skip")"
  exit 77
fi
cd "$tests"
exec "$env/bin/python" -m pytest -q -p no:cacheprovider -W error::pytest.PytestUnraisableExceptionWarning test_py_*.py
