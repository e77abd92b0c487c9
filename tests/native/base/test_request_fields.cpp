// One request layer (issue 9, item 4): every JSON entry point reads its request through a field table, so
// each rule below holds for every entry point at once. The expected messages are built from the tables'
// declared ranges, not copied from the code's output.
#include <functional>
#include <map>
#include <string>

#include "catch.hpp"
#include "core/api/api.hpp"
#include "core/base/error.hpp"
#include "core/base/request_fields.hpp"
#include "core/base/units.hpp"

using headroom::InputError;
using headroom::request::Field;
using headroom::request::Kind;
using nlohmann::json;
namespace api = headroom::api;

namespace {

const std::map<std::string, std::function<json(const json&)>>& entries() {
  static const std::map<std::string, std::function<json(const json&)>> m = {
      {"estimate", api::estimate},        {"plan", api::plan},           {"apply_preset", api::apply_preset},
      {"inspect", api::inspect_request},  {"recognise", api::recognise}, {"explain", api::explain_request},
      {"llm", api::llm},                  {"train", api::train},         {"suggest_preset", api::suggest_preset},
      {"decode_tile", api::decode_tile}};
  return m;
}

const char* const kCardEntries[] = {"estimate", "plan", "apply_preset", "suggest_preset", "llm", "train"};

// A request `entry` accepts, plus `extra`: what the card rules are checked against.
json valid_with(const std::string& entry, const json& extra) {
  json body;
  if (entry == "estimate") body = {{"model", api::catalog()["models"][0]["name"]}};
  if (entry == "plan" || entry == "suggest_preset") body = {{"workflow", json::object()}};
  if (entry == "apply_preset") body = {{"workflow", json::object()}, {"preset", api::catalog()["presets"][0]["name"]}};
  if (entry == "llm") body = {{"params", 8}, {"layers", 32}, {"kv_heads", 8}, {"head_dim", 128}, {"context", 1000}};
  if (entry == "train") body = {{"params", 8}, {"method", "full"}};
  if (entry == "decode_tile") body = {{"model", "flux-vae"}, {"latent_width", 64}, {"latent_height", 64}};
  body.update(extra);
  return body;
}

// The InputError `entry` throws for `body` (field and message); fails the test when it does not throw one.
std::pair<std::string, std::string> error_of(const std::string& entry, const json& body) {
  try {
    entries().at(entry)(body);
  } catch (const InputError& e) {
    return {e.field(), e.what()};
  } catch (const std::exception& e) {
    FAIL("not an InputError: " << e.what());
  }
  FAIL(entry << " accepted " << body.dump());
  return {};
}

// A value of the wrong kind for `f`.
json wrong_kind(const Field& f) {
  switch (f.kind) {
    case Kind::Bool: return "yes";
    case Kind::Int:
    case Kind::Number:
    case Kind::Bytes: return "12";
    case Kind::String:
    case Kind::Enum: return 5;
    case Kind::Size: return true;
    case Kind::Object: return json::array();
    case Kind::List: return json::object();
    case Kind::Any: break;
  }
  return nullptr;
}

}  // namespace

TEST_CASE("every entry point has a table, and every table key is unique", "[request]") {
  for (const auto& [name, call] : entries()) {
    INFO(name);
    const auto* fields = api::fields_of(name);
    REQUIRE(fields != nullptr);
    std::map<std::string, int> seen;
    for (const auto& f : *fields) CHECK(++seen[std::string(f.key)] == 1);
  }
  CHECK(api::fields_of("no such entry") == nullptr);
}

TEST_CASE("an unknown field is rejected by every entry point, naming it, the closest and all fields", "[request]") {
  for (const auto& [name, call] : entries()) {
    INFO(name);
    const auto& fields = *api::fields_of(name);
    // A typo of the entry's first field: one letter dropped.
    std::string first(fields.front().key);
    std::string typo = first.substr(0, first.size() - 1);
    auto [field, message] = error_of(name, {{typo, 1}});
    CHECK(field == typo);
    CHECK_THAT(message, Catch::Contains("unknown field") && Catch::Contains("did you mean " + first + "?"));
    for (const auto& f : fields) CHECK_THAT(message, Catch::Contains(std::string(f.key)));
    // Far from every field: no suggestion, still the list.
    auto [f2, m2] = error_of(name, {{"zzzzzzzzzzzz", 1}});
    CHECK(f2 == "zzzzzzzzzzzz");
    CHECK_THAT(m2, !Catch::Contains("did you mean"));
  }
}

TEST_CASE("vram_bytes: 0 gets the same answer from every entry point that takes a card", "[request]") {
  std::string expected;
  for (const char* name : kCardEntries) {
    INFO(name);
    auto [field, message] = error_of(name, {{"vram_bytes", 0}});
    CHECK(field == "vram_bytes");
    // 256 MiB = 268435456 is the smallest card the table declares.
    CHECK_THAT(message, Catch::Contains("from 268435456 (256.0 MiB) to 1125899906842624"));
    if (expected.empty()) expected = message;
    CHECK(message == expected);
  }
}

TEST_CASE("the card rules are one set: clashes and free memory above the card, everywhere", "[request]") {
  for (const char* name : kCardEntries) {
    INFO(name);
    auto [f1, m1] = error_of(name, valid_with(name, {{"gpu", "4090"}, {"vram", "24GB"}}));
    CHECK(f1 == "gpu");
    CHECK_THAT(m1, Catch::Contains("give only one of gpu, vram_bytes and vram"));
    auto [f2, m2] = error_of(name, valid_with(name, {{"vram_bytes", 8ull << 30}, {"free_bytes", 9ull << 30}}));
    CHECK(f2 == "free_bytes");
    CHECK_THAT(m2, Catch::Contains("more than the card's memory (8589934592 bytes)"));
    auto [f3, m3] = error_of(name, {{"vram", "100MB"}});
    CHECK(f3 == "vram");
    CHECK_THAT(m3, Catch::Contains("100MB"));
  }
}

TEST_CASE("a field of the wrong kind is named with what it takes, in every entry point", "[request]") {
  for (const auto& [name, call] : entries()) {
    for (const auto& f : *api::fields_of(name)) {
      json bad = wrong_kind(f);
      if (bad.is_null()) continue;
      INFO(name << "." << f.key << " = " << bad.dump());
      auto [field, message] = error_of(name, {{std::string(f.key), bad}});
      CHECK(field == std::string(f.key));
      CHECK_THAT(message, Catch::Contains(headroom::request::expectation(f)));
      // null is a wrong kind too (not "absent").
      auto [nf, nm] = error_of(name, {{std::string(f.key), nullptr}});
      CHECK(nf == std::string(f.key));
    }
  }
}

TEST_CASE("a number out of range names the declared range, in every entry point", "[request]") {
  for (const auto& [name, call] : entries()) {
    for (const auto& f : *api::fields_of(name)) {
      if (f.kind != Kind::Int && f.kind != Kind::Number && f.kind != Kind::Bytes) continue;
      for (double v : {f.lo - 1, f.hi + 1}) {
        INFO(name << "." << f.key << " = " << v);
        auto [field, message] = error_of(name, {{std::string(f.key), v}});
        CHECK(field == std::string(f.key));
        char lo[32], hi[32];
        std::snprintf(lo, sizeof lo, "%.0f", f.lo);
        std::snprintf(hi, sizeof hi, "%.0f", f.hi);
        if (f.lo != std::floor(f.lo)) std::snprintf(lo, sizeof lo, "%g", f.lo);
        CHECK_THAT(message, Catch::Contains(std::string("from ") + lo) && Catch::Contains(std::string(" to ") + hi));
      }
    }
  }
}

TEST_CASE("a missing required field is named by every entry point that has one", "[request]") {
  for (const auto& [name, call] : entries())
    for (const auto& f : *api::fields_of(name))
      if (f.required) {
        INFO(name << "." << f.key);
        json body = json::object();
        if (name == "apply_preset" && f.key == "preset") body["workflow"] = json::object();
        // The required fields listed before f present: the table names the first one missing.
        if (name == "decode_tile")
          for (const auto& before : *api::fields_of(name)) {
            if (before.key == f.key) break;
            if (before.required) body[std::string(before.key)] = valid_with(name, json::object())[std::string(before.key)];
          }
        auto [field, message] = error_of(name, body);
        if (name == "apply_preset" && f.key == "workflow") continue;  // checked first: preset comes after
        CHECK(field == std::string(f.key));
        CHECK_THAT(message, Catch::Contains("is required"));
      }
}

TEST_CASE("flag text becomes a JSON value by the field's kind", "[request]") {
  const Field n{"n", Kind::Int, "", 1, 10};
  CHECK(headroom::request::value_from_text(n, "8") == 8);
  CHECK_THROWS_WITH(headroom::request::value_from_text(n, "0x10"), Catch::Contains("n: expected a decimal number"));
  CHECK_THROWS_WITH(headroom::request::value_from_text(n, "2.5"), Catch::Contains("whole number"));
  const Field b{"b", Kind::Bool, ""};
  CHECK(headroom::request::value_from_text(b, "Yes") == true);
  CHECK(headroom::request::value_from_text(b, "off") == false);
  CHECK_THROWS_AS(headroom::request::value_from_text(b, "maybe"), InputError);
  // The same request through the CLI's path and as JSON gives the same answer.
  json as_text = {{"params", headroom::request::value_from_text(api::fields_of("llm")->at(1), "8")},
                  {"layers", 32}, {"kv_heads", 8}, {"head_dim", 128}, {"context", 1000}};
  json as_json = {{"params", 8}, {"layers", 32}, {"kv_heads", 8}, {"head_dim", 128}, {"context", 1000}};
  CHECK(api::llm(as_text)["total_bytes"] == api::llm(as_json)["total_bytes"]);
}

TEST_CASE("a table documents its fields from the declared meanings and ranges", "[request]") {
  const std::string doc = headroom::request::documentation(api::estimate_fields());
  CHECK_THAT(doc, Catch::Contains("  width: image width in px (a whole number from 16 to 16384)\n"));
  CHECK_THAT(doc, Catch::Contains("  model (required): "));
  CHECK_THAT(doc, Catch::Contains("  decode_mode: how the VAE decodes (full, tiled or headroom)\n"));
}

// The CLI's flags, its --help and docs/request.schema.json are generated from the tables: a field added
// without its flag, its meaning or its schema entry would be an option the command line cannot give.
TEST_CASE("every estimate field has a flag, a meaning and a schema entry; so do the card and loader fields of plan",
          "[request][schema]") {
  for (const char* entry : {"estimate", "plan"}) {
    const auto& fields = *api::fields_of(entry);
    const auto schema = headroom::request::json_schema(fields);
    for (const auto& f : fields) {
      INFO(entry << "." << f.key);
      const std::string key(f.key);
      CHECK_FALSE(f.meaning.empty());
      REQUIRE(schema["properties"].contains(key));
      CHECK(schema["properties"][key]["description"] == std::string(f.meaning));
      const bool workflow_own = std::string(entry) == "plan" &&
                                (key == "workflow" || key == "models_dir" || key == "model_folders" || key == "source");
      if (!workflow_own) CHECK_FALSE(f.flags.empty());
    }
    CHECK(schema["additionalProperties"] == false);
  }
}
