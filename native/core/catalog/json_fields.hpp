#pragma once
// Typed reads of one object of a data file, for the loaders of native/data: every failure names the
// file, the entry, the key's path and what was expected ("models.json: model <name>: 'arch.hidden'
// expected an integer, got \"wide\""), so a broken data file fails at start-up, never mid-estimate.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace headroom {

// The values a figure may take, both ends included. A value outside is refused at load, naming the file,
// the key, the value and the range: a figure no real model or card has (a negative reserve, 1e19 bytes)
// would otherwise flow into every estimate and still end in "fits".
struct Range {
  double lo, hi;
};

class JsonFields {
 public:
  // `where`: "models.json: model <name>"; `path`: the object's own key path ("" at the entry).
  JsonFields(const nlohmann::json& object, std::string where, std::string path = "");

  bool has(const char* key) const;
  JsonFields object(const char* key) const;
  std::optional<JsonFields> optional_object(const char* key) const;
  const nlohmann::json& array(const char* key) const;  // an array, elements unchecked

  int integer(const char* key) const;
  std::uint64_t count(const char* key) const;  // a non-negative integer
  double number(const char* key) const;
  bool flag(const char* key) const;
  std::string text(const char* key) const;
  std::vector<int> integers(const char* key) const;
  std::array<int, 3> triple(const char* key) const;  // three positive integers
  std::vector<std::string> texts(const char* key) const;
  std::vector<double> numbers(const char* key) const;  // finite numbers

  std::optional<int> optional_integer(const char* key) const;
  std::optional<std::uint64_t> optional_count(const char* key) const;
  std::optional<double> optional_number(const char* key) const;  // null reads as absent
  std::optional<bool> optional_flag(const char* key) const;
  std::optional<std::string> optional_text(const char* key) const;

  // The same reads, refused outside `range`.
  int integer(const char* key, Range range) const;
  std::uint64_t count(const char* key, Range range) const;
  double number(const char* key, Range range) const;
  std::optional<int> optional_integer(const char* key, Range range) const;
  std::optional<std::uint64_t> optional_count(const char* key, Range range) const;
  std::optional<double> optional_number(const char* key, Range range) const;
  std::vector<int> integers(const char* key, Range range) const;
  std::array<int, 3> triple(const char* key, Range range) const;

  // Throws Error "<where>: '<path.key>' <problem>".
  [[noreturn]] void fail(const char* key, const std::string& problem) const;
  const std::string& where() const { return where_; }
  std::string key_path(const char* key) const;

 private:
  const nlohmann::json* get(const char* key, const char* expected) const;  // throws when missing
  [[noreturn]] void wrong(const char* key, const char* expected, const nlohmann::json& got) const;
  void within(const char* key, double value, Range range) const;
  const nlohmann::json& j_;
  std::string where_, path_;
};

}  // namespace headroom
