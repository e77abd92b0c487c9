#include "core/base/text_distance.hpp"

#include <algorithm>
#include <vector>

namespace headroom {

// Names are compared on their first letters only: a suggestion for a megabyte-long name is as good from
// its start, and the table's cost (len(a) x len(b)) stays bounded whatever a request sends.
constexpr std::size_t kComparedChars = 64;

std::size_t edit_distance(const std::string& full_a, const std::string& full_b) {
  const std::string a = full_a.substr(0, kComparedChars), b = full_b.substr(0, kComparedChars);
  // One row of the dynamic-programming table is enough: this runs only on errors.
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

}  // namespace headroom
