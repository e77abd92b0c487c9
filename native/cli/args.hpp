#pragma once
// A small flag parser shared by the subcommands: --name value, --name=value, --flag, positionals.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace headroom::cli {

class Args {
 public:
  // `flags` take a value; `switches` take none. Anything else starting with "--" is an error.
  Args(const std::vector<std::string>& argv, const std::set<std::string>& flags,
       const std::set<std::string>& switches);

  std::optional<std::string> get(const std::string& name) const;
  std::string get_or(const std::string& name, const std::string& fallback) const;
  int get_int(const std::string& name, int fallback, int min_value, int max_value) const;
  double get_double(const std::string& name, double fallback) const;
  bool has(const std::string& name) const;
  const std::vector<std::string>& positionals() const { return positionals_; }

 private:
  std::map<std::string, std::string> values_;
  std::set<std::string> switches_on_;
  std::vector<std::string> positionals_;
};

// Reads a whole file (or stdin for "-"); throws InputError(field) when it cannot.
std::string read_text(const std::string& path, const std::string& field);

}  // namespace headroom::cli
