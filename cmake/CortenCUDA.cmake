# SPDX-License-Identifier: Apache-2.0
# The CUDA place: whether to build it, and how it joins the library.
#
# CORTEN_CUDA=AUTO builds it when a CUDA toolkit (nvcc and the runtime) of version 12.0 or later
# is found, ON requires one, OFF never looks. The CPU build never needs nvcc. An older toolkit
# (the CUDA place uses 12.0's context-independent libraries, cudaLibraryLoadData) gives a
# CPU-only build with a warning naming its version under AUTO, and a configure error under ON.
# Sets:
#   CORTEN_HAVE_CUDA     ON when the CUDA place is built
#   CORTEN_CUDA_SOURCES  the C sources of core/cuda and ops/cuda for this build (the stub
#                        without CUDA)
# and defines corten_cuda_link(objects shared static), which adds the device code and the CUDA
# runtime to the library targets.
#
# The runtime is linked statically (CUDA::cudart_static, CMake's own default for CUDA code): the
# shared libcorten carries its copy with its symbols hidden, so an installed corten runs wherever
# an NVIDIA driver is (and reports "no CUDA device" where none is) without libcudart on the
# library path. The static libcorten.a leaves the runtime to its consumer: the CMake package finds
# CUDAToolkit and pkg-config --static lists -lcudart_static.

set(CORTEN_CUDA AUTO CACHE STRING "Build the CUDA place: AUTO (when a toolkit is found), ON, OFF")
set_property(CACHE CORTEN_CUDA PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${CORTEN_CUDA}" _corten_cuda_mode)
if(NOT _corten_cuda_mode MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "CORTEN_CUDA is '${CORTEN_CUDA}': use AUTO, ON or OFF")
endif()

set(CORTEN_CUDA_MIN_VERSION 12.0)

# Sets _corten_cuda_old (in the caller) to what is wrong when nvcc reports a CUDA release older
# than CORTEN_CUDA_MIN_VERSION ("V13.0.88" in its --version text); an nvcc that does not say
# passes, for enable_language and the toolkit's own version to judge.
function(corten_cuda_check_nvcc nvcc)
  execute_process(COMMAND "${nvcc}" --version OUTPUT_VARIABLE _text ERROR_QUIET
                  RESULT_VARIABLE _rc)
  if(_rc EQUAL 0 AND _text MATCHES "release ([0-9]+\\.[0-9]+)")
    set(_v "${CMAKE_MATCH_1}")
    if(_text MATCHES "release [0-9.]+, V([0-9]+\\.[0-9]+\\.[0-9]+)")
      set(_v "${CMAKE_MATCH_1}")
    endif()
    if(_v VERSION_LESS CORTEN_CUDA_MIN_VERSION)
      set(_corten_cuda_old "${nvcc} is CUDA ${_v}" PARENT_SCOPE)
    endif()
  endif()
endfunction()

set(CORTEN_HAVE_CUDA OFF)
if(NOT _corten_cuda_mode STREQUAL "OFF")
  # nvcc need not be on PATH: look where the toolkit installs by default, and where the usual
  # variables point, unless the caller chose a compiler already.
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
    find_program(CORTEN_NVCC nvcc
      HINTS ${CUDAToolkit_ROOT} ENV CUDAToolkit_ROOT ENV CUDA_PATH ENV CUDA_HOME
      PATH_SUFFIXES bin
      PATHS /usr/local/cuda /opt/cuda)
    if(CORTEN_NVCC)
      # Through the environment, so check_language still tries it before enable_language: a
      # broken toolkit then means "no CUDA" under AUTO rather than a failed configure.
      set(ENV{CUDACXX} "${CORTEN_NVCC}")
    endif()
  endif()
  # Ampere (sm_80) and Hopper (sm_90) machine code, plus sm_90 PTX for the GPUs after them.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES "80-real;90-real;90-virtual")
  endif()
  # The version is asked of nvcc before CMake tries it (check_language, enable_language): an
  # older one may not take the host compiler or know the architectures above, which would fail
  # the configure, or pass for "no CUDA", rather than name the version.
  set(_corten_cuda_old "") # what is too old, when something is
  set(_corten_nvcc "${CMAKE_CUDA_COMPILER}")
  if(NOT _corten_nvcc AND DEFINED ENV{CUDACXX})
    set(_corten_nvcc "$ENV{CUDACXX}")
  endif()
  if(_corten_nvcc)
    corten_cuda_check_nvcc("${_corten_nvcc}")
  endif()
  if(NOT _corten_cuda_old)
    include(CheckLanguage)
    check_language(CUDA)
    if(CMAKE_CUDA_COMPILER AND NOT CMAKE_CUDA_COMPILER STREQUAL _corten_nvcc)
      corten_cuda_check_nvcc("${CMAKE_CUDA_COMPILER}") # found on PATH
    endif()
  endif()
  if(CMAKE_CUDA_COMPILER AND NOT _corten_cuda_old)
    enable_language(CUDA)
    find_package(CUDAToolkit)
    if(CUDAToolkit_FOUND AND CUDAToolkit_VERSION VERSION_LESS CORTEN_CUDA_MIN_VERSION)
      set(_corten_cuda_old "the toolkit in ${CUDAToolkit_BIN_DIR} is CUDA ${CUDAToolkit_VERSION}")
    endif()
  endif()
  if(_corten_cuda_old)
    string(CONCAT _corten_cuda_why
           "corten's CUDA place needs CUDA ${CORTEN_CUDA_MIN_VERSION} or later "
           "(cudaLibraryLoadData), but ${_corten_cuda_old}: install CUDA 12 or later and point "
           "CUDAToolkit_ROOT or CMAKE_CUDA_COMPILER at it")
    if(_corten_cuda_mode STREQUAL "ON")
      message(FATAL_ERROR "CORTEN_CUDA=ON: ${_corten_cuda_why}, or use CORTEN_CUDA=OFF")
    endif()
    message(WARNING "corten: ${_corten_cuda_why}; building for the CPU only")
  elseif(CMAKE_CUDA_COMPILER AND CUDAToolkit_FOUND AND TARGET CUDA::cudart_static)
    set(CORTEN_HAVE_CUDA ON)
    message(STATUS "corten: building the CUDA place (CUDA ${CUDAToolkit_VERSION}, "
                   "architectures ${CMAKE_CUDA_ARCHITECTURES})")
  elseif(_corten_cuda_mode STREQUAL "ON")
    message(FATAL_ERROR "CORTEN_CUDA=ON but no CUDA toolkit was found: install one, point "
                        "CUDAToolkit_ROOT or CMAKE_CUDA_COMPILER at it, or use CORTEN_CUDA=OFF")
  else()
    message(STATUS "corten: no CUDA toolkit found, building for the CPU only")
  endif()
endif()

if(CORTEN_HAVE_CUDA)
  set(CORTEN_CUDA_SOURCES
    core/cuda/cuda_pool.c
    core/cuda/cuda_device.c
    core/cuda/cuda_stream.c
    core/cuda/cuda_timer.c
    core/cuda/cuda_memory.c
    core/cuda/nccl.c
    ops/cuda/launch.c
    ops/cuda/elementwise.c
    ops/cuda/matmul.c
    ops/cuda/random.c
    ops/cuda/reduce.c
    ops/cuda/shape.c
    ops/cuda/elementwise_grad.c
    ops/cuda/matmul_grad.c
    ops/cuda/reduce_grad.c
    ops/cuda/loss.c
    ops/cuda/optimizer.c
    ops/cuda/conv.c ops/cuda/cudnn.c ops/cuda/nn.c ops/cuda/norm.c ops/cuda/comm.c
    ops/cuda/expr.c)
  # Device code (.cu): operator kernels join this list.
  set(CORTEN_CUDA_DEVICE_SOURCES
    core/cuda/fill.cu
    ops/cuda/elementwise.cu
    ops/cuda/random.cu
    ops/cuda/reduce.cu
    ops/cuda/shape.cu
    ops/cuda/elementwise_grad.cu
    ops/cuda/reduce_grad.cu
    ops/cuda/loss.cu
    ops/cuda/optimizer.cu
    ops/cuda/conv.cu ops/cuda/nn.cu ops/cuda/norm.cu)
  # What the installed package files need to hand the runtime to static consumers.
  get_filename_component(CORTEN_CUDA_TOOLKIT_ROOT "${CUDAToolkit_BIN_DIR}" DIRECTORY)
  # The host stubs nvcc generates use the C++ runtime of its host compiler (libstdc++ for g++).
  set(CORTEN_CUDA_CXX_RUNTIME "")
  if("stdc++" IN_LIST CMAKE_CUDA_IMPLICIT_LINK_LIBRARIES)
    set(CORTEN_CUDA_CXX_RUNTIME stdc++)
  endif()
  set(CORTEN_PC_CUDA_LIBS " -L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -ldl -lrt")
  if(CORTEN_CUDA_CXX_RUNTIME)
    string(APPEND CORTEN_PC_CUDA_LIBS " -l${CORTEN_CUDA_CXX_RUNTIME}")
  endif()
else()
  set(CORTEN_CUDA_SOURCES core/cuda/cuda_stub.c)
  set(CORTEN_CUDA_DEVICE_SOURCES "")
  set(CORTEN_CUDA_TOOLKIT_ROOT "")
  set(CORTEN_PC_CUDA_LIBS "")
endif()

# Adds the device code and the CUDA runtime to the library: `objects` is the OBJECT library of
# the C sources, `shared` and `static` the two libraries built from it.
function(corten_cuda_link objects shared static)
  if(NOT CORTEN_HAVE_CUDA)
    return()
  endif()
  # The C files of core/cuda call the runtime API: they need its headers, not nvcc. C code
  # elsewhere that calls into device code tests CORTEN_HAVE_CUDA.
  target_include_directories(${objects} PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  target_compile_definitions(${objects} PRIVATE CORTEN_HAVE_CUDA)
  # cuBLAS (the CUDA matmul) is loaded with dlopen on first use, by its soname, then from the
  # toolkit this was built with: no link-time dependency, like the static runtime
  # (ops/cuda/matmul.c).
  target_compile_definitions(${objects} PRIVATE
    "CORTEN_CUBLAS_SONAME=\"libcublas.so.${CUDAToolkit_VERSION_MAJOR}\""
    "CORTEN_CUBLAS_DIR=\"${CUDAToolkit_LIBRARY_DIR}\""
    # NCCL likewise (core/cuda/nccl.c), for the collectives on CUDA tensors.
    "CORTEN_NCCL_DIR=\"${CUDAToolkit_LIBRARY_DIR}\"")
  # cuDNN (the CUDA convolutions, ops/cuda/cudnn.c) likewise, by its soname; its header is
  # needed at build time for the types. Without the header the direct kernels always run.
  find_path(CORTEN_CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS})
  set(_cudnn_major "")
  if(CORTEN_CUDNN_INCLUDE_DIR AND EXISTS "${CORTEN_CUDNN_INCLUDE_DIR}/cudnn_version.h")
    file(STRINGS "${CORTEN_CUDNN_INCLUDE_DIR}/cudnn_version.h" _cudnn_major
         REGEX "^#define CUDNN_MAJOR [0-9]+")
    string(REGEX REPLACE "^#define CUDNN_MAJOR ([0-9]+).*" "\\1" _cudnn_major "${_cudnn_major}")
  endif()
  # cuDNN 8 and later (the descriptors' math types and the _v7 heuristics corten calls).
  if(_cudnn_major MATCHES "^[0-9]+$" AND _cudnn_major GREATER_EQUAL 8)
    target_include_directories(${objects} PRIVATE ${CORTEN_CUDNN_INCLUDE_DIR})
    target_compile_definitions(${objects} PRIVATE CORTEN_HAVE_CUDNN_H
                               "CORTEN_CUDNN_SONAME=\"libcudnn.so.${_cudnn_major}\"")
    message(STATUS "corten: CUDA convolutions through cuDNN ${_cudnn_major} where it loads")
  else()
    message(STATUS "corten: no cudnn.h of cuDNN 8 or later: CUDA convolutions by corten's own "
                   "kernels")
  endif()
  # Device code: its own object library, so nvcc never sees the C warning or sanitizer flags.
  add_library(corten_cuda_objects OBJECT ${CORTEN_CUDA_DEVICE_SOURCES})
  set_target_properties(corten_cuda_objects PROPERTIES
    POSITION_INDEPENDENT_CODE ON
    CUDA_VISIBILITY_PRESET hidden
    CUDA_STANDARD 17
    CUDA_STANDARD_REQUIRED ON)
  target_include_directories(corten_cuda_objects PRIVATE
    ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR} ${PROJECT_SOURCE_DIR}/core)
  target_compile_definitions(corten_cuda_objects PRIVATE CORTEN_BUILDING)
  set(_werror "")
  if(CORTEN_WERROR)
    set(_werror "--Werror=all-warnings")
  endif()
  target_compile_options(corten_cuda_objects PRIVATE
    ${_werror} "-Xcompiler=-Wall,-Wextra,-fno-exceptions"
    # No fused multiply-add: the kernels round each + and x as the CPU kernels do, so random
    # tensors and elementwise results are bit-identical on both places.
    --fmad=false)
  foreach(lib ${shared} ${static})
    target_sources(${lib} PRIVATE $<TARGET_OBJECTS:corten_cuda_objects>)
    target_link_libraries(${lib} PRIVATE CUDA::cudart_static ${CORTEN_CUDA_CXX_RUNTIME}
                          ${CMAKE_DL_LIBS})
    # The C compiler links: nvcc only compiled device code, no device link step is needed.
    set_target_properties(${lib} PROPERTIES LINKER_LANGUAGE C)
  endforeach()
  # Keep the runtime's own symbols out of libcorten.so's exports.
  target_link_options(${shared} PRIVATE "LINKER:--exclude-libs,libcudart_static.a")
endfunction()
