#include "cli/args.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <unistd.h>

#include "core/base/error.hpp"
#include "core/base/file_reader.hpp"
#include "core/base/units.hpp"

namespace headroom::cli {

Args::Args(const std::vector<std::string>& argv, const std::set<std::string>& flags,
           const std::set<std::string>& switches) {
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a.rfind("--", 0) != 0 || a == "--") {
      positionals_.push_back(a);
      continue;
    }
    std::string name = a.substr(2);
    std::optional<std::string> inline_value;
    if (auto eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    if (switches.count(name)) {
      if (inline_value) throw InputError("--" + name, "takes no value, got '" + *inline_value + "'");
      switches_on_.insert(name);
    } else if (flags.count(name)) {
      if (inline_value) {
        values_[name] = *inline_value;
      } else {
        if (i + 1 >= argv.size()) throw InputError("--" + name, "expects a value after it");
        values_[name] = argv[++i];
      }
      all_values_[name].push_back(values_[name]);
    } else {
      std::string known;
      for (const auto& f : flags) known += " --" + f;
      for (const auto& s : switches) known += " --" + s;
      throw InputError("--" + name, "unknown option; this command takes:" + known);
    }
  }
}

std::optional<std::string> Args::get(const std::string& name) const {
  auto it = values_.find(name);
  if (it == values_.end()) return std::nullopt;
  return it->second;
}

std::vector<std::string> Args::get_all(const std::string& name) const {
  auto it = all_values_.find(name);
  return it == all_values_.end() ? std::vector<std::string>{} : it->second;
}

std::string Args::get_or(const std::string& name, const std::string& fallback) const {
  auto v = get(name);
  return v ? *v : fallback;
}

int Args::get_int(const std::string& name, int fallback, int min_value, int max_value) const {
  auto v = get(name);
  if (!v) return fallback;
  errno = 0;
  char* end = nullptr;
  long x = std::strtol(v->c_str(), &end, 10);
  if (v->empty() || *end != '\0' || errno == ERANGE || x < min_value || x > max_value)
    throw InputError("--" + name, "expected a whole number from " + std::to_string(min_value) + " to " +
                                      std::to_string(max_value) + ", got '" + *v + "'");
  return static_cast<int>(x);
}

double Args::get_double(const std::string& name, double fallback) const {
  auto v = get(name);
  if (!v) return fallback;
  // Decimal notation only: strtod alone would also take "0x10", "inf" and "nan".
  const bool decimal = is_decimal_number(*v);
  errno = 0;
  char* end = nullptr;
  double x = decimal ? std::strtod(v->c_str(), &end) : 0.0;
  if (!decimal || *end != '\0' || errno == ERANGE || !std::isfinite(x))
    throw InputError("--" + name, "expected a decimal number such as 3.5, got '" + *v + "'");
  return x;
}

std::optional<std::uint64_t> Args::get_size(const std::string& name, std::uint64_t bare_unit, bool allow_zero) const {
  auto v = get(name);
  if (!v) return std::nullopt;
  std::uint64_t bytes = parse_size(*v, "--" + name, bare_unit);
  if (bytes == 0 && !allow_zero)
    throw InputError("--" + name, "must be more than 0, got '" + *v + "' (give a size such as 12GiB or 11.5)");
  return bytes;
}

bool Args::has(const std::string& name) const { return switches_on_.count(name) > 0; }

std::string read_text(const std::string& path, const std::string& field, std::uint64_t max_bytes) {
  try {
    return path == "-" ? read_text_fd(STDIN_FILENO, "stdin", max_bytes) : read_text_file(path, max_bytes);
  } catch (const InputError&) {
    throw;
  } catch (const Error& e) {
    throw InputError(field, e.what());
  }
}

}  // namespace headroom::cli
