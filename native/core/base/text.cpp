#include "core/base/text.hpp"

#include <cctype>

namespace headroom {

std::string lower_ascii(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string squash(const std::string& s) {
  std::string out;
  for (unsigned char c : s)
    if (std::isalnum(c)) out.push_back(static_cast<char>(std::tolower(c)));
  return out;
}

}  // namespace headroom
