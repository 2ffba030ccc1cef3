# SPDX-License-Identifier: Apache-2.0
# Picks the python3 for the NumPy DLPack test: CORTEN_PYTHON3 when given, else the first python3
# on PATH that imports numpy (a version manager's python3 often comes first on PATH without it,
# while the distribution's has it), else the first python3 at all, whose test then reports
# itself skipped and says why. Sets CORTEN_PYTHON3 (empty when there is no python3); only a
# python3 with NumPy is remembered in the cache.
if(NOT CORTEN_PYTHON3)
  set(_found "")
  set(_first "")
  if(CMAKE_HOST_UNIX)
    string(REPLACE ":" ";" _dirs "$ENV{PATH}")
  else()
    set(_dirs "")
  endif()
  foreach(_dir IN LISTS _dirs)
    if(_dir AND EXISTS "${_dir}/python3" AND NOT IS_DIRECTORY "${_dir}/python3")
      if(NOT _first)
        set(_first "${_dir}/python3")
      endif()
      execute_process(COMMAND "${_dir}/python3" -c "import numpy; numpy.from_dlpack"
                      RESULT_VARIABLE _rc OUTPUT_QUIET ERROR_QUIET)
      if(_rc EQUAL 0)
        set(_found "${_dir}/python3")
        break()
      endif()
    endif()
  endforeach()
  if(_found)
    set(CORTEN_PYTHON3 "${_found}" CACHE FILEPATH "python3 for the NumPy DLPack test")
  else()
    # Not cached: the next configure looks again (after NumPy is installed, say).
    set(CORTEN_PYTHON3 "${_first}")
  endif()
endif()
message(STATUS "corten: NumPy DLPack test uses python3: ${CORTEN_PYTHON3}")
