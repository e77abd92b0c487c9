// api::inspect: the JSON face of the inspector. A malformed file gets {path, error} in its slot so
// one bad file never hides the report on the others.
#include "core/api/api.hpp"
#include "core/base/error.hpp"
#include "core/base/request_fields.hpp"
#include "core/base/json_reader.hpp"
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

const request::Fields& inspect_fields() {
  static const request::Fields f = {
      {"paths", request::Kind::List, "the .safetensors / .gguf files to read (path strings)", 0, 0, {}, true}};
  return f;
}

json inspect_request(const json& body) {
  const request::Request request(body, "inspect", inspect_fields());
  std::vector<std::string> list;
  for (const auto& p : request.raw("paths")) {
    if (!p.is_string()) throw InputError("paths", "expected every entry to be a path string, got " + json_preview(p));
    list.push_back(p.get<std::string>());
  }
  return inspect(list);
}

}  // namespace headroom::api
