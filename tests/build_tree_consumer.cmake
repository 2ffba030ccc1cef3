# SPDX-License-Identifier: Apache-2.0
# Configures, builds and runs tests/consumer against the build tree itself, uninstalled:
# find_package(corten) with corten_DIR set to the build tree, and pkg-config with
# PKG_CONFIG_PATH set to it, must both work (shared and static).
set(cbuild "${BUILD_DIR}/build-tree-test/consumer")
file(REMOVE_RECURSE "${BUILD_DIR}/build-tree-test")
function(run)
  execute_process(COMMAND ${ARGV} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGV}")
  endif()
endfunction()
set(ENV{PKG_CONFIG_PATH} "${BUILD_DIR}")
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}/tests/consumer" -B "${cbuild}"
    "-Dcorten_DIR=${BUILD_DIR}" "-DCMAKE_C_COMPILER=${C_COMPILER}"
    "-DCMAKE_C_FLAGS=${C_FLAGS}" "-DCMAKE_EXE_LINKER_FLAGS=${LINK_FLAGS}")
run(${CMAKE_COMMAND} --build "${cbuild}")
foreach(exe consumer_cmake consumer_static consumer_pkgconfig)
  run(${CMAKE_COMMAND} -E env "LD_LIBRARY_PATH=${BUILD_DIR}" "${cbuild}/${exe}")
endforeach()
