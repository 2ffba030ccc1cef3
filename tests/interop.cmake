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
corten_add_suite(dlpack_versioned)
# corten/dlpack.h under a DLPack 1.x header (a stand-in in tests/dlpack_1x, found first).
corten_add_suite(dlpack_header)
target_include_directories(test_dlpack_header BEFORE PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/dlpack_1x)
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

# The Python package (python/) with pytest, against NumPy 1.24 and 2 and PyTorch, and installed
# from a clean clone (tests/python/python.cmake).
include(${CMAKE_CURRENT_SOURCE_DIR}/python/python.cmake)

# PyTorch parity: a C program NAME (NAME.c) trains a network and writes its numbers; the script
# python/test_NAME.py computes the same in PyTorch (Debian's python3-torch) and compares them.
# Skipped (77) without torch, or while the build lacks a gradient the network needs.
#   torch_parity         a small MLP with SGD, and a small CNN with batch_norm and adam
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
