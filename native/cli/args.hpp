#pragma once
// A small flag parser shared by the subcommands: --name value, --name=value, --flag, positionals.
#include <cstdint>
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

  std::optional<std::string> get(const std::string& name) const;  // the last value given
  std::vector<std::string> get_all(const std::string& name) const;  // every value, in order (repeatable flags)
  std::string get_or(const std::string& name, const std::string& fallback) const;
  int get_int(const std::string& name, int fallback, int min_value, int max_value) const;
  double get_double(const std::string& name, double fallback) const;  // decimal and finite only
  // A size flag (parse_size: "12GiB", "11.5" in bare_unit); 0 is refused unless allow_zero.
  std::optional<std::uint64_t> get_size(const std::string& name, std::uint64_t bare_unit, bool allow_zero) const;
  bool has(const std::string& name) const;
  const std::vector<std::string>& positionals() const { return positionals_; }

 private:
  std::map<std::string, std::string> values_;
  std::map<std::string, std::vector<std::string>> all_values_;
  std::set<std::string> switches_on_;
  std::vector<std::string> positionals_;
};

// Reads a whole regular file (or stdin for "-") of at most max_bytes; throws InputError(field) when it
// cannot, when it is a folder, FIFO or device, or when it is longer.
std::string read_text(const std::string& path, const std::string& field, std::uint64_t max_bytes);

}  // namespace headroom::cli
