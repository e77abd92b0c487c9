#pragma once
// Reading the explainer's JSON answer in the OOM tests: every fix text, and whether a fix id is offered.
#include <string>

#include <nlohmann/json.hpp>

namespace oom_answers {

inline std::string fix_text(const nlohmann::json& r) {
  std::string out;
  for (const auto& f : r["fixes"]) out += f["text"].get<std::string>() + "\n";
  return out;
}

inline bool has_fix(const nlohmann::json& r, const char* id) {
  for (const auto& f : r["fixes"])
    if (f["id"] == id) return true;
  return false;
}

}  // namespace oom_answers
