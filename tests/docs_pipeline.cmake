# docs/architecture.md holds the pipeline's stage table as `kiln stages` prints it from
# src/pipeline.cc, between its two marker lines: fails, showing the table, when they differ.
#   cmake -DKILN=<kiln> -DDOC=<docs/architecture.md> -P docs_pipeline.cmake
execute_process(COMMAND ${KILN} stages OUTPUT_VARIABLE table RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "kiln stages failed (${rc})")
endif()
file(READ ${DOC} doc)
set(begin "<!-- pipeline table: the output of `kiln stages` -->\n")
set(end "<!-- end of pipeline table -->")
string(FIND "${doc}" "${begin}${table}${end}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${DOC}: the pipeline table between its markers is not what `kiln stages` prints; "
                      "put this there:\n${table}")
endif()
message(STATUS "docs/architecture.md's pipeline table is the pipeline's")
