#pragma once
// A state dict made of models.json entries' `recognise` sections, for the recognition tests: the tensors
// a real file of those models holds at least.
#include <initializer_list>
#include <set>
#include <string>

#include "catch.hpp"
#include "core/base/data_files.hpp"
#include "core/inspect/recognise.hpp"

namespace support {

// One entry's keys and shapes, or a variant's over its base model's (a real variant file holds every
// tensor of its base), each tensor once, in the dtype given.
inline headroom::ModelFile header_of(std::initializer_list<const char*> models, const std::string& path,
                                     const char* dtype = "bf16") {
  using nlohmann::json;
  headroom::ModelFile f;
  f.path = path;
  f.format = "safetensors";
  std::set<std::string> done;
  for (const char* model : models) {
    bool found = false;
    for (const auto& m : headroom::data_file("models.json")["models"]) {
      if (m["name"] != model) continue;
      found = true;
      const json& rec = m["recognise"];
      const json shapes = rec.value("shapes", json::object());  // kept alive: items() of a temporary dangles
      for (const auto& [key, shape] : shapes.items())
        if (done.insert(key).second)
          f.tensors.push_back(
              headroom::TensorRecord{key, dtype, shape.get<std::vector<std::uint64_t>>(), 1, 2, false});
      for (const auto& k : rec["all_keys"])
        if (done.insert(k.get<std::string>()).second)
          f.tensors.push_back(headroom::TensorRecord{k.get<std::string>(), dtype, {4}, 4, 8, false});
    }
    if (!found) FAIL("no models.json entry " << model);
  }
  return f;
}

}  // namespace support
