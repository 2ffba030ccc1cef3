# SPDX-License-Identifier: Apache-2.0
# The interop tests, included from tests/CMakeLists.txt: DLPack (in C, and against NumPy as a
# real consumer and producer), parameter files (synthetic inputs, and the team's real files
# against their manifests), and the `corten` tool.
#
# Real parameter files are read from CORTEN_SHARED_DIR/data/params (the shared folder beside the
# repository by default); the tests get the path through the CORTEN_PARAMS_DIR environment
# variable and report themselves skipped when it does not exist.
set(CORTEN_SHARED_DIR "${PROJECT_SOURCE_DIR}/../shared" CACHE PATH
    "The team's shared folder; tests read real parameter files from its data/params")
get_filename_component(CORTEN_PARAMS_DIR "${CORTEN_SHARED_DIR}/data/params" ABSOLUTE)

corten_add_suite(dlpack)
corten_add_suite(dlpack_import)
corten_add_suite(params)
corten_add_suite(params_bad)
corten_add_suite(params_files)
corten_add_suite(params_inspect)
set_property(TEST params_files params_inspect APPEND PROPERTY ENVIRONMENT
             "CORTEN_PARAMS_DIR=${CORTEN_PARAMS_DIR}")

# docs/ops.md against the registry (tests/check_ops_reference.sh; skipped without CUDA).
add_test(NAME ops_reference
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/check_ops_reference.sh $<TARGET_FILE:corten_tool>
                 ${PROJECT_SOURCE_DIR}/docs/ops.md ${CORTEN_HAVE_CUDA}
                 ${CMAKE_CURRENT_BINARY_DIR}/ops-reference-work)
set_tests_properties(ops_reference PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 60)
add_test(NAME tool
         COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_tool.sh $<TARGET_FILE:corten_tool>
                 ${CMAKE_CURRENT_BINARY_DIR}/tool-work)
set_tests_properties(tool PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                     ENVIRONMENT "CORTEN_PARAMS_DIR=${CORTEN_PARAMS_DIR}")

# NumPy: the shim loads the shared library with ctypes. A sanitizer build's library expects the
# sanitizer runtime in the process, so python runs with it preloaded (leak checking off: the
# interpreter itself keeps memory until exit).
include(${CMAKE_CURRENT_SOURCE_DIR}/python/find_numpy_python.cmake)
set(_numpy_env "CORTEN_LIB=$<TARGET_FILE:corten>")
if(CORTEN_JEMALLOC)
  # Debian's libjemalloc uses initial-exec TLS, more than glibc keeps spare for a library opened
  # with dlopen ("cannot allocate memory in static TLS block"); reserve more, as an embedding
  # application would (see docs/design/interop.md).
  list(APPEND _numpy_env "GLIBC_TUNABLES=glibc.rtld.optional_static_tls=65536")
endif()
set(_numpy_skip "")
if(CORTEN_SANITIZE)
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
    list(APPEND _numpy_env "LD_PRELOAD=${_preload}"
         "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1"
         "UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1")
  else()
    set(_numpy_skip "the sanitizer runtime ${_rt_name} was not found to preload into python")
  endif()
endif()
if(NOT CORTEN_PYTHON3)
  set(_numpy_skip "no python3 on PATH (Debian: apt-get install python3 python3-numpy)")
endif()
if(_numpy_skip)
  add_test(NAME dlpack_numpy COMMAND sh -c "echo 'SKIPPED: ${_numpy_skip}'; exit 77")
else()
  add_test(NAME dlpack_numpy
           COMMAND ${CORTEN_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/python/test_dlpack_numpy.py)
endif()
set_tests_properties(dlpack_numpy PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                     ENVIRONMENT "${_numpy_env}")

# PyTorch parity: a C program NAME (NAME.c) trains a network and writes its numbers; the script
# python/test_NAME.py computes the same in PyTorch (Debian's python3-torch) and compares them.
# Skipped (77) without torch, or while the build lacks a gradient the network needs.
#   torch_parity         a small MLP with SGD
#   torch_parity_layers  a transformer-style block with adam, and batch_norm
function(corten_add_torch_parity name)
  add_executable(${name} ${name}.c)
  target_link_libraries(${name} PRIVATE corten::corten m)
  target_compile_options(${name} PRIVATE ${CORTEN_WARNINGS})
  if(CORTEN_PYTHON3)
    add_test(NAME ${name}
             COMMAND ${CORTEN_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/python/test_${name}.py)
  else()
    add_test(NAME ${name}
             COMMAND sh -c "echo 'SKIPPED: no python3 on PATH (Debian: python3-torch)'; exit 77")
  endif()
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                       ENVIRONMENT "CORTEN_TORCH_PARITY=$<TARGET_FILE:${name}>")
endfunction()
corten_add_torch_parity(torch_parity)
corten_add_torch_parity(torch_parity_layers)
