# The runtime's size budget (issue 11): a stripped copy of libkiln_runtime.so must be at most
# LIMIT bytes. docs/c_api.md, "The tiny runtime", says what each part costs.
#   cmake -DLIB=<libkiln_runtime.so> -DSTRIP=<strip> -DLIMIT=<bytes> -DOUT=<copy> -P runtime_size.cmake
file(COPY_FILE ${LIB} ${OUT})
execute_process(COMMAND ${STRIP} --strip-all ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${STRIP} failed on ${OUT}")
endif()
file(SIZE ${OUT} bytes)
math(EXPR kib "${bytes} / 1024")
message(STATUS "stripped libkiln_runtime.so: ${bytes} bytes (${kib} KiB), limit ${LIMIT}")
if(bytes GREATER LIMIT)
  message(FATAL_ERROR "libkiln_runtime.so stripped is ${bytes} bytes, over the ${LIMIT}-byte budget")
endif()
