# Writes a C++ file that carries every native/data/*.json, so the CLI and the
# Python module answer without locating the source tree at run time.
file(GLOB _files "${DATA_DIR}/*.json")
list(SORT _files)
set(_body "// Generated from native/data/*.json by embed.cmake. Do not edit.\n#include \"core/base/embedded_data.hpp\"\nnamespace headroom::data {\nnamespace {\nconst EmbeddedFile kFiles[] = {\n")
foreach(_f ${_files})
  get_filename_component(_name "${_f}" NAME)
  file(READ "${_f}" _content)
  string(APPEND _body "  {\"${_name}\", R\"hr_json(${_content})hr_json\"},\n")
endforeach()
string(APPEND _body "};\n}  // namespace\nconst EmbeddedFile* embedded_files(std::size_t* count) {\n  *count = sizeof(kFiles) / sizeof(kFiles[0]);\n  return kFiles;\n}\n}  // namespace headroom::data\n")
file(WRITE "${OUT}.tmp" "${_body}")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUT}.tmp" "${OUT}")
