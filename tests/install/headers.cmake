# Installed headers are the API (docs/architecture.md, "Folder layout"): each one compiles on its
# own against the prefix alone, so none includes a header private to src/ (not installed) or
# leans on what another header happened to include first. C++17, -fsyntax-only, one compiler
# run per header (about 80 headers, a few seconds each on 2 cores).
#   cmake -DPREFIX=<dir> -DCXX=<c++ compiler> -DWORK=<dir> -P headers.cmake
file(GLOB_RECURSE headers RELATIVE ${PREFIX}/include ${PREFIX}/include/kiln/*.h)
list(LENGTH headers n)
if(n LESS 50)
  message(FATAL_ERROR "only ${n} headers under ${PREFIX}/include/kiln: was the prefix installed?")
endif()
file(MAKE_DIRECTORY ${WORK})
set(failed "")
foreach(h ${headers})
  string(MAKE_C_IDENTIFIER ${h} id)
  file(WRITE ${WORK}/${id}.cc "#include \"${h}\"\n")
  execute_process(COMMAND ${CXX} -std=c++17 -fsyntax-only -Wall -Werror -I${PREFIX}/include ${WORK}/${id}.cc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    string(APPEND failed "\n${h}:\n${out}${err}")
  endif()
endforeach()
if(failed)
  message(FATAL_ERROR "installed headers that do not compile on their own from ${PREFIX}/include:${failed}")
endif()
message(STATUS "${n} installed headers each compile on their own from ${PREFIX}/include")
