#include "core/catalog/json_fields.hpp"

#include <cmath>
#include <cstdio>
#include <limits>

#include "core/base/error.hpp"
#include "core/base/json_reader.hpp"

namespace headroom {

using nlohmann::json;

namespace {

const char* type_of(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::string: return "a string";
    case json::value_t::array: return "an array";
    case json::value_t::object: return "an object";
    case json::value_t::number_float: return "a fractional number";
    default: return v.is_number() ? "a number" : "another value";
  }
}

bool is_integer(const json& v) {
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  const double d = v.get<double>();
  return std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15;
}

}  // namespace

JsonFields::JsonFields(const json& object, std::string where, std::string path)
    : j_(object), where_(std::move(where)), path_(std::move(path)) {}

std::string JsonFields::key_path(const char* key) const { return path_.empty() ? key : path_ + "." + key; }

void JsonFields::fail(const char* key, const std::string& problem) const {
  throw Error(where_ + ": '" + key_path(key) + "' " + problem);
}

void JsonFields::wrong(const char* key, const char* expected, const json& got) const {
  fail(key, std::string("expected ") + expected + ", got " + type_of(got) + " " + json_preview(got, 40));
}

bool JsonFields::has(const char* key) const { return j_.is_object() && j_.contains(key) && !j_.at(key).is_null(); }

const json* JsonFields::get(const char* key, const char* expected) const {
  if (!has(key)) fail(key, std::string("is missing (expected ") + expected + ")");
  return &j_.at(key);
}

JsonFields JsonFields::object(const char* key) const {
  const json* v = get(key, "an object");
  if (!v->is_object()) wrong(key, "an object", *v);
  return JsonFields(*v, where_, key_path(key));
}

std::optional<JsonFields> JsonFields::optional_object(const char* key) const {
  if (!has(key)) return std::nullopt;
  return object(key);
}

const json& JsonFields::array(const char* key) const {
  const json* v = get(key, "an array");
  if (!v->is_array()) wrong(key, "an array", *v);
  return *v;
}

int JsonFields::integer(const char* key) const {
  const json* v = get(key, "an integer");
  if (!is_integer(*v) || std::fabs(v->get<double>()) > std::numeric_limits<int>::max()) wrong(key, "an integer", *v);
  return static_cast<int>(v->get<double>());
}

std::uint64_t JsonFields::count(const char* key) const {
  const json* v = get(key, "a non-negative integer");
  if (v->is_number_unsigned()) return v->get<std::uint64_t>();
  if (!is_integer(*v) || v->get<double>() < 0) wrong(key, "a non-negative integer", *v);
  return static_cast<std::uint64_t>(v->get<double>());
}

double JsonFields::number(const char* key) const {
  const json* v = get(key, "a number");
  // 1e999 parses as infinity: no figure of a data file is meant to be one.
  if (!v->is_number()) wrong(key, "a number", *v);
  if (!std::isfinite(v->get<double>())) wrong(key, "a finite number", *v);
  return v->get<double>();
}

bool JsonFields::flag(const char* key) const {
  const json* v = get(key, "true or false");
  if (!v->is_boolean()) wrong(key, "true or false", *v);
  return v->get<bool>();
}

std::string JsonFields::text(const char* key) const {
  const json* v = get(key, "a string");
  if (!v->is_string()) wrong(key, "a string", *v);
  return v->get<std::string>();
}

std::vector<int> JsonFields::integers(const char* key) const {
  const json& a = array(key);
  std::vector<int> out;
  for (const auto& e : a) {
    if (!is_integer(e) || e.get<double>() <= 0 || e.get<double>() > 1e6) wrong(key, "an array of positive integers", a);
    out.push_back(static_cast<int>(e.get<double>()));
  }
  if (out.empty()) fail(key, "is empty (expected an array of positive integers)");
  return out;
}

std::array<int, 3> JsonFields::triple(const char* key) const {
  std::vector<int> v = integers(key);
  if (v.size() != 3) wrong(key, "three positive integers [T, H, W]", array(key));
  return {v[0], v[1], v[2]};
}

std::vector<std::string> JsonFields::texts(const char* key) const {
  const json& a = array(key);
  std::vector<std::string> out;
  for (const auto& e : a) {
    if (!e.is_string()) wrong(key, "an array of strings", a);
    out.push_back(e.get<std::string>());
  }
  return out;
}

std::vector<double> JsonFields::numbers(const char* key) const {
  const json& a = array(key);
  std::vector<double> out;
  for (const auto& e : a) {
    if (!e.is_number() || !std::isfinite(e.get<double>())) wrong(key, "an array of finite numbers", a);
    out.push_back(e.get<double>());
  }
  return out;
}

std::optional<int> JsonFields::optional_integer(const char* key) const {
  if (!has(key)) return std::nullopt;
  return integer(key);
}

std::optional<std::uint64_t> JsonFields::optional_count(const char* key) const {
  if (!has(key)) return std::nullopt;
  return count(key);
}

std::optional<double> JsonFields::optional_number(const char* key) const {
  if (!has(key)) return std::nullopt;
  return number(key);
}

std::optional<bool> JsonFields::optional_flag(const char* key) const {
  if (!has(key)) return std::nullopt;
  return flag(key);
}

std::optional<std::string> JsonFields::optional_text(const char* key) const {
  if (!has(key)) return std::nullopt;
  return text(key);
}

static std::string number_text(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.6g", v);
  return text;
}

void JsonFields::within(const char* key, double value, Range range) const {
  if (value >= range.lo && value <= range.hi) return;
  fail(key, "is " + number_text(value) + ", outside the range " + number_text(range.lo) + " to " + number_text(range.hi) +
                " that this figure can take");
}

int JsonFields::integer(const char* key, Range range) const {
  const int v = integer(key);
  within(key, v, range);
  return v;
}

std::uint64_t JsonFields::count(const char* key, Range range) const {
  const std::uint64_t v = count(key);
  within(key, static_cast<double>(v), range);
  return v;
}

double JsonFields::number(const char* key, Range range) const {
  const double v = number(key);
  within(key, v, range);
  return v;
}

std::optional<int> JsonFields::optional_integer(const char* key, Range range) const {
  if (!has(key)) return std::nullopt;
  return integer(key, range);
}

std::optional<std::uint64_t> JsonFields::optional_count(const char* key, Range range) const {
  if (!has(key)) return std::nullopt;
  return count(key, range);
}

std::optional<double> JsonFields::optional_number(const char* key, Range range) const {
  if (!has(key)) return std::nullopt;
  return number(key, range);
}

std::vector<int> JsonFields::integers(const char* key, Range range) const {
  std::vector<int> v = integers(key);
  for (int x : v) within(key, x, range);
  return v;
}

std::array<int, 3> JsonFields::triple(const char* key, Range range) const {
  const std::array<int, 3> v = triple(key);
  for (int x : v) within(key, x, range);
  return v;
}

}  // namespace headroom
