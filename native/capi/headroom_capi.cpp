// The C interface over core/api/api.hpp: a table from function name to handler, every exception turned
// into an error document, so no C++ exception or abort ever crosses into the caller's process.
#include "capi/headroom_capi.h"

#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <new>
#include <string>
#include <vector>

#include "core/api/api.hpp"
#include "core/base/error.hpp"
#include "core/base/json_reader.hpp"

namespace {

using nlohmann::json;
using Handler = std::function<json(const json&)>;

const std::map<std::string, Handler>& handlers() {
  static const std::map<std::string, Handler> table = {
      {"catalog", [](const json&) { return headroom::api::catalog(); }},
      {"estimate", [](const json& r) { return headroom::api::estimate(r); }},
      {"plan", [](const json& r) { return headroom::api::plan(r); }},
      {"apply_preset", [](const json& r) { return headroom::api::apply_preset(r); }},
      {"suggest_preset", [](const json& r) { return headroom::api::suggest_preset(r); }},
      {"decode_tile", [](const json& r) { return headroom::api::decode_tile(r); }},
      {"inspect", [](const json& r) { return headroom::api::inspect_request(r); }},
      {"explain", [](const json& r) { return headroom::api::explain_request(r); }},
      {"recognise", [](const json& r) { return headroom::api::recognise(r); }},
      {"llm", [](const json& r) { return headroom::api::llm(r); }},
      {"train", [](const json& r) { return headroom::api::train(r); }},
      {"runs", [](const json& r) { return headroom::api::runs(r); }},
      {"calibrate", [](const json& r) { return headroom::api::calibrate(r); }},
  };
  return table;
}

json error_document(const char* kind, const json& field, const std::string& message) {
  return {{"error", {{"kind", kind}, {"field", field}, {"message", message}}}};
}

json run(const char* function, const char* request_json) {
  if (function == nullptr) throw headroom::InputError("function", "expected a name, got NULL");
  auto it = handlers().find(function);
  if (it == handlers().end()) {
    std::string names;
    for (const auto& kv : handlers()) names += (names.empty() ? "" : ", ") + kv.first;
    throw headroom::InputError("function", std::string("unknown '") + function + "'; expected one of " + names);
  }
  json request = json::object();
  if (request_json != nullptr && *request_json != '\0') {
    try {
      request = headroom::read_json(request_json, "request", {headroom::kMaxJsonDepth, true, "", ""});
    } catch (const headroom::FileFormatError& e) {
      throw headroom::InputError("request", std::string(e.what()).substr(e.path().size() + 2));
    }
  }
  return it->second(request);
}

char* copy_out(const std::string& text) {
  char* out = static_cast<char*>(std::malloc(text.size() + 1));
  if (out != nullptr) std::memcpy(out, text.c_str(), text.size() + 1);
  return out;
}

}  // namespace

extern "C" char* headroom_call(const char* function, const char* request_json) {
  try {
    json result;
    try {
      result = json{{"ok", run(function, request_json)}};
    } catch (const headroom::InputError& e) {
      result = error_document("input", e.field(), e.what());
    } catch (const headroom::FileFormatError& e) {
      result = error_document("file", e.path(), e.what());
    } catch (const headroom::Error& e) {
      // Thrown on purpose with its own words: a data file (HEADROOM_DATA_DIR's or the built-in one) that
      // names its file and key. Not an internal error, and not the caller's request either.
      result = error_document("data", nullptr, e.what());
    } catch (const std::bad_alloc&) {
      result = error_document("internal", nullptr, "out of host memory");
    } catch (const std::exception& e) {
      result = error_document("internal", nullptr, std::string("internal error: ") + e.what());
    }
    // Invalid UTF-8 in a file name or header must not make the answer itself unreadable.
    return copy_out(result.dump(-1, ' ', false, json::error_handler_t::replace));
  } catch (...) {
    return copy_out(R"({"error":{"kind":"internal","field":null,"message":"internal error"}})");
  }
}

extern "C" void headroom_free(char* document) { std::free(document); }

extern "C" const char* headroom_version(void) { return HEADROOM_VERSION; }

extern "C" int headroom_abi_version(void) { return 1; }
