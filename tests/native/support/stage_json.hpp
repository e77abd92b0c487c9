#pragma once
// What the estimate tests ask of an answer: a stage found by name in its JSON, and whether that stage's notes
// say something.
#include <string>

#include "catch.hpp"
#include "core/api/api.hpp"

namespace support {

inline const nlohmann::json& stage_json(const nlohmann::json& r, const std::string& name) {
  for (const auto& s : r["stages"])
    if (s["name"] == name) return s;
  FAIL("no " << name << " stage in " << r.dump().substr(0, 400));
  static const nlohmann::json none;
  return none;
}

inline bool notes_have(const nlohmann::json& s, const std::string& text) {
  for (const auto& n : s["notes"])
    if (n.get<std::string>().find(text) != std::string::npos) return true;
  return false;
}

}  // namespace support
