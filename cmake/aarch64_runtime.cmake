# kiln-runner (tools/runner) for this machine, and the runtime + kiln-runner cross-built for
# aarch64 when Debian's cross toolchain is installed (issue 10 item 5): `kiln compile --target
# "llvm -mtriple=aarch64-linux-gnu"` writes aarch64 modules, `kiln check` with that target runs
# them in <build>/aarch64/bin/kiln-runner under qemu-aarch64. Included from the top CMakeLists.txt
# after the kiln_cli target and enable_testing().

# .npy files: kiln-runner's input and output format; kiln check/run exchange them with it.
add_library(kiln_npy STATIC tools/runner/npy.cc)
target_include_directories(kiln_npy PUBLIC tools/runner)
# It needs dlpack.h alone and links no runtime: kiln-runner links libkiln_runtime.so, the kiln
# CLI libkiln_runtime_cxx.so, and a process must not load both.
target_link_libraries(kiln_cli PRIVATE kiln_npy)

# kiln-runner for this machine: links only the runtime (no LLVM, protobuf or XGBoost).
add_executable(kiln_runner tools/runner/kiln_runner.cc)
target_link_libraries(kiln_runner PRIVATE kiln_runtime kiln_npy)
set_target_properties(kiln_runner PROPERTIES OUTPUT_NAME kiln-runner)

# ---- the aarch64 cross build: a second CMake configure of cmake/runtime_only ---------------------
option(KILN_CROSS_AARCH64 "cross-build the runtime and kiln-runner for aarch64 when aarch64-linux-gnu-g++ is found" ON)
set(KILN_AARCH64_DIR ${CMAKE_BINARY_DIR}/aarch64)
find_program(KILN_AARCH64_CXX aarch64-linux-gnu-g++)
find_program(KILN_AARCH64_CC aarch64-linux-gnu-gcc)
find_program(KILN_QEMU_AARCH64 qemu-aarch64)
set(KILN_HAVE_AARCH64_RUNNER OFF)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64)$")
  message(STATUS "kiln aarch64: this machine is aarch64; build/bin/kiln-runner runs aarch64 modules, no cross build")
elseif(NOT KILN_CROSS_AARCH64)
  message(STATUS "kiln aarch64: cross build of the runtime and kiln-runner off (KILN_CROSS_AARCH64=OFF)")
elseif(NOT KILN_AARCH64_CXX OR NOT KILN_AARCH64_CC)
  message(STATUS "kiln aarch64: no aarch64-linux-gnu-g++/gcc in PATH, so no aarch64 runtime or kiln-runner "
                 "(install g++-aarch64-linux-gnu, or run scripts/install_deps.sh, and reconfigure)")
else()
  include(ExternalProject)
  find_path(KILN_DLPACK_INCLUDE_DIR dlpack/dlpack.h REQUIRED)
  find_path(KILN_JSON_INCLUDE_DIR nlohmann/json.hpp REQUIRED)
  set(kiln_aarch64_args
      -DCMAKE_TOOLCHAIN_FILE=${PROJECT_SOURCE_DIR}/cmake/aarch64-linux-gnu.toolchain.cmake
      -DCMAKE_C_COMPILER=${KILN_AARCH64_CC} -DCMAKE_CXX_COMPILER=${KILN_AARCH64_CXX}
      -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE}
      -DKILN_DLPACK_INCLUDE_DIR=${KILN_DLPACK_INCLUDE_DIR} -DKILN_JSON_INCLUDE_DIR=${KILN_JSON_INCLUDE_DIR})
  if(CMAKE_CXX_COMPILER_LAUNCHER)
    list(APPEND kiln_aarch64_args -DCMAKE_C_COMPILER_LAUNCHER=${CMAKE_C_COMPILER_LAUNCHER}
                                  -DCMAKE_CXX_COMPILER_LAUNCHER=${CMAKE_CXX_COMPILER_LAUNCHER})
  endif()
  # BUILD_ALWAYS: the sub-build's own dependency scan decides what is stale (runtime sources
  # changed in this tree); it is quick when nothing is.
  ExternalProject_Add(kiln_aarch64
    SOURCE_DIR ${PROJECT_SOURCE_DIR}/cmake/runtime_only
    BINARY_DIR ${KILN_AARCH64_DIR}
    CMAKE_ARGS ${kiln_aarch64_args}
    INSTALL_COMMAND ""
    BUILD_ALWAYS ON
    BUILD_BYPRODUCTS ${KILN_AARCH64_DIR}/bin/kiln-runner ${KILN_AARCH64_DIR}/lib/libkiln_runtime.so)
  set(KILN_HAVE_AARCH64_RUNNER ON)
  if(KILN_QEMU_AARCH64)
    message(STATUS "kiln aarch64: cross-building the runtime and kiln-runner with ${KILN_AARCH64_CXX} into "
                   "${KILN_AARCH64_DIR}; aarch64 checks run under ${KILN_QEMU_AARCH64}")
  else()
    message(STATUS "kiln aarch64: cross-building the runtime and kiln-runner with ${KILN_AARCH64_CXX} into "
                   "${KILN_AARCH64_DIR}; no qemu-aarch64 (Debian package qemu-user), so no aarch64 checks")
  endif()
endif()

add_subdirectory(tests/runner)
