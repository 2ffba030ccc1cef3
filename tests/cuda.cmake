# SPDX-License-Identifier: Apache-2.0
# The CUDA place's tests, included from tests/CMakeLists.txt.
#   cuda_pool*  the caching allocator's pool logic on the CPU, over a fake backing allocator
#               (cuda_pool_util.h): every build runs them, with or without a toolkit or a GPU.
#   cuda*       the CUDA place on a real GPU (test_cuda.c: memory, stats, reuse, allocators;
#               test_cuda_copy.c: copies, external buffers, streams); each reports itself skipped
#               (77) where corten is built without CUDA or no device is present, after running
#               its no-device checks. They link the static library, to reach the internal fill
#               kernel, and the CUDA runtime, to make external device buffers.
# Check's 4 s default per test is raised as in every suite: the first dlopen of cuBLAS from a
# cold disk cache took longer than that on a CI machine with the toolkit and no driver.
# Under AddressSanitizer on a GPU machine the CUDA runtime needs ASAN_OPTIONS=protect_shadow_gap=0
# (see docs/design/cuda-memory.md).
function(corten_add_pool_suite name)
  add_executable(test_${name} test_${name}.c ${PROJECT_SOURCE_DIR}/core/cuda/cuda_pool.c)
  target_include_directories(test_${name} PRIVATE
    ${PROJECT_SOURCE_DIR}/core ${PROJECT_SOURCE_DIR}/include)
  target_link_libraries(test_${name} PRIVATE PkgConfig::CHECK Threads::Threads)
  target_compile_options(test_${name} PRIVATE ${CORTEN_WARNINGS})
  add_test(NAME ${name} COMMAND test_${name})
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                       ENVIRONMENT "CK_DEFAULT_TIMEOUT=120")
endfunction()

function(corten_add_cuda_suite name)
  add_executable(test_${name} test_${name}.c)
  target_compile_options(test_${name} PRIVATE ${CORTEN_WARNINGS})
  target_link_libraries(test_${name} PRIVATE PkgConfig::CHECK Threads::Threads)
  if(CORTEN_HAVE_CUDA)
    target_compile_definitions(test_${name} PRIVATE CORTEN_TEST_CUDA)
    target_include_directories(test_${name} PRIVATE ${PROJECT_SOURCE_DIR}/core)
    target_link_libraries(test_${name} PRIVATE corten::corten_static CUDA::cudart_static)
  else()
    target_link_libraries(test_${name} PRIVATE corten::corten)
  endif()
  add_test(NAME ${name} COMMAND test_${name})
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
                       ENVIRONMENT "CK_DEFAULT_TIMEOUT=120")
endfunction()

# cuda_ops*  every CUDA kernel of the built-in ops against its CPU kernel on a GPU (test_cuda_ops.c:
#            elementwise, activations, scale, cast, assign, reshape, fill and random ops; then
#            _matmul, _reduce and _rnn); helpers in cuda_ops_util.h. Without a GPU (or without
#            CUDA) test_cuda_ops checks which CUDA kernels are registered (none in a CPU-only
#            build), that cuBLAS loads, and that ops at a CUDA place are refused; every one of
#            them then reports itself skipped (77). Static library: they read the registry's
#            kernel table and the internal half-precision conversions.
function(corten_add_cuda_ops_suite name)
  add_executable(test_${name} test_${name}.c)
  target_compile_options(test_${name} PRIVATE ${CORTEN_WARNINGS})
  target_include_directories(test_${name} PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/core)
  target_link_libraries(test_${name} PRIVATE PkgConfig::CHECK Threads::Threads m
                        corten::corten_static)
  if(CORTEN_HAVE_CUDA)
    target_compile_definitions(test_${name} PRIVATE CORTEN_TEST_CUDA)
    target_include_directories(test_${name} PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  endif()
  add_test(NAME ${name} COMMAND test_${name})
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600
                       ENVIRONMENT "CK_DEFAULT_TIMEOUT=120")
endfunction()

corten_add_pool_suite(cuda_pool)
corten_add_pool_suite(cuda_pool_streams)
corten_add_cuda_suite(cuda)
corten_add_cuda_suite(cuda_copy)
foreach(part "" _matmul _reduce _rnn)
  corten_add_cuda_ops_suite(cuda_ops${part})
endforeach()
# cuda_grad  the gradient ops' CUDA kernels against their CPU kernels, and a differentiated
#            program run at cuda:0 against the CPU (test_cuda_grad.c); no-device checks first.
corten_add_cuda_ops_suite(cuda_grad)
corten_add_cuda_ops_suite(cuda_grad2)
# cuda_conv  conv2d, pool2d and their gradients against the CPU, and a CNN's training steps.
corten_add_cuda_ops_suite(cuda_conv)
corten_add_cuda_ops_suite(cuda_layers) # the layers (test_cuda_layers.c)
# cuda_expr  expressions on cuda:0 (NVRTC-compiled kernels) against the CPU engine, and the
#            compiled-kernel table and disk cache on a device (test_cuda_expr.c).
corten_add_cuda_ops_suite(cuda_expr)
