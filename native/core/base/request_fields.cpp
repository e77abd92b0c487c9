#include "core/base/request_fields.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/base/error.hpp"
#include "core/base/json_reader.hpp"
#include "core/base/text_distance.hpp"
#include "core/base/units.hpp"

namespace headroom::request {
namespace {

using nlohmann::json;

// "16", "0.5", "1125899906842624": the bound as typed, without a trailing ".000000".
std::string number_text(double x) {
  const char* format = x == std::floor(x) && std::fabs(x) < 1e18 ? "%.0f" : "%g";
  std::string out(static_cast<std::size_t>(std::snprintf(nullptr, 0, format, x)), '\0');
  std::snprintf(out.data(), out.size() + 1, format, x);
  return out;
}

std::string bytes_text(double x) {
  return number_text(x) + " (" + format_bytes(static_cast<std::uint64_t>(x)) + ")";
}

std::vector<std::string> choices_of(const Field& f) {
  std::vector<std::string> out;
  std::string_view c = f.choices;
  while (!c.empty()) {
    std::size_t bar = c.find('|');
    out.emplace_back(c.substr(0, bar));
    if (bar == std::string_view::npos) break;
    c.remove_prefix(bar + 1);
  }
  return out;
}

// "a, b or c".
std::string spoken_list(const std::vector<std::string>& items) {
  std::string out;
  for (std::size_t i = 0; i < items.size(); ++i)
    out += (i == 0 ? "" : i + 1 == items.size() ? " or " : ", ") + items[i];
  return out;
}

[[noreturn]] void wrong(const Field& f, const json& v) {
  throw InputError(std::string(f.key), expectation(f) + ", got " + json_preview(v));
}

// A name, a mode or a path: the longest a file system takes (Windows' long paths, 32,767 UTF-16 units,
// are at most this many UTF-8 bytes of real names) is far below it. A longer text is refused at once,
// before any lookup, suggestion or echo spends time on it.
constexpr std::size_t kMaxTextBytes = 32 * 1024;

void too_long(const Field& f, const json& v) {
  const std::size_t n = v.get_ref<const std::string&>().size();
  if (n > kMaxTextBytes)
    throw InputError(std::string(f.key), "is " + std::to_string(n) + " bytes long; expected a name or a path of at most " +
                                             std::to_string(kMaxTextBytes) + " bytes");
}

bool whole(const json& v) {
  if (v.is_number_integer()) return true;
  if (!v.is_number_float()) return false;
  double d = v.get<double>();
  return std::isfinite(d) && d == std::floor(d);
}

// The value as a double, for range checks (whole numbers past 2^53 lose their last digits, but every
// range here ends far below that).
double as_double(const json& v) {
  if (v.is_number_unsigned()) return static_cast<double>(v.get<std::uint64_t>());
  if (v.is_number_integer()) return static_cast<double>(v.get<std::int64_t>());
  return v.get<double>();
}

std::uint64_t size_bytes(const Field& f, const json& v) {
  if (v.is_string()) return parse_size(v.get<std::string>(), std::string(f.key), GiB);
  double gib = v.get<double>();
  if (!std::isfinite(gib) || gib < 0 || gib > static_cast<double>(kMaxMemoryBytes) / GiB) wrong(f, v);
  return static_cast<std::uint64_t>(gib * GiB);
}

void check(const Field& f, const json& v) {
  switch (f.kind) {
    case Kind::Bool:
      if (!v.is_boolean()) wrong(f, v);
      return;
    case Kind::Int:
    case Kind::Bytes:
      if (!whole(v) || as_double(v) < f.lo || as_double(v) > f.hi) wrong(f, v);
      return;
    case Kind::Number:
      if (!v.is_number() || !std::isfinite(as_double(v)) || as_double(v) < f.lo || as_double(v) > f.hi) wrong(f, v);
      return;
    case Kind::String:
      if (!v.is_string()) wrong(f, v);
      if (v.get_ref<const std::string&>().empty()) throw InputError(std::string(f.key), "must not be empty");
      too_long(f, v);
      return;
    case Kind::Size: {
      if (!v.is_string() && !v.is_number()) wrong(f, v);
      std::uint64_t b = size_bytes(f, v);
      if (static_cast<double>(b) < f.lo || static_cast<double>(b) > f.hi)
        throw InputError(std::string(f.key), expectation(f) + ", got " + json_preview(v) + " = " + format_bytes(b));
      return;
    }
    case Kind::Enum: {
      if (!v.is_string()) wrong(f, v);
      too_long(f, v);
      for (const auto& c : choices_of(f))
        if (c == v.get_ref<const std::string&>()) return;
      wrong(f, v);
    }
    case Kind::Object:
      if (!v.is_object()) wrong(f, v);
      return;
    case Kind::List:
      if (!v.is_array()) wrong(f, v);
      return;
    case Kind::Any:
      return;
  }
}

std::string accepted_keys(const Fields& fields) {
  std::string out;
  for (const auto& f : fields) out += (out.empty() ? "" : ", ") + std::string(f.key);
  return out;
}

const Field* closest(const Fields& fields, const std::string& key) {
  const Field* best = nullptr;
  std::size_t best_d = 0;
  for (const auto& f : fields) {
    std::size_t d = edit_distance(key, std::string(f.key));
    if (!best || d < best_d) best = &f, best_d = d;
  }
  // A suggestion only when it is plausibly a typo: at most a third of the letters differ.
  return best && best_d * 3 <= std::max<std::size_t>(key.size(), 3) ? best : nullptr;
}

}  // namespace

std::string expectation(const Field& f) {
  switch (f.kind) {
    case Kind::Bool: return "expected true or false";
    case Kind::Int: return "expected a whole number from " + number_text(f.lo) + " to " + number_text(f.hi);
    case Kind::Number: return "expected a number from " + number_text(f.lo) + " to " + number_text(f.hi);
    case Kind::String: return "expected a string";
    case Kind::Bytes: return "expected a whole number of bytes from " + bytes_text(f.lo) + " to " + bytes_text(f.hi);
    case Kind::Size:
      return "expected a size from " + format_bytes(static_cast<std::uint64_t>(f.lo)) + " to " +
             format_bytes(static_cast<std::uint64_t>(f.hi)) + " (a number of GiB or a text such as \"24GB\")";
    case Kind::Enum: return "expected " + spoken_list(choices_of(f));
    case Kind::Object: return "expected a JSON object";
    case Kind::List: return "expected a list";
    case Kind::Any: return "expected a value";
  }
  return "";
}

std::string documentation(const Fields& fields) {
  std::string out;
  for (const auto& f : fields) {
    std::string e = expectation(f);
    if (e.rfind("expected ", 0) == 0) e = e.substr(9);
    out += "  " + std::string(f.key) + (f.required ? " (required)" : "") + ": " + std::string(f.meaning) + " (" + e + ")\n";
  }
  return out;
}

namespace {

json property_schema(const Field& f) {
  json p = {{"description", std::string(f.meaning)}};
  switch (f.kind) {
    case Kind::Bool: p["type"] = "boolean"; break;
    case Kind::Int:
    case Kind::Bytes: p["type"] = "integer"; break;
    case Kind::Number: p["type"] = "number"; break;
    case Kind::String: p["type"] = "string", p["minLength"] = 1, p["maxLength"] = kMaxTextBytes; break;
    case Kind::Size: p["type"] = json::array({"number", "string"}); break;
    case Kind::Enum: p["type"] = "string", p["enum"] = choices_of(f); break;
    case Kind::Object: p["type"] = "object"; break;
    case Kind::List: p["type"] = "array"; break;
    case Kind::Any: break;
  }
  if (f.kind == Kind::Int || f.kind == Kind::Number || f.kind == Kind::Bytes)
    p["minimum"] = f.lo, p["maximum"] = f.hi;
  if (f.kind == Kind::Size) p["x-bytes-range"] = {f.lo, f.hi};  // a GiB number or a size text, in bytes
  if (!f.flags.empty()) p["x-flags"] = std::string(f.flags);
  if (f.unit) p["x-flag-unit-bytes"] = f.unit;
  return p;
}

}  // namespace

json json_schema(const Fields& fields) {
  json s = {{"type", "object"}, {"additionalProperties", false}, {"properties", json::object()}};
  json required = json::array();
  for (const auto& f : fields) {
    s["properties"][std::string(f.key)] = property_schema(f);
    if (f.required) required.push_back(std::string(f.key));
  }
  s["required"] = required;
  return s;
}

json value_from_text(const Field& f, const std::string& text) {
  const std::string key(f.key);
  switch (f.kind) {
    case Kind::Bool: {
      std::string s;
      for (char c : text) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (s == "true" || s == "1" || s == "yes" || s == "on") return true;
      if (s == "false" || s == "0" || s == "no" || s == "off") return false;
      throw InputError(key, "expected true or false, got '" + text_preview(text) + "'");
    }
    case Kind::Int:
    case Kind::Bytes:
    case Kind::Number: {
      if (!is_decimal_number(text)) throw InputError(key, "expected a decimal number, got '" + text_preview(text) + "'");
      char* end = nullptr;
      double d = std::strtod(text.c_str(), &end);
      if (*end != '\0' || !std::isfinite(d)) throw InputError(key, "expected a decimal number, got '" + text_preview(text) + "'");
      json v = d;
      if (f.kind != Kind::Number) {
        if (d != std::floor(d)) throw InputError(key, "expected a whole number, got '" + text_preview(text) + "'");
        if (d >= 0 && d <= 9.2e18) v = static_cast<std::uint64_t>(d);
        else if (d < 0 && d >= -9.2e18) v = static_cast<std::int64_t>(d);
      }
      return v;
    }
    default:
      return text;
  }
}

Request::Request(const json& body, std::string what, const Fields& fields)
    : body_(body), what_(std::move(what)), fields_(fields) {
  if (!body.is_object()) throw InputError("request", "expected a JSON object (the " + what_ + " request), got " + json_preview(body));
  for (const auto& kv : body.items()) {
    const Field* f = nullptr;
    for (const auto& candidate : fields_)
      if (candidate.key == kv.key()) f = &candidate;
    if (!f) {
      const Field* near = closest(fields_, kv.key());
      throw InputError(text_preview(kv.key()), "unknown field in the " + what_ + " request" +
                                     (near ? "; did you mean " + std::string(near->key) + "?" : std::string()) +
                                     " It takes: " + accepted_keys(fields_));
    }
    check(*f, kv.value());
  }
  for (const auto& f : fields_)
    if (f.required && !body.contains(std::string(f.key)))
      throw InputError(std::string(f.key), "is required (" + std::string(f.meaning) + ")");
}

const Field& Request::field(std::string_view key) const {
  for (const auto& f : fields_)
    if (f.key == key) return f;
  throw Error("the " + what_ + " request has no field '" + std::string(key) + "' in its table");  // a bug in the caller
}

bool Request::has(std::string_view key) const {
  field(key);
  return body_.contains(std::string(key));
}

const json& Request::raw(std::string_view key) const {
  field(key);
  return body_.at(std::string(key));
}

bool Request::flag(std::string_view key) const { return raw(key).get<bool>(); }

std::int64_t Request::integer(std::string_view key) const {
  const json& v = raw(key);
  if (v.is_number_integer()) return v.get<std::int64_t>();
  return static_cast<std::int64_t>(v.get<double>());
}

double Request::number(std::string_view key) const { return as_double(raw(key)); }

std::string Request::text(std::string_view key) const { return raw(key).get<std::string>(); }

std::uint64_t Request::bytes(std::string_view key) const {
  const Field& f = field(key);
  const json& v = raw(key);
  if (f.kind == Kind::Size) return size_bytes(f, v);
  if (v.is_number_integer()) return v.get<std::uint64_t>();
  return static_cast<std::uint64_t>(v.get<double>());
}

}  // namespace headroom::request
