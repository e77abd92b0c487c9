#pragma once
// JSON data files compiled into the binary (see native/data/embed.cmake).
#include <cstddef>

namespace headroom::data {

struct EmbeddedFile {
  const char* name;
  const char* text;
};

// All files of native/data/*.json, sorted by name.
const EmbeddedFile* embedded_files(std::size_t* count);

}  // namespace headroom::data
