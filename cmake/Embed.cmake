# mblast_embed(VAR NAMESPACE ns BASE dir FILES f1 f2 ...)
# Generates a C++ source defining `ns::files()`, a list of {relative path, contents} pairs for the
# given files, and sets ${VAR}_SOURCES to it. Regenerated whenever one of the files changes.
function(mblast_embed var)
  cmake_parse_arguments(ARG "" "NAMESPACE;BASE" "FILES" ${ARGN})
  set(out ${CMAKE_BINARY_DIR}/generated/${var}.cpp)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DNAMESPACE=${ARG_NAMESPACE} -DBASE=${ARG_BASE}
            "-DFILES=${ARG_FILES}" -P ${CMAKE_SOURCE_DIR}/cmake/EmbedScript.cmake
    DEPENDS ${ARG_FILES} ${CMAKE_SOURCE_DIR}/cmake/EmbedScript.cmake
    COMMENT "Embedding ${var}" VERBATIM)
  set(${var}_SOURCES ${out} PARENT_SCOPE)
endfunction()
