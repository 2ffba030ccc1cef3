# SPDX-License-Identifier: Apache-2.0
# The collectives (corten/comm.h) under mpirun, with 2 and 4 ranks on however many cores there
# are (--oversubscribe), as root too (OpenMPI refuses root unless told). Check's fork mode is
# off in these suites (an MPI process cannot fork its communicators). Without MPI the suite
# still builds and reports itself skipped.
if(NOT CORTEN_HAVE_MPI)
  add_executable(test_comm test_comm.c)
  target_link_libraries(test_comm PRIVATE corten::corten PkgConfig::CHECK)
  target_compile_options(test_comm PRIVATE ${CORTEN_WARNINGS})
  add_test(NAME comm COMMAND test_comm)
  set_tests_properties(comm PROPERTIES SKIP_RETURN_CODE 77)
  return()
endif()

# The environment of every mpirun (CORTEN_MPI_TEST_ENV) is set beside the MPI check in the top
# CMakeLists.txt.
set(CORTEN_MPIRUN ${MPIEXEC_EXECUTABLE} --oversubscribe)

add_executable(test_comm test_comm.c)
target_link_libraries(test_comm PRIVATE corten::corten PkgConfig::CHECK Threads::Threads
                      MPI::MPI_C)
target_compile_options(test_comm PRIVATE ${CORTEN_WARNINGS})
# CORTEN_HAVE_MPI: the test reads a communicator's fields (core/comm/comm_state.h) as corten does.
target_compile_definitions(test_comm PRIVATE CORTEN_TEST_MPI CORTEN_HAVE_MPI)
target_include_directories(test_comm PRIVATE ${PROJECT_SOURCE_DIR}/core)
# A rank that dies or never arrives (at a collective, a small one, or at ct_comm_init_mpi): the
# others fail within the time limit (comm_failure.c, checked by run_comm_failure.sh, which counts
# the ranks that saw what they should).
add_executable(comm_failure comm_failure.c)
target_link_libraries(comm_failure PRIVATE corten::corten MPI::MPI_C)
target_compile_options(comm_failure PRIVATE ${CORTEN_WARNINGS})
# A program that initialised MPI below MPI_THREAD_SERIALIZED: ct_comm_init_mpi refuses.
add_executable(comm_thread_level comm_thread_level.c)
target_link_libraries(comm_thread_level PRIVATE corten::corten MPI::MPI_C)
target_compile_options(comm_thread_level PRIVATE ${CORTEN_WARNINGS})
add_test(NAME comm_thread_level COMMAND ${CORTEN_MPIRUN} -n 1 $<TARGET_FILE:comm_thread_level>)
set_tests_properties(comm_thread_level PROPERTIES TIMEOUT 120 ENVIRONMENT "${CORTEN_MPI_TEST_ENV}")
foreach(n 2 4)
  add_test(NAME comm_${n} COMMAND ${CORTEN_MPIRUN} -n ${n} $<TARGET_FILE:test_comm>)
  foreach(mode late killed noinit late_small)
    add_test(NAME comm_${mode}_${n}
             COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/run_comm_failure.sh ${MPIEXEC_EXECUTABLE} ${n}
                     ${mode} $<TARGET_FILE:comm_failure>)
  endforeach()
  # 600 s: the suites make ~60 communicators and ~150 collectives, each a few round trips that
  # wait for a peer to be scheduled: minutes under ASan on 2 cores loaded 15 times over.
  set_tests_properties(comm_${n} comm_late_${n} comm_killed_${n} comm_noinit_${n}
                       comm_late_small_${n}
                       PROPERTIES TIMEOUT 600
                       ENVIRONMENT "${CORTEN_MPI_TEST_ENV}")
endforeach()

# A seeded random driver (comm_fuzz.c): one rank now and then skips a collective, swaps two,
# runs another dtype or dims, or runs one more; every call is checked against what comm.h says it
# must do (run_comm_fuzz.sh counts the ranks' PASS lines; CORTEN_COMM_FUZZ_SEED picks another
# seed). 200 rounds, a dozen of which wait out the 1.5 s limit: 15 to 30 s on 2 cores; 300 s for
# a loaded machine or a sanitizer build.
add_executable(comm_fuzz comm_fuzz.c)
target_link_libraries(comm_fuzz PRIVATE corten::corten MPI::MPI_C)
target_compile_options(comm_fuzz PRIVATE ${CORTEN_WARNINGS})
foreach(n 2 3)
  add_test(NAME comm_fuzz_${n}
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/run_comm_fuzz.sh ${MPIEXEC_EXECUTABLE} ${n}
                   $<TARGET_FILE:comm_fuzz>)
  set_tests_properties(comm_fuzz_${n} PROPERTIES TIMEOUT 300 ENVIRONMENT "${CORTEN_MPI_TEST_ENV}")
endforeach()

# NCCL (test_cuda_comm.c): a GPU suite, skipped (77) without a device; one rank here, one per GPU
# on a machine with more (mpirun -n <GPUs>).
add_executable(test_cuda_comm test_cuda_comm.c)
target_link_libraries(test_cuda_comm PRIVATE corten::corten PkgConfig::CHECK Threads::Threads)
target_compile_options(test_cuda_comm PRIVATE ${CORTEN_WARNINGS})
add_test(NAME cuda_comm COMMAND ${CORTEN_MPIRUN} -n 1 $<TARGET_FILE:test_cuda_comm>)
set_tests_properties(cuda_comm PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
                     ENVIRONMENT "${CORTEN_MPI_TEST_ENV}")
