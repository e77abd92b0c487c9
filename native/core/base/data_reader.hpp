#pragma once
// Reads one object of a data file (comfy_nodes.json sections, name rules) with every field checked:
// a missing, unknown or mistyped key throws Error naming the file, the entry and the key.
#include <algorithm>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/base/error.hpp"

namespace headroom {

struct DataReader {
  const std::string& file;
  std::string where;  // "nodes.KSampler", "file_names.vae[2]"

  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw Error(file + ": " + where + ": '" + key + "' " + what);
  }
  void known(const nlohmann::json& j, std::initializer_list<const char*> keys) const {
    for (const auto& kv : j.items())
      if (std::none_of(keys.begin(), keys.end(), [&](const char* k) { return kv.key() == k; })) {
        std::string list;
        for (const char* k : keys) list += (list.empty() ? "" : ", ") + std::string(k);
        fail(kv.key(), "is not a known key (expected " + list + ")");
      }
  }
  std::string text(const nlohmann::json& j, const char* key, bool required = false) const {
    auto it = j.find(key);
    if (it == j.end()) {
      if (required) fail(key, "is missing");
      return "";
    }
    if (!it->is_string() || it->get<std::string>().empty()) fail(key, "expected a non-empty string");
    return it->get<std::string>();
  }
  bool flag(const nlohmann::json& j, const char* key) const {
    auto it = j.find(key);
    if (it == j.end()) return false;
    if (!it->is_boolean()) fail(key, "expected true or false");
    return it->get<bool>();
  }
  std::optional<long long> integer(const nlohmann::json& j, const char* key) const {
    auto it = j.find(key);
    if (it == j.end()) return std::nullopt;
    if (!it->is_number_integer()) fail(key, "expected a whole number");
    return it->get<long long>();
  }
  // An array of strings; `allow_empty_words` for widget lists, where "" marks a frontend-only entry.
  std::vector<std::string> words(const nlohmann::json& v, const std::string& key, bool allow_empty_words = false) const {
    if (!v.is_array()) fail(key, "expected an array of strings");
    std::vector<std::string> out;
    for (const auto& w : v) {
      if (!w.is_string() || (!allow_empty_words && w.get<std::string>().empty()))
        fail(key, "expected an array of non-empty strings");
      out.push_back(w.get<std::string>());
    }
    return out;
  }
};

}  // namespace headroom
