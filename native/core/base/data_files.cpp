#include "core/base/data_files.hpp"

#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>

#include "core/base/embedded_data.hpp"
#include "core/base/error.hpp"
#include "core/base/file_reader.hpp"

namespace headroom {
namespace {

// models.json is about 60 kB; a data file a thousand times larger is a mistake, not a catalog.
constexpr std::uint64_t kMaxDataFileBytes = 64ull << 20;

nlohmann::json parse_or_throw(const std::string& origin, const std::string& text) {
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error("data file " + origin + " is not valid JSON: " + e.what());
  }
}

nlohmann::json load(const std::string& name) {
  if (const char* dir = std::getenv("HEADROOM_DATA_DIR"); dir && *dir) {
    std::string path = std::string(dir) + "/" + name;
    // A file the override folder has is read through the one file reader (UTF-8 paths on Windows,
    // regular files only, bounded); one it lacks is answered by the embedded copy, as before.
    std::error_code ec;
    if (std::filesystem::exists(std::filesystem::u8path(path), ec))
      return parse_or_throw(path, read_text_file(path, kMaxDataFileBytes));
  }
  std::size_t count = 0;
  const data::EmbeddedFile* files = data::embedded_files(&count);
  for (std::size_t i = 0; i < count; ++i) {
    if (name == files[i].name) return parse_or_throw("(embedded) " + name, files[i].text);
  }
  throw Error("data file " + name + " is not part of this build (expected native/data/" + name + ")");
}

}  // namespace

const nlohmann::json& data_file(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, nlohmann::json> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, load(name)).first;
  return it->second;
}

}  // namespace headroom
