# SPDX-License-Identifier: Apache-2.0
# tests/python/python.cmake: the Python package's tests, included from tests/interop.cmake.
#
#   python_envs     (fixture) makes the virtual environments under build/tests/python-envs once:
#                   `numpy1`, over the system's packages (Debian's NumPy 1.24, PyTorch, pytest),
#                   and `numpy2`, NumPy 2 and pytest from PyPI (tests/python/make_envs.sh)
#   python_numpy1   pytest tests/python in numpy1, against this build's library (CORTEN_LIB)
#   python_numpy2   the same in numpy2 (skipped when PyPI could not be reached)
#   python_install  pip install from a clean git clone into a venv, then import corten with no
#                   environment variable (tests/python/install_from_clone.sh)
# A sanitizer build's library expects the sanitizer runtime in the process, so python runs
# with it preloaded (leak checking off: the interpreter keeps memory until exit), numpy1 only.
include(${CMAKE_CURRENT_LIST_DIR}/find_numpy_python.cmake)
set(_py_dir ${CMAKE_CURRENT_LIST_DIR})
set(_envs ${CMAKE_CURRENT_BINARY_DIR}/python-envs)
get_filename_component(_py_digits "${CORTEN_SHARED_DIR}/data/digits/digits.params" ABSOLUTE)
set(_py_env "CORTEN_LIB=$<TARGET_FILE:corten>" "PYTHONDONTWRITEBYTECODE=1"
    "CORTEN_DIGITS=${_py_digits}")
if(CORTEN_JEMALLOC)
  list(APPEND _py_env "CORTEN_TEST_JEMALLOC=1")
endif()
set(_py_skip "")
set(_sanitized OFF)
if(CORTEN_SANITIZE)
  set(_sanitized ON)
  if(CMAKE_C_COMPILER_ID MATCHES "Clang")
    set(_rt_name "libclang_rt.asan-${CMAKE_SYSTEM_PROCESSOR}.so")
  else()
    set(_rt_name "libasan.so")
  endif()
  execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=${_rt_name}
                  OUTPUT_VARIABLE _rt OUTPUT_STRIP_TRAILING_WHITESPACE)
  set(_preload "${_rt}")
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libubsan.so
                    OUTPUT_VARIABLE _ubsan OUTPUT_STRIP_TRAILING_WHITESPACE)
    set(_preload "${_rt}:${_ubsan}")
  endif()
  if(IS_ABSOLUTE "${_rt}" AND EXISTS "${_rt}")
    list(APPEND _py_env "LD_PRELOAD=${_preload}" "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1"
         "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1")
  else()
    set(_py_skip "the sanitizer runtime ${_rt_name} was not found to preload into python")
  endif()
elseif(CORTEN_TSAN)
  set(_sanitized ON)
  set(_py_skip "a ThreadSanitizer build (the stress test is its subject)")
endif()
if(NOT CORTEN_PYTHON3)
  set(_py_skip "no python3 on PATH (Debian: scripts/install-deps.sh)")
endif()

function(corten_python_test name)
  if(_py_skip)
    add_test(NAME ${name} COMMAND sh -c "echo 'SKIPPED: ${_py_skip}'; exit 77")
  else()
    add_test(NAME ${name} COMMAND ${ARGN})
  endif()
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
                       ENVIRONMENT "${_py_env}")
endfunction()

corten_python_test(python_envs sh ${_py_dir}/make_envs.sh ${CORTEN_PYTHON3} ${_envs}
                   ${_sanitized})
set_tests_properties(python_envs PROPERTIES FIXTURES_SETUP corten_python_envs)
foreach(v numpy1 numpy2)
  corten_python_test(python_${v} sh ${_py_dir}/run_pytest.sh ${_envs}/${v} ${_py_dir})
  set_tests_properties(python_${v} PROPERTIES FIXTURES_REQUIRED corten_python_envs)
endforeach()
# The ONNX models of issue 33 (resnet18, mobilenet_v2, a TransformerEncoder, an LSTM classifier)
# exported from PyTorch into the build tree, run by corten and onnxruntime; and the peak memory
# of a load (tests/onnx_peak.c).
corten_python_test(python_onnx_models sh ${_py_dir}/run_pytest.sh ${_envs}/onnx ${_py_dir}
                   "models_onnx*.py")
set(_onnx_env "${_py_env};CORTEN_ONNX_MODELS=${CMAKE_CURRENT_BINARY_DIR}/onnx-models;CORTEN_ONNX_PEAK=$<TARGET_FILE:onnx_peak>;CORTEN_TOOL=$<TARGET_FILE:corten_tool>")
if(CORTEN_EXAMPLES)
  string(APPEND _onnx_env ";CORTEN_FINETUNE=$<TARGET_FILE:finetune_onnx>"
         ";CORTEN_TRAIN_DIGITS=$<TARGET_FILE:train_digits>;CORTEN_LENET=$<TARGET_FILE:lenet>"
         ";CORTEN_LENET_PARAMS=${CORTEN_PARAMS_DIR}/lenet_deploy_param.params")
endif()
set_tests_properties(python_onnx_models PROPERTIES FIXTURES_REQUIRED corten_python_envs
                     ENVIRONMENT "${_onnx_env}")
corten_python_test(python_install sh ${_py_dir}/install_from_clone.sh ${CORTEN_PYTHON3}
                   ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/python-install ${_sanitized})
