# Issue 14: kiln bench --roofline and --roofline-svg. Included from tests/CMakeLists.txt, whose
# kiln_cli_test, KILN_CLI_OUT and KILN_PYTHON3 it uses.
set(RL ${KILN_CLI_OUT}/roofline)
file(MAKE_DIRECTORY ${RL})
add_test(NAME roofline.compile_tiny_cnn
         COMMAND kiln_cli compile ${CMAKE_SOURCE_DIR}/examples/tiny_cnn/model.onnx -o ${RL}/tiny.so)
set_tests_properties(roofline.compile_tiny_cnn PROPERTIES FIXTURES_SETUP kiln_roofline_tiny)
# The share check compares kernels with ceilings measured by kiln's own (instrumented, several
# times slower) loops under a sanitizer, where a kernel can pass its "ceiling": not there.
if(KILN_PYTHON3 AND NOT KILN_SANITIZE)
  add_test(NAME roofline.tiny_cnn COMMAND ${KILN_PYTHON3} ${CMAKE_CURRENT_SOURCE_DIR}/cli/roofline_check.py
                                          $<TARGET_FILE:kiln_cli> ${RL}/tiny.so ${RL}/tiny.svg)
  # The ceilings are measured on every core: alone, so the bandwidth is not shared with other tests.
  set_tests_properties(roofline.tiny_cnn PROPERTIES FIXTURES_REQUIRED kiln_roofline_tiny RUN_SERIAL TRUE
                       PASS_REGULAR_EXPRESSION "roofline ok")
endif()
kiln_cli_test(roofline.svg_without_roofline 2 "--roofline-svg requires --roofline"
              bench ${RL}/tiny.so --roofline-svg ${RL}/x.svg)
kiln_cli_test(roofline.svg_unwritable 1 "--roofline-svg: cannot write '.*README.md/x.svg': Not a directory"
              bench ${RL}/tiny.so --repeat 1 --roofline --roofline-svg ${CMAKE_SOURCE_DIR}/README.md/x.svg)
set_tests_properties(roofline.svg_without_roofline roofline.svg_unwritable PROPERTIES FIXTURES_REQUIRED kiln_roofline_tiny)
