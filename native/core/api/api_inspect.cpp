// api::inspect: the JSON face of the inspector. A malformed file gets {path, error} in its slot so
// one bad file never hides the report on the others.
#include "core/api/api.hpp"
#include "core/base/error.hpp"
#include "core/inspect/inspector.hpp"

namespace headroom::api {

json inspect(const std::vector<std::string>& paths) {
  if (paths.empty()) throw InputError("paths", "expected at least one .safetensors or .gguf file");
  json out = json::array();
  for (const auto& path : paths) {
    try {
      out.push_back(inspect_file(path).to_json());
    } catch (const FileFormatError& e) {
      out.push_back({{"path", path}, {"error", e.what()}, {"error_kind", "malformed"}});
    } catch (const Error& e) {
      out.push_back({{"path", path}, {"error", e.what()}, {"error_kind", "unreadable"}});
    }
  }
  return out;
}

}  // namespace headroom::api
