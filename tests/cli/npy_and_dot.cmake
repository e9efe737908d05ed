# Issue 14: NumPy files in kiln run / kiln check, and graph pictures (kiln compile --dump-dot).
# Included from tests/CMakeLists.txt, whose kiln_cli_test, KILN_CLI_OUT, KILN_RELU and the
# kiln_cli_modules fixture (relu.so) it uses.
set(KILN_NPY_FIX ${CMAKE_SOURCE_DIR}/tests/runner/fixtures)  # x_3x4x5.npy (relu's x), y = relu(x), broken ones
set(KILN_TINY ${CMAKE_SOURCE_DIR}/examples/tiny_cnn)
set(KILN_TENSOR_DATA ${CMAKE_CURRENT_SOURCE_DIR}/cli/tensor_data.py)
set(N ${KILN_CLI_OUT}/npy)
file(MAKE_DIRECTORY ${N})

# ---- kiln run with .npy inputs and outputs (relu.so: x float32[3,4,5]) -----------------------------
set(npy_tests)
macro(npy_test name status regex)
  kiln_cli_test(${name} ${status} ${regex} ${ARGN})
  list(APPEND npy_tests ${name})
endmacro()
npy_test(npy.run 0 "y: float32[[]3,4,5[]].* -> .*/npy/run/y.npy"
         run ${KILN_CLI_OUT}/relu.so --input x=${KILN_NPY_FIX}/x_3x4x5.npy --output-format npy --output-dir ${N}/run)
set_tests_properties(npy.run PROPERTIES FIXTURES_SETUP kiln_npy_run)
add_test(NAME npy.run_output_matches COMMAND ${CMAKE_COMMAND} -E compare_files ${N}/run/y.npy ${KILN_NPY_FIX}/y_3x4x5.npy)
set_tests_properties(npy.run_output_matches PROPERTIES FIXTURES_REQUIRED kiln_npy_run)
# Recognized by its magic bytes whatever its name.
add_test(NAME npy.run_by_magic COMMAND ${CMAKE_COMMAND} -E copy ${KILN_NPY_FIX}/x_3x4x5.npy ${N}/x_no_extension)
set_tests_properties(npy.run_by_magic PROPERTIES FIXTURES_SETUP kiln_npy_magic)
npy_test(npy.run_magic 0 "y: float32[[]3,4,5[]].* -> .*/npy/magic/y.pb"
         run ${KILN_CLI_OUT}/relu.so --input x=${N}/x_no_extension --output-dir ${N}/magic)
set_tests_properties(npy.run_magic PROPERTIES FIXTURES_REQUIRED kiln_npy_magic)
npy_test(npy.run_wrong_shape 1 "--input x=.*x_2x2.npy: .*input 'x': expected shape [[]3, 4, 5[]], got [[]2, 2[]]"
         run ${KILN_CLI_OUT}/relu.so --input x=${KILN_NPY_FIX}/x_2x2.npy --output-dir ${N}/err)
npy_test(npy.run_wrong_dtype 1 "--input x=.*x_int64.npy: .*input 'x': expected dtype float32, got int64"
         run ${KILN_CLI_OUT}/relu.so --input x=${KILN_NPY_FIX}/x_int64.npy --output-dir ${N}/err)
npy_test(npy.run_big_endian 1 "x_big_endian.npy': dtype '>f4' is big-endian. kiln reads little-endian arrays"
         run ${KILN_CLI_OUT}/relu.so --input x=${KILN_NPY_FIX}/x_big_endian.npy --output-dir ${N}/err)
npy_test(npy.run_fortran_order 1 "x_fortran.npy': the array is in Fortran order"
         run ${KILN_CLI_OUT}/relu.so --input x=${KILN_NPY_FIX}/x_fortran.npy --output-dir ${N}/err)
npy_test(npy.run_truncated 1 "x_truncated.npy': the header's shape [(]3, 4, 5[)] of float32 needs 240 bytes of data, the file has 100"
         run ${KILN_CLI_OUT}/relu.so --input x=${KILN_NPY_FIX}/x_truncated.npy --output-dir ${N}/err)
npy_test(npy.run_unsupported_dtype 1 "x_structured.npy': unsupported dtype [[][(]'a', '<f4'[)], [(]'b', '<f4'[)][]]"
         run ${KILN_CLI_OUT}/relu.so --input x=${KILN_NPY_FIX}/x_structured.npy --output-dir ${N}/err)
npy_test(npy.run_bad_output_format 1 "kiln run: error: --output-format 'csv': expected pb or npy"
         run ${KILN_CLI_OUT}/relu.so --input x=${KILN_NPY_FIX}/x_3x4x5.npy --output-format csv)
set_tests_properties(${npy_tests} PROPERTIES FIXTURES_REQUIRED kiln_cli_modules)

# ---- kiln check on data sets of .npy files -------------------------------------------------------
# relu_npy: input_0.npy and output_0.npy; relu_both: input_0 in both forms; relu_npy_shape: an
# input of the wrong shape.
add_test(NAME npy.make_check_cases COMMAND sh -c
  "rm -rf relu_npy relu_both relu_npy_shape \
   && mkdir -p relu_npy/test_data_set_0 relu_both/test_data_set_0 relu_npy_shape/test_data_set_0 \
   && for c in relu_npy relu_both relu_npy_shape; do cp ${KILN_RELU}/model.onnx $c/; done \
   && cp ${KILN_NPY_FIX}/x_3x4x5.npy relu_npy/test_data_set_0/input_0.npy \
   && cp ${KILN_NPY_FIX}/y_3x4x5.npy relu_npy/test_data_set_0/output_0.npy \
   && cp relu_npy/test_data_set_0/*.npy relu_both/test_data_set_0/ \
   && cp ${KILN_RELU}/test_data_set_0/input_0.pb relu_both/test_data_set_0/ \
   && cp ${KILN_NPY_FIX}/x_2x2.npy relu_npy_shape/test_data_set_0/input_0.npy \
   && cp ${KILN_NPY_FIX}/y_3x4x5.npy relu_npy_shape/test_data_set_0/output_0.npy"
  WORKING_DIRECTORY ${N})
set_tests_properties(npy.make_check_cases PROPERTIES FIXTURES_SETUP kiln_npy_cases)
kiln_cli_test(npy.check 0 "PASS relu_npy: worst error 0 " check ${N}/relu_npy)
kiln_cli_test(npy.check_both_forms 1 "test_data_set_0 has both input_0.npy and input_0.pb" check ${N}/relu_both)
kiln_cli_test(npy.check_wrong_shape 1 "test_data_set_0/input_0.npy: .*input 'x': expected shape [[]3, 4, 5[]], got [[]2, 2[]]"
              check ${N}/relu_npy_shape)
add_test(NAME npy.check_runner COMMAND kiln_cli check ${N}/relu_npy --runner $<TARGET_FILE:kiln_runner>)
set_tests_properties(npy.check npy.check_both_forms npy.check_wrong_shape npy.check_runner
                     PROPERTIES FIXTURES_REQUIRED kiln_npy_cases)

# ---- round trip on tiny_cnn: .pb in/.pb out against .npy in/.npy out ------------------------------
# The .npy input is the data set's input_0.pb rewritten (tensor_data.py); both runs' outputs must
# hold the same values, and the .npy one must match the data set's reference (kiln check).
add_test(NAME npy.round_trip_tiny_cnn COMMAND sh -c
  "set -e; rm -rf rt; mkdir -p rt/case/test_data_set_0 \
   && python3 ${KILN_TENSOR_DATA} to-npy ${KILN_TINY}/test_data_set_0/input_0.pb rt/input.npy \
   && $<TARGET_FILE:kiln_cli> compile ${KILN_TINY}/model.onnx -o rt/tiny.so \
   && $<TARGET_FILE:kiln_cli> run rt/tiny.so --input input=${KILN_TINY}/test_data_set_0/input_0.pb --output-dir rt/pb \
   && $<TARGET_FILE:kiln_cli> run rt/tiny.so --input input=rt/input.npy --output-format npy --output-dir rt/npy \
   && python3 ${KILN_TENSOR_DATA} same rt/pb/probabilities.pb rt/npy/probabilities.npy \
   && cp ${KILN_TINY}/model.onnx rt/case/ && cp rt/input.npy rt/case/test_data_set_0/input_0.npy \
   && cp ${KILN_TINY}/test_data_set_0/output_0.pb rt/case/test_data_set_0/output_0.pb \
   && $<TARGET_FILE:kiln_cli> check rt/case"
  WORKING_DIRECTORY ${N})
set_tests_properties(npy.round_trip_tiny_cnn PROPERTIES PASS_REGULAR_EXPRESSION "same: 10 float32 values.*PASS case")

# ---- graph pictures: kiln compile --dump-dot ------------------------------------------------------
set(D ${KILN_CLI_OUT}/dot)
file(MAKE_DIRECTORY ${D})
# One cluster per kernel the compile reports, named as the module names them.
add_test(NAME dot.tiny_cnn_clusters COMMAND sh -c
  "set -e; rm -f tiny.dot tiny_infer.dot \
   && out=$($<TARGET_FILE:kiln_cli> compile ${KILN_TINY}/model.onnx -o tiny.so --dump-dot fuse_ops tiny.dot \
            --dump-dot infer_types tiny_infer.dot 2>/dev/null) \
   && kernels=$(echo \"$out\" | sed -n 's/.*(\\([0-9]*\\) kernels.*/\\1/p') \
   && clusters=$(grep -c '^  subgraph cluster_' tiny.dot) \
   && echo \"$kernels kernels, $clusters clusters\" && test \"$kernels\" -eq \"$clusters\" \
   && grep -q 'label=\"fused_nn_conv2d_NCHWc_add_nn_relu_1\"' tiny.dot \
   && grep -q 'label=\"nn.conv2d\\\\nfloat32' tiny_infer.dot && ! grep -q cluster tiny_infer.dot \
   && echo 'clusters ok'"
  WORKING_DIRECTORY ${D})
set_tests_properties(dot.tiny_cnn_clusters PROPERTIES FIXTURES_SETUP kiln_dot_tiny PASS_REGULAR_EXPRESSION "clusters ok")
# Valid for Graphviz (skipped, status 77, where `dot` is not installed).
add_test(NAME dot.renders COMMAND sh -c
  "command -v dot >/dev/null || { echo 'no dot (graphviz): skipped'; exit 77; }; \
   dot -Tsvg tiny.dot -o tiny.svg && dot -Tsvg tiny_infer.dot -o tiny_infer.svg && dot -Tsvg tiny_prof.dot -o tiny_prof.svg"
  WORKING_DIRECTORY ${D})
set_tests_properties(dot.renders PROPERTIES SKIP_RETURN_CODE 77 FIXTURES_REQUIRED "kiln_dot_tiny;kiln_dot_prof")
kiln_cli_test(dot.unknown_stage 1
              "--dump-dot: unknown stage 'fuse_opz'. graph stages: infer_types, fold_constants, .*, alter_layout, fuse_ops"
              compile ${KILN_TINY}/model.onnx -o ${D}/out.so --dump-dot fuse_opz ${D}/x.dot)
kiln_cli_test(dot.unwritable 1 "--dump-dot fuse_ops: cannot write '.*README.md/x.dot': Not a directory"
              compile ${KILN_TINY}/model.onnx -o ${D}/out.so --dump-dot fuse_ops ${CMAKE_SOURCE_DIR}/README.md/x.dot)
kiln_cli_test(dot.stage_not_run 1 "--dump-dot convert_to_float16: that stage did not run for this model with these options"
              compile ${KILN_TINY}/model.onnx -o ${D}/out.so --dump-dot convert_to_float16 ${D}/x.dot)
kiln_cli_test(dot.missing_file 2 "--dump-dot: 2 required" compile ${KILN_TINY}/model.onnx -o ${D}/out.so --dump-dot fuse_ops)

# With a profile: kiln bench --profile-json, then each cluster's share of the time.
add_test(NAME dot.profile COMMAND sh -c
  "set -e; rm -f tiny_prof.json tiny_prof.dot \
   && $<TARGET_FILE:kiln_cli> bench tiny.so --repeat 2 --profile --profile-json tiny_prof.json \
   && $<TARGET_FILE:kiln_cli> compile ${KILN_TINY}/model.onnx -o tiny.so --dump-dot fuse_ops tiny_prof.dot \
      --dot-profile tiny_prof.json \
   && shares=$(grep -c 'label=\"fused_[a-zA-Z0-9_]*\\\\n[0-9.]*%\"' tiny_prof.dot) \
   && test \"$shares\" -eq $(grep -c '^  subgraph cluster_' tiny_prof.dot) && echo \"shares ok: $shares\""
  WORKING_DIRECTORY ${D})
set_tests_properties(dot.profile PROPERTIES FIXTURES_REQUIRED kiln_dot_tiny FIXTURES_SETUP kiln_dot_prof
                     PASS_REGULAR_EXPRESSION "wrote the profile.*shares ok")
kiln_cli_test(dot.profile_other_model 1 "--dot-profile '.*relu_prof.json': kernel 'fused_nn_relu_0' is not one of this model's kernels"
              compile ${KILN_TINY}/model.onnx -o ${D}/out.so --dump-dot fuse_ops ${D}/x.dot --dot-profile ${D}/relu_prof.json)
add_test(NAME dot.profile_relu COMMAND kiln_cli bench ${KILN_CLI_OUT}/relu.so --repeat 1 --profile --profile-json ${D}/relu_prof.json)
set_tests_properties(dot.profile_relu PROPERTIES FIXTURES_REQUIRED kiln_cli_modules FIXTURES_SETUP kiln_dot_relu_prof)
set_tests_properties(dot.profile_other_model PROPERTIES FIXTURES_REQUIRED kiln_dot_relu_prof)
kiln_cli_test(dot.profile_without_fuse_ops 1 "--dot-profile needs --dump-dot fuse_ops FILE"
              compile ${KILN_TINY}/model.onnx -o ${D}/out.so --dump-dot infer_types ${D}/x.dot --dot-profile ${D}/none.json)
kiln_cli_test(dot.profile_not_json 1 "--dot-profile: '.*README.md' is not JSON"
              compile ${KILN_TINY}/model.onnx -o ${D}/out.so --dump-dot fuse_ops ${D}/x.dot --dot-profile ${CMAKE_SOURCE_DIR}/README.md)
kiln_cli_test(dot.profile_json_needs_profile 2 "--profile-json requires --profile"
              bench ${KILN_CLI_OUT}/relu.so --profile-json ${D}/x.json)
