# The fuzz targets: included by cmake/fuzz.cmake (only with -DKILN_FUZZ=ON) at the end of the
# top directory, when every library exists. `cmake --build build-fuzz --target kiln_fuzzers` builds
# them; fuzz/run.sh builds, seeds and runs them.
add_custom_target(kiln_fuzzers)

# The layers link with --no-undefined in the normal build (the layering check needs it). Here
# clang puts the sanitizer and libFuzzer runtimes in the executables only, and the instrumented
# shared libraries' references to them resolve when they are loaded: the flag must go.
# LLVM is built without RTTI, so UBSan's vptr check cannot be compiled into its users (it would
# reference typeinfo that libLLVM does not have); they are not fuzzed anyway (no codegen here).
get_property(kiln_all_targets DIRECTORY ${CMAKE_SOURCE_DIR} PROPERTY BUILDSYSTEM_TARGETS)
foreach(t ${kiln_all_targets})
  get_target_property(type ${t} TYPE)
  if(type STREQUAL "SHARED_LIBRARY")
    get_target_property(opts ${t} LINK_OPTIONS)
    if(opts)
      list(REMOVE_ITEM opts -Wl,--no-undefined)
      set_target_properties(${t} PROPERTIES LINK_OPTIONS "${opts}")
    endif()
  endif()
  if(NOT type STREQUAL "INTERFACE_LIBRARY")
    get_target_property(libs ${t} LINK_LIBRARIES)
    if(libs AND "LLVM" IN_LIST libs)
      target_compile_options(${t} PRIVATE -fno-sanitize=vptr)
    endif()
  endif()
endforeach()

# One line per fuzzer (cmake/fuzz.cmake says what kiln_fuzzer does with seeds and dictionaries).
kiln_fuzzer(onnx_import onnx_import.cc kiln_relay)  # bytes -> importer -> graph passes up to plan_memory
kiln_fuzzer(tensor_pb tensor_pb.cc kiln_relay)      # the .pb TensorProto reader of kiln run/check
kiln_fuzzer(npy npy.cc kiln_npy)                    # the .npy reader of kiln-runner and kiln check
kiln_fuzzer(tuning_log tuning_log.cc kiln_autotune kiln_target)  # read_log and what --tuning-log does with it
kiln_fuzzer(module_data module_data.cc kiln_runtime_cxx)  # a module's version, target, plan and weights: validate_module_data

# The fuzzers' names, for fuzz/run.sh.
get_property(kiln_fuzzer_names GLOBAL PROPERTY KILN_FUZZERS)
string(REPLACE ";" "\n" kiln_fuzzer_lines "${kiln_fuzzer_names}")
file(WRITE ${CMAKE_BINARY_DIR}/fuzzers.txt "${kiln_fuzzer_lines}\n")
