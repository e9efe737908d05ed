# Coverage-guided fuzzers (issue 11: a malformed file is an error, never a crash). Off by default;
# fuzz/run.sh configures its own build with it:
#   cmake -S . -B build-fuzz -DKILN_FUZZ=ON -DCMAKE_C_COMPILER=clang-16 -DCMAKE_CXX_COMPILER=clang++-16
# (Debian: clang-16 libclang-rt-16-dev, the LLVM of the rest of kiln). Included from the top
# CMakeLists.txt before any target is defined, because every kiln library must be compiled with
# -fsanitize=fuzzer-no-link,address,undefined: libFuzzer's coverage has to reach the code under
# test, not just the few lines of a fuzz target. The fuzz targets themselves (fuzz/fuzzers.cmake)
# are added at the end of the top directory, once the libraries they link exist.
option(KILN_FUZZ "build the libFuzzer targets of fuzz/ with every kiln library instrumented (needs clang)" OFF)
if(NOT KILN_FUZZ)
  return()
endif()
if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  message(FATAL_ERROR "KILN_FUZZ=ON needs clang for libFuzzer, not ${CMAKE_CXX_COMPILER_ID}: configure with "
                      "-DCMAKE_C_COMPILER=clang-16 -DCMAKE_CXX_COMPILER=clang++-16 (Debian: clang-16 libclang-rt-16-dev)")
endif()
if(KILN_SANITIZE)
  message(FATAL_ERROR "KILN_FUZZ=ON brings its own sanitizers (address,undefined): leave KILN_SANITIZE empty")
endif()
# UB aborts (no recovery) so that libFuzzer records it as a crash with its input; line tables
# and frame pointers make the reports' stacks readable at little cost.
add_compile_options(-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
                    -gline-tables-only)
add_link_options(-fsanitize=address,undefined)

# kiln_fuzzer(NAME SOURCE LIBS...): the libFuzzer executable fuzz_NAME of SOURCE (which defines
# LLVMFuzzerTestOneInput) linked with LIBS. fuzz/run.sh runs every fuzzer declared this way,
# seeded from fuzz/seeds/NAME/ (small committed inputs) and from what fuzz/collect_seeds.sh
# gathers for NAME out of the repository's models; fuzz/NAME.dict, if present, is its dictionary.
# Adding a fuzzer is one call in fuzz/fuzzers.cmake (plus, optionally, seeds); SOURCE is
# relative to fuzz/.
function(kiln_fuzzer name source)
  add_executable(fuzz_${name} ${PROJECT_SOURCE_DIR}/fuzz/${source})
  target_link_libraries(fuzz_${name} PRIVATE ${ARGN})
  target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
  add_dependencies(kiln_fuzzers fuzz_${name})
  set_property(GLOBAL APPEND PROPERTY KILN_FUZZERS ${name})
endfunction()

# Deferred to the end of the top directory (a deferred call may include, not add_subdirectory).
cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL include ${CMAKE_SOURCE_DIR}/fuzz/fuzzers.cmake)
