# Installs the build tree into a fresh prefix and checks what landed there: the files a user
# reaches for, and that no installed program or library still looks for libraries in the build
# or source tree (an RPATH left pointing there would hide a broken install on this machine).
#   cmake -DBUILD=<build dir> -DSOURCE=<source dir> -DPREFIX=<dir> -P prefix.cmake
file(REMOVE_RECURSE ${PREFIX})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD} --prefix ${PREFIX}
                OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install ${BUILD} --prefix ${PREFIX} failed (${rc}):\n${out}${err}")
endif()

foreach(f bin/kiln bin/kiln-runner lib/libkiln_runtime.so lib/libkiln_runtime.a lib/libkiln_runtime_cxx.so lib/libkiln_device.so
          lib/libkiln_compiler.so lib/libkiln_autotune.so lib/cmake/kiln/kilnConfig.cmake
          lib/cmake/kiln/kilnConfigVersion.cmake lib/cmake/kiln/kilnTargets.cmake lib/pkgconfig/kiln-runtime.pc
          include/kiln/runtime/kiln_runtime.h include/kiln/compiler.h include/dlpack/dlpack.h)
  if(NOT EXISTS ${PREFIX}/${f})
    message(FATAL_ERROR "cmake --install did not install ${f} into ${PREFIX}")
  endif()
endforeach()

find_program(READELF readelf REQUIRED)
file(GLOB_RECURSE installed LIST_DIRECTORIES false ${PREFIX}/bin/* ${PREFIX}/lib/*.so ${PREFIX}/aarch64/*)
foreach(f ${installed})
  execute_process(COMMAND ${READELF} -d ${f} OUTPUT_VARIABLE dynamic ERROR_QUIET)
  string(REGEX MATCHALL "\\((RPATH|RUNPATH)\\)[^\n]*" paths "${dynamic}")
  foreach(tree ${BUILD} ${SOURCE})
    string(FIND "${paths}" "${tree}" at)
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "the installed ${f} looks for libraries in ${tree}: ${paths}")
    endif()
  endforeach()
endforeach()
message(STATUS "installed into ${PREFIX}; no RPATH into ${BUILD} or ${SOURCE}")
