#include "core/data_files.hpp"

#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "core/embedded_data.hpp"
#include "core/error.hpp"

namespace headroom {
namespace {

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
    std::ifstream in(path, std::ios::binary);
    if (in) {
      std::stringstream ss;
      ss << in.rdbuf();
      return parse_or_throw(path, ss.str());
    }
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
