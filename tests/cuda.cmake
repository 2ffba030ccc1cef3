# The CUDA place's tests, included from tests/CMakeLists.txt.
#   cuda_pool  the caching allocator's pool logic on the CPU, over a fake backing allocator: every
#              build runs it, with or without a toolkit or a GPU.
#   cuda       the CUDA place on a real GPU; reports itself skipped (77) where corten is built
#              without CUDA or no device is present. It links the static library, to reach the
#              internal fill kernel, and the CUDA runtime, to make external device buffers.
# Under AddressSanitizer on a GPU machine the CUDA runtime needs ASAN_OPTIONS=protect_shadow_gap=0
# (see docs/design/cuda-memory.md).
add_executable(test_cuda_pool test_cuda_pool.c ${PROJECT_SOURCE_DIR}/core/cuda/cuda_pool.c)
target_include_directories(test_cuda_pool PRIVATE
  ${PROJECT_SOURCE_DIR}/core ${PROJECT_SOURCE_DIR}/include)
target_link_libraries(test_cuda_pool PRIVATE PkgConfig::CHECK Threads::Threads)
target_compile_options(test_cuda_pool PRIVATE ${CORTEN_WARNINGS})
add_test(NAME cuda_pool COMMAND test_cuda_pool)
set_tests_properties(cuda_pool PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300)

add_executable(test_cuda test_cuda.c)
target_compile_options(test_cuda PRIVATE ${CORTEN_WARNINGS})
target_link_libraries(test_cuda PRIVATE PkgConfig::CHECK Threads::Threads)
if(CORTEN_HAVE_CUDA)
  target_compile_definitions(test_cuda PRIVATE CORTEN_TEST_CUDA)
  target_include_directories(test_cuda PRIVATE ${PROJECT_SOURCE_DIR}/core)
  target_link_libraries(test_cuda PRIVATE corten::corten_static CUDA::cudart_static)
else()
  target_link_libraries(test_cuda PRIVATE corten::corten)
endif()
add_test(NAME cuda COMMAND test_cuda)
set_tests_properties(cuda PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600)

# cuda_ops  every CUDA kernel of the built-in ops against its CPU kernel on a GPU; without one
#           (or without CUDA) it checks which CUDA kernels are registered (none in a CPU-only
#           build), that cuBLAS loads, and that ops at a CUDA place are refused, then reports
#           itself skipped (77). Static library: it reads the registry's kernel table.
add_executable(test_cuda_ops test_cuda_ops.c)
target_compile_options(test_cuda_ops PRIVATE ${CORTEN_WARNINGS})
target_include_directories(test_cuda_ops PRIVATE ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/core)
target_link_libraries(test_cuda_ops PRIVATE PkgConfig::CHECK Threads::Threads m
                      corten::corten_static)
if(CORTEN_HAVE_CUDA)
  target_compile_definitions(test_cuda_ops PRIVATE CORTEN_TEST_CUDA)
  target_include_directories(test_cuda_ops PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
endif()
add_test(NAME cuda_ops COMMAND test_cuda_ops)
set_tests_properties(cuda_ops PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600)
