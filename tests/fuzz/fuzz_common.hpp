#pragma once
// Shared by the fuzz targets: run one parser on a buffer, then the inspector's summary and JSON
// output on whatever parsed. FileFormatError is the expected answer to garbage; any other
// exception, a sanitizer report or an allocation over libFuzzer's -malloc_limit_mb is a bug.
#include <cstdio>
#include <cstdlib>
#include <exception>

#include <nlohmann/json.hpp>

#include "core/base/error.hpp"
#include "core/base/file_reader.hpp"
#include "core/inspect/inspector.hpp"

namespace headroom_fuzz {

// A catalog in the models.json `recognise` schema so the matcher runs on fuzzed names and shapes.
inline const nlohmann::json& catalog() {
  static const nlohmann::json c = nlohmann::json::parse(R"({"models": [
    {"name": "m1", "role": "diffusion_model", "recognise": {"all_keys": ["a.weight", "b"], "shapes": {"a.weight": [2, 2]}}},
    {"name": "m2", "role": "vae", "recognise": {"all_keys": ["w"], "absent_keys": ["x"], "prefixes": ["first_stage_model."]}},
    {"name": "m3", "role": "text_encoder", "recognise": {"shapes": {"w": [4]}}}]})");
  return c;
}

template <typename Parse>
int run(const char* name, const unsigned char* data, std::size_t size, Parse parse) {
  headroom::MemorySource source(name, data, size);
  try {
    parse(source);
    headroom::MemorySource again(name, data, size);
    headroom::Inspection i = headroom::summarise(headroom::read_model_file(again), catalog());
    std::string out = i.to_json().dump();
    if (out.empty()) std::abort();
  } catch (const headroom::FileFormatError&) {
    // the expected answer to a malformed file
  } catch (const std::exception& e) {
    std::fprintf(stderr, "unexpected exception type: %s\n", e.what());
    std::abort();
  }
  return 0;
}

}  // namespace headroom_fuzz
