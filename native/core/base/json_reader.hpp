#pragma once
// The one reader of JSON text that comes from outside (workflows, API requests, file headers).
// It bounds what nlohmann's recursive operations (copy, compare, dump, destroy in older versions)
// may later meet: nesting is refused past a depth limit while parsing, before the value exists,
// and a top-level type can be required at the first token, before the rest is parsed.
// Numbers outside a double (1e400) and non-JSON literals (NaN, Infinity) are refused as invalid JSON.
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

namespace headroom {

// Nesting limit of documents we do not know better: a ComfyUI workflow nests about 8 levels
// (/definitions/subgraphs/i/nodes/j/widgets_values/k) and an API request one more; 128 leaves custom
// nodes' widget data plenty of room while every recursive walk of the value stays a few kB of stack.
constexpr int kMaxJsonDepth = 128;

struct JsonLimits {
  int max_depth = kMaxJsonDepth;
  bool object_only = false;      // refuse any other top-level value at its first token
  const char* expected = "";     // what the document is, for messages ("a safetensors header needs 3")
  const char* what = "";         // the part of `source` that is JSON ("header"), "" for all of it
};

// Parses `text`. Throws FileFormatError(source, ...) naming the line and column of a syntax error,
// the depth limit, or the top-level type found; never anything else for any input.
nlohmann::json read_json(const std::string& text, const std::string& source, const JsonLimits& limits = {});

// The string at `key` of `object`; "" where the key is absent, null or not a string, or `object` is not an
// object (an answer's optional texts: the core answers null for "none"). Callers whose input must hold a
// string there check it themselves and say so (request_fields, DataReader, JsonFields).
std::string text_of(const nlohmann::json& object, const char* key);

// At most `max_chars` of a compact rendering of `v` (strings with invalid UTF-8 replaced), "..." when cut.
// Stops walking once the budget is spent, so a huge value costs no more than a small one.
std::string json_preview(const nlohmann::json& v, std::size_t max_chars = 80);

// `text` as it is when short, else its start and its length ("abc... (15728640 bytes)"): messages echo
// what came without sending a megabyte back.
std::string text_preview(const std::string& text, std::size_t max_chars = 80);

}  // namespace headroom
