#pragma once
// The one reader of JSON requests: every entry point (estimate, plan, llm, ...) declares its fields in a
// table (key, kind, range, meaning) and reads the request through it, so every entry point rejects an
// unknown field, a wrong kind and an out-of-range value the same way, with the same words. The table
// knows nothing of models or cards; what a value means beyond its kind and range is the entry point's.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace headroom::request {

enum class Kind {
  Bool,    // true | false
  Int,     // a whole number in [lo, hi]
  Number,  // a finite number in [lo, hi]
  String,  // a non-empty string
  Bytes,   // a whole number of bytes in [lo, hi]
  Size,    // a number of GiB or a size text ("24GB", "11.5 GiB"); the bytes in [lo, hi]
  Enum,    // one of `choices` ("full|tiled|headroom")
  Object,  // a JSON object; its content is the entry point's to check
  List,    // a JSON array; its content is the entry point's to check
  Any,     // any JSON value; its content is the entry point's to check (e.g. a workflow as object or text)
};

struct Field {
  std::string_view key;
  Kind kind;
  std::string_view meaning;  // one line, for messages and documentation
  double lo = 0;             // inclusive range of Int, Number, Bytes and Size (ignored by the rest)
  double hi = 0;
  std::string_view choices = {};  // Enum: the accepted values separated by '|'
  bool required = false;
  // How a command line gives the field (cli/field_flags.hpp builds the parser and the --help from it):
  // forms separated by '|', each
  //   "name"          --name VALUE (for a Bool, the switch --name sets true)
  //   "name=TEXT"     the switch --name sets the field as if TEXT were given ("disable-async-offload=0")
  //   "name:W=T/W=T"  --name WORD, each word standing for a value ("os:linux=false/windows=true")
  // Every field of a table a command serves has at least one form (a test holds each table to it).
  std::string_view flags = {};
  // Bytes: the unit a bare number on the command line is in (--lora 300 = 300 MiB); 0 = bytes.
  std::uint64_t unit = 0;
};

using Fields = std::vector<Field>;

// "expected a whole number from 16 to 16384": what a field takes, as the messages and the docs say it.
std::string expectation(const Field& f);

// "width  whole number from 16 to 16384: image width in px" lines, one per field, for --help texts.
std::string documentation(const Fields& fields);

// The table as a JSON Schema object ({type: object, properties, required, additionalProperties: false}),
// each property carrying its meaning, range and command-line forms ("x-flags"), for docs/request.schema.json.
nlohmann::json json_schema(const Fields& fields);

// Turns a command-line flag's text into the JSON value `f` takes ("1024" -> 1024 for an Int, "true" ->
// true for a Bool), so a flag and a JSON field meet the same rules. Throws InputError(f.key).
nlohmann::json value_from_text(const Field& f, const std::string& text);

// A request checked against its table. The constructor rejects a body that is not an object, an
// unknown key (naming it, the closest accepted key and all of them), a missing required field, and a
// present field of the wrong kind or out of its range. The getters then only convert.
class Request {
 public:
  Request(const nlohmann::json& body, std::string what, const Fields& fields);

  bool has(std::string_view key) const;
  const nlohmann::json& raw(std::string_view key) const;
  const Field& field(std::string_view key) const;

  bool flag(std::string_view key) const;
  std::int64_t integer(std::string_view key) const;
  double number(std::string_view key) const;
  std::string text(std::string_view key) const;  // String and Enum
  std::uint64_t bytes(std::string_view key) const;  // Bytes and Size

  // The value, or `fallback` when the field is absent.
  bool flag_or(std::string_view key, bool fallback) const { return has(key) ? flag(key) : fallback; }
  std::int64_t integer_or(std::string_view key, std::int64_t fallback) const { return has(key) ? integer(key) : fallback; }
  double number_or(std::string_view key, double fallback) const { return has(key) ? number(key) : fallback; }
  std::string text_or(std::string_view key, const std::string& fallback) const { return has(key) ? text(key) : fallback; }
  std::optional<std::uint64_t> bytes_if(std::string_view key) const {
    return has(key) ? std::optional<std::uint64_t>(bytes(key)) : std::nullopt;
  }

  const std::string& what() const { return what_; }
  const nlohmann::json& body() const { return body_; }

 private:
  const nlohmann::json& body_;
  std::string what_;
  const Fields& fields_;
};

}  // namespace headroom::request
