// Hostile input, round 2 (issue 27): long names cost no more than short ones and are not echoed back
// whole (item 6), and in-range fields whose product is beyond any machine are refused instead of
// saturating to 2^63 or wrapping to 0 (item 9).
#include <string>

#include "catch.hpp"
#include "core/api/api.hpp"
#include "core/base/error.hpp"

using nlohmann::json;
using namespace headroom;

namespace {

// The InputError a request ends in: its field and message.
std::pair<std::string, std::string> refusal(json (*call)(const json&), const json& request) {
  try {
    call(request);
  } catch (const InputError& e) {
    return {e.field(), e.what()};
  }
  FAIL("the request was answered: " << request.dump().substr(0, 200));
  return {};
}

}  // namespace

TEST_CASE("a megabyte-long name is refused by its field, at once, and not echoed whole", "[hostile][request]") {
  const std::string huge(1 << 20, 'x');
  for (const char* key : {"gpu", "model", "precision"}) {
    INFO(key);
    json request = {{"model", "flux1-dev"}};
    request[key] = huge;
    auto [field, message] = refusal(api::estimate, request);
    CHECK(field == key);
    CHECK(message.find("1048576 bytes long; expected a name or a path of at most 32768 bytes") != std::string::npos);
    CHECK(message.size() < 400);
  }
  SECTION("an unknown key of a megabyte") {
    auto [field, message] = refusal(api::estimate, {{"model", "flux1-dev"}, {huge, 1}});
    CHECK(field.size() < 120);
    CHECK(field.find("(1048576 bytes)") != std::string::npos);
  }
}

TEST_CASE("a long unknown name gets suggestions from its start and a short echo", "[hostile][catalog]") {
  // Under the field limit but far longer than any name: the did-you-mean table is bounded by the
  // compared prefix, and the message shows the start and the length.
  const std::string name = "flux1-dex" + std::string(30000, 'q');
  auto [field, message] = refusal(api::estimate, {{"model", name}});
  CHECK(field == "model");
  CHECK(message.find("unknown model 'flux1-dexqqq") != std::string::npos);
  CHECK(message.find("(30009 bytes)") != std::string::npos);
  CHECK(message.size() < 2000);
}

TEST_CASE("an LLM or training request whose sizes multiply past 1 EiB is refused, not saturated", "[hostile][llm]") {
  SECTION("inference: the KV cache of a million layers and heads") {
    auto [field, message] = refusal(api::llm, {{"params", 100000}, {"layers", 1000000}, {"kv_heads", 1000000},
                                               {"head_dim", 1000000}, {"context", 100000000}, {"batch", 65536},
                                               {"vram_bytes", 24ull << 30}});
    CHECK(field == "context");
    CHECK(message.find("more than the 1 EiB any machine holds") != std::string::npos);
  }
  SECTION("training: activations of ten million tokens of a million-wide model") {
    auto [field, message] = refusal(api::train, {{"params", 100000}, {"layers", 1000000}, {"hidden", 1000000},
                                                 {"seq_len", 10000000}, {"batch", 65536}, {"method", "full"}});
    CHECK(field == "seq_len");
    CHECK(message.find("more than the 1 EiB any machine holds") != std::string::npos);
  }
  SECTION("the largest real requests still answer") {
    json out = api::llm({{"model", "llama-3.1-70b"}, {"context", 131072}, {"batch", 64}, {"vram_bytes", 80ull << 30}});
    CHECK(out["total_bytes"].get<std::uint64_t>() > (80ull << 30));
    CHECK(out["headroom_bytes"].get<std::int64_t>() < 0);
    CHECK(out["headroom_bytes"].get<std::int64_t>() > -(1ll << 50));
  }
}

TEST_CASE("a recognised shape whose product passes 2^40 is refused, never wrapped to 0", "[hostile][recognise]") {
  const std::uint64_t big = 1ull << 40;
  auto [field, message] = refusal(api::recognise, {{"tensors", {{"w", {{"dtype", "bf16"}, {"shape", {big, big}}}}}}});
  CHECK(field == "tensors.w.shape");
  CHECK(message.find("expected at most 2^40 elements") != std::string::npos);
}
