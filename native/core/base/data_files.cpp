#include "core/base/data_files.hpp"

#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>

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

// The override of `name` under HEADROOM_DATA_DIR, when the folder has an entry of that name. Any entry
// counts, a dangling link or a folder too: the user meant to replace the file, and the reader then says
// what is wrong with it, instead of the embedded copy answering as if nothing had been set.
std::optional<std::string> override_path(const std::string& name) {
  const char* dir = std::getenv("HEADROOM_DATA_DIR");
  if (dir == nullptr || *dir == '\0') return std::nullopt;
  std::error_code ec;
  if (!std::filesystem::is_directory(std::filesystem::u8path(dir), ec))
    throw Error(std::string("HEADROOM_DATA_DIR is '") + dir +
                "', which is not a folder: set it to the folder holding your models.json, gpus.json or presets.json, "
                "or unset it to use the built-in data");
  const std::string path = std::string(dir) + "/" + name;
  if (std::filesystem::symlink_status(std::filesystem::u8path(path), ec).type() == std::filesystem::file_type::not_found)
    return std::nullopt;
  return path;
}

nlohmann::json load(const std::string& name) {
  // A file the override folder has is read through the one file reader (UTF-8 paths on Windows,
  // regular files only, bounded); one it lacks is answered by the embedded copy.
  if (auto path = override_path(name)) return parse_or_throw(*path, read_text_file(*path, kMaxDataFileBytes));
  std::size_t count = 0;
  const data::EmbeddedFile* files = data::embedded_files(&count);
  for (std::size_t i = 0; i < count; ++i) {
    if (name == files[i].name) return parse_or_throw("(embedded) " + name, files[i].text);
  }
  throw Error("data file " + name + " is not part of this build (expected native/data/" + name + ")");
}

}  // namespace

std::string data_file_label(const std::string& name) { return override_path(name).value_or(name); }

const nlohmann::json& data_file(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, nlohmann::json> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(name);
  if (it == cache.end()) it = cache.emplace(name, load(name)).first;
  return it->second;
}

}  // namespace headroom
