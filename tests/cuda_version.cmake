# SPDX-License-Identifier: Apache-2.0
# tests/cuda_version.cmake: a CUDA toolkit older than 12.0 is refused at configure time. A stand-in
# nvcc that reports release 11.8 is handed to fresh configures of the project: under
# CORTEN_CUDA=ON the configure fails naming that version and the fix; under AUTO it succeeds,
# for the CPU only, with a warning naming the version. Run with -DSOURCE_DIR, -DWORK_DIR and
# -DC_COMPILER (cmake -P).
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}/bin")
file(WRITE "${WORK_DIR}/nvcc.in"
     "#!/bin/sh\necho 'nvcc: NVIDIA (R) Cuda compiler driver'\n"
     "echo 'Cuda compilation tools, release 11.8, V11.8.89'\n")
file(COPY "${WORK_DIR}/nvcc.in" DESTINATION "${WORK_DIR}/bin"
     FILE_PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE)
file(RENAME "${WORK_DIR}/bin/nvcc.in" "${WORK_DIR}/bin/nvcc")
set(nvcc "${WORK_DIR}/bin/nvcc")

# Configures the project into WORK_DIR/<name> with the stand-in; rc and the output (both streams,
# joined on one line, as CMake wraps messages) into the caller's <name>_rc and <name>_out.
function(configure name mode)
  execute_process(COMMAND ${CMAKE_COMMAND} -S "${SOURCE_DIR}" -B "${WORK_DIR}/${name}"
                          "-DCMAKE_C_COMPILER=${C_COMPILER}" "-DCMAKE_CUDA_COMPILER=${nvcc}"
                          -DCORTEN_CUDA=${mode} -DCORTEN_TESTS=OFF -DCORTEN_EXAMPLES=OFF
                          -DCORTEN_BENCH=OFF
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  string(REGEX REPLACE "[ \n]+" " " text "${out}${err}")
  set(${name}_rc "${rc}" PARENT_SCOPE)
  set(${name}_out "${text}" PARENT_SCOPE)
endfunction()

function(expect name what)
  string(FIND "${${name}_out}" "${what}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "configure '${name}' did not say \"${what}\":\n${${name}_out}")
  endif()
endfunction()

configure(on ON)
if(on_rc EQUAL 0)
  message(FATAL_ERROR "CORTEN_CUDA=ON with CUDA 11.8 configured:\n${on_out}")
endif()
expect(on "CORTEN_CUDA=ON: corten's CUDA place needs CUDA 12.0 or later")
expect(on "${nvcc} is CUDA 11.8.89")
expect(on "install CUDA 12 or later")
expect(on "or use CORTEN_CUDA=OFF")

configure(auto AUTO)
if(NOT auto_rc EQUAL 0)
  message(FATAL_ERROR "CORTEN_CUDA=AUTO with CUDA 11.8 failed:\n${auto_out}")
endif()
expect(auto "${nvcc} is CUDA 11.8.89")
expect(auto "building for the CPU only")
file(REMOVE_RECURSE "${WORK_DIR}")
