#include "core/base/units.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/base/error.hpp"
#include "core/base/json_reader.hpp"
#include "core/base/text.hpp"

namespace headroom {
std::uint64_t parse_size(const std::string& text, const std::string& field, std::uint64_t bare_unit) {
  const std::string expected = "expected a size such as 6GiB, 6000MB or 24 (GiB), got '" + text_preview(text) + "'";
  std::size_t i = 0;
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  std::size_t start = i;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == start) throw InputError(field, expected);
  std::string number = text.substr(start, i - start);
  char* end = nullptr;
  double value = std::strtod(number.c_str(), &end);
  if (end != number.c_str() + number.size() || !std::isfinite(value) || value < 0)
    throw InputError(field, expected);
  while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
  std::string unit = lower_ascii(text.substr(i));
  while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.back()))) unit.pop_back();
  double scale;
  if (unit.empty()) scale = static_cast<double>(bare_unit);
  else if (unit == "b") scale = 1;
  else if (unit == "kb" || unit == "k") scale = 1e3;
  else if (unit == "mb" || unit == "m") scale = 1e6;
  else if (unit == "gb" || unit == "g") scale = 1e9;
  else if (unit == "tb" || unit == "t") scale = 1e12;
  else if (unit == "kib") scale = static_cast<double>(KiB);
  else if (unit == "mib") scale = static_cast<double>(MiB);
  else if (unit == "gib") scale = static_cast<double>(GiB);
  else if (unit == "tib") scale = static_cast<double>(GiB) * 1024.0;
  else throw InputError(field, expected + " (unknown unit '" + unit + "')");
  double bytes = std::round(value * scale);
  // Checked in double before converting: a value past 2^63 would not survive llround.
  if (!(bytes <= static_cast<double>(kMaxMemoryBytes)))
    throw InputError(field, "size '" + text_preview(text) + "' is more than 1 PiB; give the memory in bytes, MB or GiB (e.g. 24GiB)");
  return static_cast<std::uint64_t>(bytes);
}

bool is_decimal_number(const std::string& text) {
  return !text.empty() && text.find_first_not_of("0123456789.eE+-") == std::string::npos &&
         text.find_first_of("0123456789") != std::string::npos;
}

std::string format_bytes(std::uint64_t bytes) {
  char buf[64];
  if (bytes >= GiB) std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(bytes) / GiB);
  else if (bytes >= MiB) std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / MiB);
  else if (bytes >= KiB) std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(bytes) / KiB);
  else std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  return buf;
}

}  // namespace headroom
