#include "cli/table.hpp"

#include <algorithm>
#include <iomanip>
#include <locale>
#include <sstream>

namespace headroom::cli {

void Table::add(std::vector<std::string> cells) {
  if (widths_.size() < cells.size()) widths_.resize(cells.size(), 0);
  for (std::size_t c = 0; c < cells.size(); ++c) widths_[c] = std::max(widths_[c], cells[c].size());
  rows_.push_back(std::move(cells));
}

void Table::align_right(std::size_t column) {
  if (right_.size() <= column) right_.resize(column + 1, false);
  right_[column] = true;
}

std::string Table::line(std::size_t i) const {
  const auto& cells = rows_.at(i);
  std::string out = indent_;
  for (std::size_t c = 0; c < cells.size(); ++c) {
    const std::string fill(widths_[c] - cells[c].size(), ' ');
    const bool right = c < right_.size() && right_[c];
    const bool last = c + 1 == cells.size();
    out += right ? fill + cells[c] : cells[c] + (last ? "" : fill);
    if (!last) out += std::string(gap_, ' ');
  }
  return out;
}

std::string Table::text() const {
  std::string out;
  for (std::size_t i = 0; i < rows_.size(); ++i) out += line(i) + "\n";
  return out;
}

std::string fixed(double x, int decimals) {
  std::ostringstream s;
  s.imbue(std::locale::classic());  // a decimal point whatever the user's locale
  s << std::fixed << std::setprecision(decimals) << x;
  return s.str();
}

}  // namespace headroom::cli
