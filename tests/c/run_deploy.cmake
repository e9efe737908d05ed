# Runs the C deploy program on the fixture's model and input, and checks that the classes it
# prints, best first, are the fixture's reference top-5 (scores are float32 vs a double
# reference, so only the order is compared; the fixture guarantees no near ties).
#   cmake -DDEPLOY=<program> -DDIR=<fixture dir> [-DTHREADS=n] -P run_deploy.cmake
if(NOT THREADS)
  set(THREADS 2)
endif()
execute_process(COMMAND ${DEPLOY} ${DIR}/model.so ${DIR}/input.raw --threads ${THREADS}
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
message(STATUS "deploy output:\n${out}${err}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "deploy exited with ${rc}")
endif()
string(REGEX MATCHALL "class [0-9]+" classes "${out}")
string(REPLACE "class " "" classes "${classes}")
file(STRINGS ${DIR}/expected_top5.txt expected)
if(NOT "${classes}" STREQUAL "${expected}")
  message(FATAL_ERROR "top-5 classes ${classes}, expected ${expected}")
endif()

# The user errors of the program: a missing model and a wrong-sized input, each a message and
# a non-zero status.
execute_process(COMMAND ${DEPLOY} ${DIR}/missing.so OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(rc EQUAL 0 OR NOT err MATCHES "cannot load module '.*missing.so': No such file")
  message(FATAL_ERROR "missing model: status ${rc}, message '${err}'")
endif()
execute_process(COMMAND ${DEPLOY} ${DIR}/model.so ${DIR}/expected_top5.txt
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(rc EQUAL 0 OR NOT err MATCHES "must hold exactly 192 float32 values")
  message(FATAL_ERROR "wrong-sized input: status ${rc}, message '${err}'")
endif()
