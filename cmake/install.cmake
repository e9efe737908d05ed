# `cmake --install build --prefix P`: the kiln CLI and kiln-runner (bin/), the runtime, the device
# layer and the compiler's layers (lib/), the headers (include/kiln, include/dlpack), a CMake
# package (lib/cmake/kiln: find_package(kiln CONFIG) gives kiln::runtime, kiln::runtime_static,
# kiln::compiler, kiln::autotune and the layers below them) and lib/pkgconfig/kiln-runtime.pc.
# With the aarch64 cross build, its runtime and runner go to P/aarch64/{bin,lib}.
#
# The prefix mirrors the build tree (bin/ beside lib/, aarch64/ beside bin/): the tools find their
# companions relative to themselves (kiln: ../aarch64/bin/kiln-runner; the runtime:
# libkiln_device.so beside itself), so fixed folder names, not GNUInstallDirs' lib64 or
# lib/<multiarch>. Included from the top CMakeLists.txt after every target is defined; the
# tests are tests/install.cmake.
include(CMakePackageConfigHelpers)

set(KILN_EXPORTED_TARGETS kiln_runtime kiln_runtime_static kiln_runtime_cxx kiln_device kiln_support kiln_target kiln_ir kiln_te
                          kiln_schedule kiln_codegen kiln_relay kiln_lower kiln_compiler kiln_autotune)
set(KILN_COMPILER_LIBRARIES kiln_target kiln_ir kiln_te kiln_schedule kiln_codegen kiln_relay kiln_lower
                            kiln_compiler kiln_autotune)

foreach(t ${KILN_EXPORTED_TARGETS})
  # Exported as kiln::<layer> (kiln::runtime, kiln::compiler, ...).
  string(REGEX REPLACE "^kiln_" "" name ${t})
  set_target_properties(${t} PROPERTIES EXPORT_NAME ${name})
endforeach()

# RPATHs, so nothing needs LD_LIBRARY_PATH: installed programs find lib/ beside bin/; the
# compiler's layers find each other in lib/ and keep the directories of outside libraries the
# linker found off the default search path (LLVM's, NVRTC under /usr/local/cuda). The runtime
# and the device layer link only the C and C++ libraries: no RPATH.
set_target_properties(kiln_cli kiln_runner PROPERTIES INSTALL_RPATH "\$ORIGIN/../lib")
set_target_properties(${KILN_COMPILER_LIBRARIES} PROPERTIES INSTALL_RPATH "\$ORIGIN" INSTALL_RPATH_USE_LINK_PATH ON)

install(TARGETS kiln_cli kiln_runner RUNTIME DESTINATION bin)
# The targets' include/ is the source tree's for the build only ($<BUILD_INTERFACE:...> in the
# top CMakeLists.txt); installed, they use P/include.
install(TARGETS ${KILN_EXPORTED_TARGETS} EXPORT kilnTargets
        LIBRARY DESTINATION lib ARCHIVE DESTINATION lib INCLUDES DESTINATION include)
install(DIRECTORY include/kiln DESTINATION include)
# kiln_runtime.h includes <dlpack/dlpack.h>: shipped with it, as cmake/runtime_only does, so a
# runtime user needs nothing but the prefix.
find_path(KILN_DLPACK_INCLUDE_DIR dlpack/dlpack.h REQUIRED)
install(FILES ${KILN_DLPACK_INCLUDE_DIR}/dlpack/dlpack.h DESTINATION include/dlpack)

install(EXPORT kilnTargets NAMESPACE kiln:: DESTINATION lib/cmake/kiln)
configure_package_config_file(cmake/kilnConfig.cmake.in ${CMAKE_BINARY_DIR}/kilnConfig.cmake
                              INSTALL_DESTINATION lib/cmake/kiln)
# Before 1.0 a minor version may change the API and the module format (the runtime refuses
# modules of another kiln version): only the same major.minor is compatible.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/kilnConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/kilnConfig.cmake ${CMAKE_BINARY_DIR}/kilnConfigVersion.cmake
        DESTINATION lib/cmake/kiln)

# pkg-config: the prefix is computed from the .pc file's own place, so the file is right for
# whatever --prefix `cmake --install` is given (the configured CMAKE_INSTALL_PREFIX may differ).
configure_file(cmake/kiln-runtime.pc.in ${CMAKE_BINARY_DIR}/kiln-runtime.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/kiln-runtime.pc DESTINATION lib/pkgconfig)

# The aarch64 runtime and runner (cmake/aarch64_runtime.cmake), where `kiln` looks for them.
if(KILN_HAVE_AARCH64_RUNNER)
  install(PROGRAMS ${KILN_AARCH64_DIR}/bin/kiln-runner DESTINATION aarch64/bin)
  install(FILES ${KILN_AARCH64_DIR}/lib/libkiln_runtime.so ${KILN_AARCH64_DIR}/lib/libkiln_runtime.a
          DESTINATION aarch64/lib)
endif()

include(${PROJECT_SOURCE_DIR}/tests/install.cmake)
