#include "cli/args.hpp"

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>

#include "core/error.hpp"

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
  char* end = nullptr;
  double x = std::strtod(v->c_str(), &end);
  if (v->empty() || *end != '\0') throw InputError("--" + name, "expected a number, got '" + *v + "'");
  return x;
}

bool Args::has(const std::string& name) const { return switches_on_.count(name) > 0; }

std::string read_text(const std::string& path, const std::string& field) {
  std::stringstream ss;
  if (path == "-") {
    ss << std::cin.rdbuf();
    return ss.str();
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(field, "cannot open '" + path + "' for reading");
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace headroom::cli
