# The installed package, used from outside (CTest names install.*, label "install"; included by
# cmake/install.cmake): `cmake --install` into build/install-test/prefix, then
#  - install.headers: every installed header compiles on its own from the prefix (the API needs
#    nothing private to src/);
#  - install.cli: the installed kiln compiles and runs examples/tiny_cnn and checks it against
#    its reference, with no LD_LIBRARY_PATH (RPATHs only);
#  - install.consumer_*: tests/install_consumer, configured with find_package(kiln CONFIG) against
#    the prefix and built; its C program on kiln::runtime (and kiln::runtime_static) runs the
#    installed kiln's module of tiny_cnn, and its C++ program on kiln::compiler compiles one,
#    each output compared with the example's reference (ONNX Runtime's) at rtol 1e-3, atol 1e-4;
#  - install.pkg_config: the same C program built with `pkg-config --cflags --libs kiln-runtime`;
#  - install.opencl: an OpenCL module run by the consumer on PoCL: the runtime finds
#    libkiln_device.so in the prefix;
#  - install.aarch64: the installed kiln checks tiny_cnn for aarch64 with the installed aarch64
#    kiln-runner under qemu.
if(KILN_SANITIZE OR KILN_FUZZ)
  # An outside program cannot link instrumented libraries without the sanitizer's own flags.
  message(STATUS "kiln install tests: not registered in sanitized or fuzzing builds")
  return()
endif()

set(P ${CMAKE_BINARY_DIR}/install-test/prefix)
set(W ${CMAKE_BINARY_DIR}/install-test/work)
set(TINY ${PROJECT_SOURCE_DIR}/examples/tiny_cnn)
# The example's input and reference output, as kiln_run_model's arguments (a string for sh -c).
set(TINY_DATA "${TINY}/test_data_set_0/input_0.pb ${TINY}/test_data_set_0/output_0.pb")
set(CONSUMER ${W}/consumer)
# What runs from the prefix must find its libraries by itself.
set(CLEAN_ENV ${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH --unset=KILN_DEVICE_LIBRARY)
file(MAKE_DIRECTORY ${W})

add_test(NAME install.prefix
         COMMAND ${CMAKE_COMMAND} -DBUILD=${CMAKE_BINARY_DIR} -DSOURCE=${PROJECT_SOURCE_DIR} -DPREFIX=${P}
                 -P ${CMAKE_CURRENT_LIST_DIR}/install/prefix.cmake)
set_tests_properties(install.prefix PROPERTIES FIXTURES_SETUP kiln_install)

add_test(NAME install.headers
         COMMAND ${CMAKE_COMMAND} -DPREFIX=${P} -DCXX=${CMAKE_CXX_COMPILER} -DWORK=${W}/headers
                 -P ${CMAKE_CURRENT_LIST_DIR}/install/headers.cmake)
set_tests_properties(install.headers PROPERTIES FIXTURES_REQUIRED kiln_install)

add_test(NAME install.cli
         COMMAND ${CLEAN_ENV} sh -c "${P}/bin/kiln compile ${TINY}/model.onnx -o ${W}/tiny_cnn.so && ${P}/bin/kiln run ${W}/tiny_cnn.so --input input=${TINY}/test_data_set_0/input_0.pb --output-dir ${W}/run && ${P}/bin/kiln check ${TINY}")
set_tests_properties(install.cli PROPERTIES FIXTURES_REQUIRED kiln_install FIXTURES_SETUP kiln_install_module)

add_test(NAME install.consumer_build
         COMMAND ${CMAKE_COMMAND} -DPREFIX=${P} -DSOURCE=${PROJECT_SOURCE_DIR}/tests/install_consumer -DBINARY=${CONSUMER}
                 -DGENERATOR=${CMAKE_GENERATOR} -DCC=${CMAKE_C_COMPILER} -DCXX=${CMAKE_CXX_COMPILER}
                 -P ${CMAKE_CURRENT_LIST_DIR}/install/consumer.cmake)
set_tests_properties(install.consumer_build PROPERTIES FIXTURES_REQUIRED kiln_install FIXTURES_SETUP kiln_install_consumer)

add_test(NAME install.consumer_runtime COMMAND ${CLEAN_ENV} sh -c "${CONSUMER}/kiln_run_model ${W}/tiny_cnn.so ${TINY_DATA}")
add_test(NAME install.consumer_runtime_static
         COMMAND ${CLEAN_ENV} sh -c "${CONSUMER}/kiln_run_model_static ${W}/tiny_cnn.so ${TINY_DATA}")
set_tests_properties(install.consumer_runtime install.consumer_runtime_static PROPERTIES
                     FIXTURES_REQUIRED "kiln_install_consumer;kiln_install_module")
add_test(NAME install.consumer_compiler
         COMMAND ${CLEAN_ENV} sh -c "${CONSUMER}/kiln_compile_model ${TINY}/model.onnx ${W}/tiny_cnn_api.so && ${CONSUMER}/kiln_run_model ${W}/tiny_cnn_api.so ${TINY_DATA}")
set_tests_properties(install.consumer_compiler PROPERTIES FIXTURES_REQUIRED kiln_install_consumer)
set(install_tests install.prefix install.headers install.cli install.consumer_build install.consumer_runtime
                  install.consumer_runtime_static install.consumer_compiler)

find_program(KILN_PKG_CONFIG pkg-config)
if(KILN_PKG_CONFIG)
  # PKG_CONFIG_LIBDIR: the prefix's .pc files and no others.
  add_test(NAME install.pkg_config
           COMMAND ${CLEAN_ENV} PKG_CONFIG_LIBDIR=${P}/lib/pkgconfig sh -c "${CMAKE_C_COMPILER} -std=c99 -Wall -Wextra -Werror ${PROJECT_SOURCE_DIR}/tests/install_consumer/run_model.c -o ${W}/run_model_pc $(${KILN_PKG_CONFIG} --cflags --libs kiln-runtime) -Wl,-rpath,${P}/lib && ${W}/run_model_pc ${W}/tiny_cnn.so ${TINY_DATA}")
  set_tests_properties(install.pkg_config PROPERTIES FIXTURES_REQUIRED "kiln_install;kiln_install_module")
  list(APPEND install_tests install.pkg_config)
else()
  message(STATUS "kiln install tests: no pkg-config (Debian package pkg-config), so no install.pkg_config")
endif()

find_library(KILN_OPENCL_ICD NAMES OpenCL libOpenCL.so.1)
if(KILN_OPENCL_ICD)
  add_test(NAME install.opencl
           COMMAND ${CLEAN_ENV} POCL_CACHE_DIR=${W}/pocl-cache sh -c "${P}/bin/kiln compile ${TINY}/model.onnx -o ${W}/tiny_cnn_opencl.so --target opencl && ${CONSUMER}/kiln_run_model ${W}/tiny_cnn_opencl.so ${TINY_DATA}")
  set_tests_properties(install.opencl PROPERTIES FIXTURES_REQUIRED "kiln_install;kiln_install_consumer")
  list(APPEND install_tests install.opencl)
endif()

if(KILN_HAVE_AARCH64_RUNNER AND KILN_QEMU_AARCH64)
  add_test(NAME install.aarch64 COMMAND ${CLEAN_ENV} ${P}/bin/kiln check ${TINY} --target "llvm -mtriple=aarch64-linux-gnu")
  set_tests_properties(install.aarch64 PROPERTIES FIXTURES_REQUIRED kiln_install)
  list(APPEND install_tests install.aarch64)
endif()

set_tests_properties(${install_tests} PROPERTIES LABELS install)
kiln_test_timeout(120 ${install_tests})
