# Configures and builds the outside project tests/install_consumer against an installed prefix
# (find_package(kiln CONFIG REQUIRED) alone finds it), and checks that the runtime program's
# link holds the runtime and nothing of the compiler: no LLVM, protobuf/ONNX, XGBoost, fmt or
# compiler layer.
#   cmake -DPREFIX=<dir> -DSOURCE=<tests/install_consumer> -DBINARY=<dir> -DGENERATOR=<generator>
#         -DCC=<C compiler> -DCXX=<C++ compiler> -P consumer.cmake
file(REMOVE_RECURSE ${BINARY})
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE} -B ${BINARY} -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release
                        -DCMAKE_PREFIX_PATH=${PREFIX} -DCMAKE_C_COMPILER=${CC} -DCMAKE_CXX_COMPILER=${CXX}
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "configuring the consumer against ${PREFIX} failed (${rc}):\n${out}${err}")
endif()
string(FIND "${out}" " from ${PREFIX}/lib/cmake/kiln" at)
if(at EQUAL -1)
  message(FATAL_ERROR "the consumer did not find kiln in ${PREFIX}:\n${out}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BINARY} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "building the consumer failed (${rc}):\n${out}${err}")
endif()

find_program(READELF readelf REQUIRED)
execute_process(COMMAND ${READELF} -d ${BINARY}/kiln_run_model OUTPUT_VARIABLE dynamic)
string(REGEX MATCHALL "\\(NEEDED\\)[^\n]*" needed "${dynamic}")
if(NOT needed MATCHES "libkiln_runtime[.]so")
  message(FATAL_ERROR "kiln_run_model (kiln::runtime) does not link libkiln_runtime.so: ${needed}")
endif()
foreach(lib ${needed})
  if(lib MATCHES "LLVM|protobuf|onnx|xgboost|fmt" OR (lib MATCHES "libkiln_" AND NOT lib MATCHES "libkiln_runtime[.]so"))
    message(FATAL_ERROR "kiln_run_model (kiln::runtime) links more than the runtime: ${lib}")
  endif()
endforeach()
message(STATUS "consumer built in ${BINARY}: ${needed}")
