# SPDX-License-Identifier: Apache-2.0
# cmake/CortenNVRTC.cmake: what the NVRTC compile of expression kernels (ops/expr/nvrtc.c) needs
# from the build, in every build (NVRTC is loaded with dlopen at run time, never linked):
#   - ops/half.h's text as a C array (ct_half_text.h, generated), handed to NVRTC by name since
#     the generated kernels include it;
#   - in a CUDA build, the toolkit's NVRTC soname and directory, to find it at run time.
function(corten_nvrtc objects)
  set(_dir ${PROJECT_BINARY_DIR}/generated)
  file(READ ${PROJECT_SOURCE_DIR}/ops/half.h _hex HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," _bytes "${_hex}")
  file(CONFIGURE OUTPUT ${_dir}/ct_half_text.h CONTENT
       "/* generated from ops/half.h by cmake/CortenNVRTC.cmake */\nstatic const char ct__half_text[] = {${_bytes} 0};\n")
  set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
               ${PROJECT_SOURCE_DIR}/ops/half.h)
  target_include_directories(${objects} PRIVATE ${_dir})
  if(CORTEN_HAVE_CUDA)
    target_compile_definitions(${objects} PRIVATE
      "CORTEN_NVRTC_SONAME=\"libnvrtc.so.${CUDAToolkit_VERSION_MAJOR}\""
      "CORTEN_NVRTC_DIR=\"${CUDAToolkit_LIBRARY_DIR}\"")
  endif()
endfunction()
