# -DKILN_SANITIZE=address,undefined | thread: kiln's own code (every library, tool, test and
# benchmark of this tree) built with those sanitizers; empty (the default): off. Included from
# the top CMakeLists.txt before any target. LLVM, libstdc++, protobuf and XGBoost stay
# uninstrumented, and so are the model libraries kiln links (export_library runs `cc -shared`
# on LLVM's objects only): they are dlopen'ed (RTLD_NOW | RTLD_LOCAL, no RTLD_DEEPBIND) into a
# sanitized process, where their malloc and free resolve to the sanitizer's, as the JIT's do.
#
# What a sanitized build adds:
#  - -fsanitize=<list> -fno-omit-frame-pointer -g on every C/C++ compile and link;
#    -fno-sanitize-recover=all, so the first UBSan report ends the process with status 1 and
#    fails its test (a recovered report would only be printed);
#  - KILN_SANITIZED=1 (and KILN_SANITIZE_ADDRESS=1 / KILN_SANITIZE_THREAD=1) for tests that
#    measure what a sanitizer distorts (sizes, timings) and skip themselves;
#  - cmake/sanitizer_defaults.c in every executable: the sanitizers' default options
#    (halt_on_error, print_stacktrace, LSan on) travel with the binary, so ctest, a test run
#    by hand and a `kiln` started by a test script all run the same way; ASAN_OPTIONS,
#    UBSAN_OPTIONS, LSAN_OPTIONS and TSAN_OPTIONS given in the environment still override them;
#  - KILN_TEST_TIMEOUT_FACTOR (1 when off): kiln_test_timeout() scales the tests' TIMEOUTs by it.
set(KILN_SANITIZE "" CACHE STRING "Sanitizers for kiln's code: address,undefined | thread | empty (off)")

set(KILN_TEST_TIMEOUT_FACTOR 1)
# Whether an OpenCL device opens in a process that holds LLVM (kiln, kiln_tests): not under TSan,
# which cannot follow the driver's own link-map namespace (src/device/opencl.cc); the tests that
# need it are registered only when it does (tests/CMakeLists.txt, tests/gpu.cmake).
set(KILN_OPENCL_BESIDE_LLVM ON)
if(KILN_SANITIZE)
  string(REPLACE "," ";" kiln_sanitizers "${KILN_SANITIZE}")
  foreach(s ${kiln_sanitizers})
    if(NOT s MATCHES "^(address|undefined|thread|leak)$")
      message(FATAL_ERROR "KILN_SANITIZE: unknown sanitizer '${s}' (expected address,undefined or thread)")
    endif()
  endforeach()
  if("thread" IN_LIST kiln_sanitizers AND ("address" IN_LIST kiln_sanitizers OR "leak" IN_LIST kiln_sanitizers))
    message(FATAL_ERROR "KILN_SANITIZE: thread cannot be combined with address or leak (configure two build trees)")
  endif()
  string(REPLACE ";" "," kiln_sanitizers_flag "${kiln_sanitizers}")
  add_compile_options(-fsanitize=${kiln_sanitizers_flag} -fno-omit-frame-pointer -g)
  add_link_options(-fsanitize=${kiln_sanitizers_flag})
  add_compile_definitions(KILN_SANITIZED=1)
  if("address" IN_LIST kiln_sanitizers)
    add_compile_definitions(KILN_SANITIZE_ADDRESS=1)
    set(KILN_TEST_TIMEOUT_FACTOR 4)
  endif()
  if("thread" IN_LIST kiln_sanitizers)
    add_compile_definitions(KILN_SANITIZE_THREAD=1)
    set(KILN_OPENCL_BESIDE_LLVM OFF)
    set(KILN_TEST_TIMEOUT_FACTOR 10)
  endif()
  if("undefined" IN_LIST kiln_sanitizers)
    # (-fsanitize=vptr stays on in the layers that use LLVM: Debian's libLLVM has RTTI, so the
    # typeinfo of its classes the check refers to is there.)
    add_compile_options(-fno-sanitize-recover=all)
  endif()
  message(STATUS "kiln: sanitizers ${kiln_sanitizers_flag}; test timeouts x${KILN_TEST_TIMEOUT_FACTOR}")
endif()

# kiln_test_timeout(SECONDS TEST...): the TIMEOUT of the tests (of the calling directory), scaled
# in sanitized builds.
function(kiln_test_timeout seconds)
  math(EXPR scaled "${seconds} * ${KILN_TEST_TIMEOUT_FACTOR}")
  set_tests_properties(${ARGN} PROPERTIES TIMEOUT ${scaled})
endfunction()

# kiln_sanitizer_defaults(): adds cmake/sanitizer_defaults.c to every executable defined so far
# (this directory and below). Called at the end of the top CMakeLists.txt.
function(kiln_sanitizer_defaults)
  if(NOT KILN_SANITIZE)
    return()
  endif()
  set(dirs ${CMAKE_CURRENT_SOURCE_DIR})
  while(dirs)
    list(POP_FRONT dirs dir)
    get_property(sub DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
    list(APPEND dirs ${sub})
    get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
    foreach(t ${targets})
      get_target_property(type ${t} TYPE)
      if(type STREQUAL "EXECUTABLE")
        target_sources(${t} PRIVATE ${PROJECT_SOURCE_DIR}/cmake/sanitizer_defaults.c)
      endif()
    endforeach()
  endwhile()
endfunction()
