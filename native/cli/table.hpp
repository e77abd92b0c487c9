#pragma once
// Columns for people: every cell of a column padded to the column's widest cell, so a long stage or
// model name never pushes the rest of its row out of line; and numbers printed without fixed-size
// buffers.
#include <cstddef>
#include <string>
#include <vector>

namespace headroom::cli {

class Table {
 public:
  // `indent` starts every line; `gap` spaces separate the columns.
  explicit Table(std::string indent = "  ", std::size_t gap = 2) : indent_(std::move(indent)), gap_(gap) {}

  void add(std::vector<std::string> cells);
  // Numbers read best right-aligned ("12 tensors" under "1234 tensors").
  void align_right(std::size_t column);
  std::size_t size() const { return rows_.size(); }
  // Row `i` with its columns padded; the last cell is not padded, so lines carry no trailing blanks.
  std::string line(std::size_t i) const;
  // Every row, one per line.
  std::string text() const;

 private:
  std::string indent_;
  std::size_t gap_;
  std::vector<std::vector<std::string>> rows_;
  std::vector<std::size_t> widths_;
  std::vector<bool> right_;
};

// `x` with `decimals` digits after the point ("23.8", "0.59"), however large it is.
std::string fixed(double x, int decimals);

}  // namespace headroom::cli
