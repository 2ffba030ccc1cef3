# SPDX-License-Identifier: Apache-2.0
# Installs the built corten into a prefix inside the build tree, then configures, builds and runs
# tests/consumer against it: find_package(corten) and pkg-config must both work.
set(prefix "${BUILD_DIR}/install-test/prefix")
set(cbuild "${BUILD_DIR}/install-test/consumer")
file(REMOVE_RECURSE "${BUILD_DIR}/install-test")
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGV}")
  endif()
endfunction()
run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${prefix}")
set(ENV{PKG_CONFIG_PATH} "${prefix}/lib/pkgconfig:${prefix}/lib64/pkgconfig")
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}/tests/consumer" -B "${cbuild}"
    "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_C_COMPILER=${C_COMPILER}"
    "-DCMAKE_C_FLAGS=${C_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${LINK_FLAGS}")
run(${CMAKE_COMMAND} --build "${cbuild}")
foreach(exe consumer_cmake consumer_static consumer_pkgconfig)
  run(${CMAKE_COMMAND} -E env "LD_LIBRARY_PATH=${prefix}/lib" "${cbuild}/${exe}")
endforeach()

# A user of the shared library on a machine without the jemalloc pkg-config file:
# pkg-config sees corten's own .pc alone, and find_package(corten) must still succeed (and, when
# corten was built with jemalloc, leave the static library undefined).
set(nopc "${BUILD_DIR}/install-test/no-pc")
file(MAKE_DIRECTORY "${nopc}")
set(ENV{PKG_CONFIG_LIBDIR} "${nopc}")
set(ENV{PKG_CONFIG_PATH} "")
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}/tests/consumer" -B "${cbuild}-shared"
    "-DCMAKE_PREFIX_PATH=${prefix}" "-DCMAKE_C_COMPILER=${C_COMPILER}"
    "-DCMAKE_C_FLAGS=${C_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${LINK_FLAGS}"
    -DCONSUMER_SHARED_ONLY=ON "-DCONSUMER_STATIC_NEEDS_PC=${JEMALLOC}")
run(${CMAKE_COMMAND} --build "${cbuild}-shared")
run(${CMAKE_COMMAND} -E env "LD_LIBRARY_PATH=${prefix}/lib" "${cbuild}-shared/consumer_cmake")
