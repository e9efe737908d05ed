# The unit test binary starts and lists its test cases (tests/CMakeLists.txt says why CTest needs
# this check): it fails on a binary that cannot start or lists nothing.
#   cmake -DBIN=<kiln_tests> -P lists_its_tests.cmake
execute_process(COMMAND ${BIN} --list-test-names-only OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
string(REGEX MATCHALL "[^\n]+" names "${out}")
list(LENGTH names count)
# Catch2 2.x exits with the number of tests listed (modulo 256); a loader failure is 127 with
# nothing on standard output, a crash a signal name.
if(NOT rc MATCHES "^[0-9]+$" OR count EQUAL 0 OR err MATCHES "error while loading shared libraries")
  message(FATAL_ERROR "${BIN} cannot list its tests (status ${rc}, ${count} names): ${err}")
endif()
if(NOT out MATCHES "elementwise add, scalar loop")
  message(FATAL_ERROR "${BIN} listed ${count} names, but not the test case 'elementwise add, scalar loop'")
endif()
message(STATUS "${BIN} lists ${count} test cases")
