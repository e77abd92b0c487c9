// Every record of shared/facts/oom-examples.json, parsed field by field against its `expected`
// block (the README's conversion rules). Skipped with a warning when shared/ is absent.
#include <fstream>
#include <sstream>
#include <string>

#include "catch.hpp"
#include "core/api/api.hpp"

using nlohmann::json;

namespace {

// The README's names for backend/origin, in ours. "hip" is ROCm; "pytorch_allocator" is any
// PyTorch allocator (caching, cudaMallocAsync, MPS).
std::string our_backend(const std::string& b) { return b == "hip" ? "rocm" : b; }
std::string our_origin(const std::string& o) {
  if (o == "pytorch_allocator") return "pytorch";
  if (o == "cuda_runtime") return "cuda-runtime";
  if (o == "vllm_kv_cache") return "vllm";
  if (o == "llama_cpp") return "llama.cpp";
  return o;
}

// True when the message itself names no GPU API: the README then took the backend from the
// thread's hardware, which a parser cannot see, so "unknown" is the honest answer.
bool names_no_backend(const std::string& text) {
  for (const char* w : {"CUDA", "cuda", "HIP", "ROCm", "MPS", "cuDNN", "CUBLAS", "cudnn"})
    if (text.find(w) != std::string::npos) return false;
  return true;
}

}  // namespace

TEST_CASE("oom examples: every shared record parses field by field") {
  std::string path = std::string(HEADROOM_SHARED_DIR) + "/facts/oom-examples.json";
  std::ifstream in(path);
  if (!in) {
    WARN("skipped: " << path << " is absent (the verbatim copies in test_oom_parse.cpp still run)");
    return;
  }
  std::stringstream ss;
  ss << in.rdbuf();
  json records = json::parse(ss.str());
  REQUIRE(records.size() >= 20);
  const std::pair<const char*, const char*> fields[] = {
      {"requested_bytes", "requested_bytes"},
      {"gpu_index", "gpu_index"},
      {"total_bytes", "total_bytes"},
      {"free_bytes", "free_bytes"},
      {"allocated_by_torch_bytes", "allocated_bytes"},
      {"reserved_unallocated_bytes", "reserved_unallocated_bytes"},
      {"reserved_total_bytes", "reserved_total_bytes"},
      {"this_process_bytes", "process_bytes"},
      {"other_processes", "other_processes"},
  };
  for (const auto& rec : records) {
    const std::string text = rec["text"];
    const json& e = rec["expected"];
    json r = headroom::api::explain(text);
    INFO(rec["id"].get<std::string>() << " (" << rec["format"].get<std::string>() << ")");
    REQUIRE(r["recognised"] == true);
    for (const auto& [theirs, ours] : fields) {
      INFO(theirs);
      CHECK(r[ours] == e[theirs]);
    }
    const json& extra = rec["extra"];
    const bool system_ram = extra.is_object() && extra.value("device_api", "").find("cpu") != std::string::npos;
    if (system_ram) {
      CHECK(r["backend"] == "cpu");  // README: backend "unknown", device_api "cpu (system RAM)"
      CHECK(r["diagnosis"]["id"] == "system_ram");
    } else if (names_no_backend(text) && r["backend"] == "unknown") {
      SUCCEED("backend not named in the text");
    } else {
      CHECK(r["backend"] == our_backend(e["backend"]));
    }
    if (e["origin"] == "other") {
      CHECK((r["origin"] == "transformers" || r["origin"] == "pytorch"));
    } else {
      CHECK(r["origin"] == our_origin(e["origin"]));
    }
    // Every number and flag the fixture's `extra` records is a field of the message, so each must be
    // parsed, a key added to the fixture included. Strings there are the collector's notes and exact
    // spellings (device_api, *_note, *_exact), not values a parser returns.
    if (extra.is_object()) {
      for (const auto& [key, value] : extra.items()) {
        if (value.is_string()) continue;
        INFO("extra." << key);
        REQUIRE(r["extra"].contains(key));
        CHECK(r["extra"][key] == value);
      }
    }
    // A diagnosis and at least one fix for every real message.
    CHECK(!r["diagnosis"]["id"].get<std::string>().empty());
    CHECK(!r["fixes"].empty());
  }
}
