# GPU targets checked without a GPU (docs/gpu.md, "Checked on every run without a GPU"):
#  - check.<case>.opencl: every example and shared model compiled for the opencl target and run
#    by the runtime on PoCL (OpenCL on this CPU), against the same references and tolerances as
#    the CPU checks; registered when an OpenCL ICD loader is installed (Debian: ocl-icd-libopencl1
#    and pocl-opencl-icd).
#  - compile.<case>.cuda: the same models compiled for sm_80 and sm_90 cubins and PTX through
#    NVRTC (ptxas checks every kernel's resources); registered when kiln was built with NVRTC.
#  - cuda.run_without_driver: a CUDA module run here fails with its message; registered when
#    this machine has no libcuda.so.1.
# PoCL caches built kernels in the build folder (a cold build costs 1-3 s per program), one
# folder per test: PoCL 3.1's cache is not safe for processes sharing it (pocl/pocl#1480: an
# opencl check aborted, twice, in parallel CTest runs sharing one folder).
set(KILN_POCL_CACHE ${CMAKE_BINARY_DIR}/pocl-cache)
find_library(KILN_OPENCL_ICD NAMES OpenCL libOpenCL.so.1)
# Where no OpenCL device opens in a process that holds LLVM, as `kiln` does (TSan,
# cmake/sanitize.cmake), the tests that run OpenCL modules from `kiln` (check, tune, conformance)
# are replaced by one that the refusal fires; kiln-runner's run on PoCL stays.
if(KILN_OPENCL_ICD AND NOT KILN_OPENCL_BESIDE_LLVM)
  kiln_cli_test(check.tiny_cnn.opencl_under_tsan 1 "not available in a ThreadSanitizer build" check
                ${CMAKE_SOURCE_DIR}/examples/tiny_cnn --target opencl)
endif()
if(KILN_OPENCL_ICD AND KILN_OPENCL_BESIDE_LLVM)
  foreach(entry ${KILN_CHECK_CASES})
    string(REPLACE "=" ";" parts ${entry})
    list(GET parts 0 name)
    list(GET parts 1 dir)
    add_test(NAME check.${name}.opencl COMMAND kiln_cli check ${dir} --target opencl)
    set_tests_properties(check.${name}.opencl PROPERTIES ENVIRONMENT "POCL_CACHE_DIR=${KILN_POCL_CACHE}/${name}")
  endforeach()
  kiln_cli_test(check.tiny_cnn.opencl_fp16 0 "PASS tiny_cnn" check ${CMAKE_SOURCE_DIR}/examples/tiny_cnn --target opencl
                --precision fp16 --rtol 1e-2 --atol 1e-2)
  set_tests_properties(check.tiny_cnn.opencl_fp16 PROPERTIES ENVIRONMENT "POCL_CACHE_DIR=${KILN_POCL_CACHE}/tiny_cnn_fp16")
endif()
if(KILN_OPENCL_ICD)
  kiln_cli_test(cli.save_device_code 0 "wrote 8 files of device code into" compile
                ${CMAKE_SOURCE_DIR}/examples/tiny_cnn/model.onnx -o ${KILN_CLI_OUT}/tiny_cnn.opencl.so --target opencl
                --save-device-code ${KILN_CLI_OUT}/tiny_cnn_opencl_code)
  set_tests_properties(cli.save_device_code PROPERTIES FIXTURES_SETUP kiln_opencl_module)
  # kiln bench --roofline measures CPU ceilings: a device module is refused as one, before timing.
  kiln_cli_test(roofline.device_module 1 "kiln bench: error: --roofline measures CPU ceilings: .*tiny_cnn.opencl.so is a device module"
                bench ${KILN_CLI_OUT}/tiny_cnn.opencl.so --roofline)
  set_tests_properties(roofline.device_module PROPERTIES FIXTURES_REQUIRED kiln_opencl_module)
  # A runtime without its device layer refuses a device module by name.
  kiln_cli_test(cli.run_without_device_library 1 "it runs on OpenCL: the runtime's device layer libkiln_device.so was not found"
                run ${KILN_CLI_OUT}/tiny_cnn.opencl.so --input input=${CMAKE_SOURCE_DIR}/examples/tiny_cnn/test_data_set_0/input_0.pb
                --output-dir ${KILN_CLI_OUT})
  set_tests_properties(cli.run_without_device_library PROPERTIES FIXTURES_REQUIRED kiln_opencl_module
                       ENVIRONMENT "KILN_DEVICE_LIBRARY=${KILN_CLI_OUT}/no_such_libkiln_device.so")
  # kiln-runner --device-inputs: the input copied to a device buffer once, set from there, the
  # output byte for byte what NumPy computes (relu is exact).
  set(relu_cl ${KILN_CLI_OUT}/relu.opencl.so)
  kiln_cli_test(runner.compile_relu_opencl 0 "compiled" compile
                ${CMAKE_SOURCE_DIR}/tests/conformance/fake_root/test_relu_ok/model.onnx -o ${relu_cl} --target opencl)
  set_tests_properties(runner.compile_relu_opencl PROPERTIES FIXTURES_SETUP kiln_relu_opencl)
  add_test(NAME runner.device_inputs_opencl COMMAND ${CMAKE_COMMAND} -DSTATUS=0 -DREGEX=latency:.*y:.float32 -P ${KILN_EXPECT}
           -- $<TARGET_FILE:kiln_runner> ${relu_cl} --input x=${CMAKE_SOURCE_DIR}/tests/runner/fixtures/x_3x4x5.npy
           --device-inputs --repeat 2 --output-dir ${KILN_CLI_OUT}/relu_opencl_out)
  add_test(NAME runner.device_inputs_opencl_output COMMAND ${CMAKE_COMMAND} -E compare_files
           ${KILN_CLI_OUT}/relu_opencl_out/y.npy ${CMAKE_SOURCE_DIR}/tests/runner/fixtures/y_3x4x5.npy)
  set_tests_properties(runner.device_inputs_opencl PROPERTIES FIXTURES_REQUIRED kiln_relu_opencl FIXTURES_SETUP kiln_relu_opencl_out
                       ENVIRONMENT "POCL_CACHE_DIR=${KILN_POCL_CACHE}/relu")
  set_tests_properties(runner.device_inputs_opencl_output PROPERTIES FIXTURES_REQUIRED kiln_relu_opencl_out)
endif()
if(KILN_OPENCL_ICD AND KILN_OPENCL_BESIDE_LLVM)
  # Tuning for the GPU: every candidate measured on PoCL in a child, then the log applied and the
  # tuned model checked against its reference on PoCL.
  kiln_cli_test(tune.tiny_cnn.opencl 0 "6/6. nn.softmax: 3/3 trials" tune ${CMAKE_SOURCE_DIR}/examples/tiny_cnn/model.onnx
                --log ${KILN_CLI_OUT}/tiny_cnn.opencl.tune.json --trials 3 --target opencl)
  set_tests_properties(tune.tiny_cnn.opencl PROPERTIES FIXTURES_SETUP kiln_opencl_tuned
                       ENVIRONMENT "POCL_CACHE_DIR=${KILN_POCL_CACHE}/tune_tiny_cnn")
  kiln_cli_test(check.tiny_cnn.opencl_tuned 0 "tuned schedules applied to 6 kernels" check ${CMAKE_SOURCE_DIR}/examples/tiny_cnn
                --target opencl --tuning-log ${KILN_CLI_OUT}/tiny_cnn.opencl.tune.json)
  set_tests_properties(check.tiny_cnn.opencl_tuned PROPERTIES FIXTURES_REQUIRED kiln_opencl_tuned
                       ENVIRONMENT "POCL_CACHE_DIR=${KILN_POCL_CACHE}/tiny_cnn_tuned")
endif()
if(NOT KILN_OPENCL_ICD)
  message(STATUS "kiln: no OpenCL ICD loader: the check.*.opencl tests are not registered")
endif()
kiln_cli_test(cli.save_device_code_cpu 1 "--save-device-code needs a cuda or opencl target" compile
              ${CMAKE_SOURCE_DIR}/examples/tiny_cnn/model.onnx -o ${KILN_CLI_OUT}/tiny_cnn.so --save-device-code
              ${KILN_CLI_OUT}/nowhere)

if(CUDAToolkit_FOUND AND KILN_CUDA)
  foreach(entry ${KILN_CHECK_CASES})
    string(REPLACE "=" ";" parts ${entry})
    list(GET parts 0 name)
    list(GET parts 1 dir)
    kiln_cli_test(compile.${name}.cuda 0 "NVRTC compiled [0-9]+ kernels for 3 images" compile ${dir}/model.onnx
                  -o ${KILN_CLI_OUT}/${name}.cuda.so --target "cuda -arch=sm_90")
  endforeach()
  set_tests_properties(compile.tiny_cnn.cuda PROPERTIES FIXTURES_SETUP kiln_cuda_module)
  find_library(KILN_CUDA_DRIVER NAMES libcuda.so.1)
  if(NOT KILN_CUDA_DRIVER)
    kiln_cli_test(cuda.run_without_driver 1 "it runs on CUDA: needs a CUDA driver: libcuda.so.1 not found" run
                  ${KILN_CLI_OUT}/tiny_cnn.cuda.so --input input=${CMAKE_SOURCE_DIR}/examples/tiny_cnn/test_data_set_0/input_0.pb)
    set_tests_properties(cuda.run_without_driver PROPERTIES FIXTURES_REQUIRED kiln_cuda_module)
    kiln_cli_test(cli.tune_cuda_without_driver 1 "cannot measure on the cuda device: needs a CUDA driver: libcuda.so.1 not found"
                  tune ${CMAKE_SOURCE_DIR}/examples/tiny_cnn/model.onnx --log ${KILN_CLI_OUT}/cuda_tune.json --trials 1
                  --target "cuda -arch=sm_90")
  endif()
else()
  kiln_cli_test(cli.cuda_without_nvrtc 1 "this kiln was built without it" compile
                ${CMAKE_SOURCE_DIR}/examples/tiny_cnn/model.onnx -o ${KILN_CLI_OUT}/tiny_cnn.cuda.so --target cuda)
endif()

# 16-bit floats on the GPU targets (stored as bits, computed in float, rounded per operation):
# every float16 / bfloat16 case of the ONNX node suite, on PoCL, must pass as on the CPU.
set(KILN_NODE_SUITE ${CMAKE_SOURCE_DIR}/../shared/onnx/node)
if(KILN_OPENCL_ICD AND KILN_OPENCL_BESIDE_LLVM AND EXISTS ${KILN_NODE_SUITE})
  file(GLOB kiln_f16_cases LIST_DIRECTORIES true ${KILN_NODE_SUITE}/*float16* ${KILN_NODE_SUITE}/*FLOAT16*
       ${KILN_NODE_SUITE}/*fp16*)
  set(kiln_f16_root ${CMAKE_CURRENT_BINARY_DIR}/node_float16)
  file(REMOVE_RECURSE ${kiln_f16_root})
  file(MAKE_DIRECTORY ${kiln_f16_root})
  foreach(c ${kiln_f16_cases})
    get_filename_component(n ${c} NAME)
    file(CREATE_LINK ${c} ${kiln_f16_root}/${n} SYMBOLIC)
  endforeach()
  add_test(NAME conformance.node_float16.opencl COMMAND kiln_cli conformance ${kiln_f16_root} --target opencl -j 2)
  set_tests_properties(conformance.node_float16.opencl PROPERTIES ENVIRONMENT "POCL_CACHE_DIR=${KILN_POCL_CACHE}/node_float16"
                       FAIL_REGULAR_EXPRESSION "[1-9][0-9]* failed" PASS_REGULAR_EXPRESSION " 0 failed")
endif()
