#include "core/oom/oom_text.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <limits>

namespace headroom::oom {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_word(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.';
}

// Each matcher returns how many characters of a known log prefix start line[b, e), or 0.
// Hand-written rather than std::regex: libstdc++'s regex recurses per character and a 10 MB
// line would overflow the stack.

// "[rank0]: "
std::size_t prefix_rank(const std::string& s, std::size_t b, std::size_t e) {
  static const char kHead[] = "[rank";
  if (e - b < 8 || s.compare(b, 5, kHead) != 0) return 0;
  std::size_t i = b + 5;
  while (i < e && is_digit(s[i])) ++i;
  if (i == b + 5 || i + 1 >= e || s[i] != ']' || s[i + 1] != ':') return 0;
  i += 2;
  while (i < e && s[i] == ' ') ++i;
  return i - b;
}

// docker compose: "vllm-1  | ", also "[vllm]   | "
std::size_t prefix_compose(const std::string& s, std::size_t b, std::size_t e) {
  std::size_t i = b;
  while (i < e && i - b < 64 && (is_word(s[i]) || s[i] == '[' || s[i] == ']')) ++i;
  if (i == b || i >= e || s[i] != ' ') return 0;
  while (i < e && s[i] == ' ') ++i;
  if (i >= e || s[i] != '|') return 0;
  ++i;
  while (i < e && s[i] == ' ') ++i;
  return i - b;
}

// "(VllmWorker rank=1 pid=254) ", "(EngineCore_0 pid=12) "
std::size_t prefix_worker(const std::string& s, std::size_t b, std::size_t e) {
  if (b >= e || s[b] != '(') return 0;
  std::size_t close = s.find(')', b);
  if (close == std::string::npos || close >= e || close - b > 80) return 0;
  if (s.find("pid=", b) > close) return 0;
  std::size_t i = close + 1;
  while (i < e && s[i] == ' ') ++i;
  return i - b;
}

// vLLM: "ERROR 06-02 05:17:18 [core.py:387] " (also INFO/WARNING/DEBUG, optional ".123" ms)
std::size_t prefix_vllm(const std::string& s, std::size_t b, std::size_t e) {
  static const char* kLevels[] = {"ERROR ", "INFO ", "WARNING ", "DEBUG ", "CRITICAL "};
  std::size_t i = b;
  bool level = false;
  for (const char* l : kLevels) {
    std::size_t n = std::strlen(l);
    if (e - b > n && s.compare(b, n, l) == 0) {
      i = b + n;
      level = true;
      break;
    }
  }
  if (!level) return 0;
  // MM-DD HH:MM:SS
  const char* shape = "dd-dd dd:dd:dd";
  for (std::size_t k = 0; shape[k]; ++k, ++i) {
    if (i >= e) return 0;
    if (shape[k] == 'd' ? !is_digit(s[i]) : s[i] != shape[k]) return 0;
  }
  if (i < e && s[i] == '.')
    for (++i; i < e && is_digit(s[i]);) ++i;
  while (i < e && s[i] == ' ') ++i;
  if (i < e && s[i] == '[') {
    std::size_t close = s.find(']', i);
    if (close == std::string::npos || close >= e || close - i > 80) return 0;
    i = close + 1;
  }
  while (i < e && s[i] == ' ') ++i;
  return i - b;
}

// journald / syslog: "Nov 29 12:00:01 host python3[1234]: "
std::size_t prefix_journald(const std::string& s, std::size_t b, std::size_t e) {
  if (e - b < 20) return 0;
  if (!std::isupper(static_cast<unsigned char>(s[b])) || !std::islower(static_cast<unsigned char>(s[b + 1])) ||
      !std::islower(static_cast<unsigned char>(s[b + 2])) || s[b + 3] != ' ')
    return 0;
  std::size_t i = b + 4;
  while (i < e && s[i] == ' ') ++i;
  std::size_t d = i;
  while (i < e && is_digit(s[i])) ++i;
  if (i == d || i >= e || s[i] != ' ') return 0;
  ++i;
  const char* shape = "dd:dd:dd ";
  for (std::size_t k = 0; shape[k]; ++k, ++i) {
    if (i >= e) return 0;
    if (shape[k] == 'd' ? !is_digit(s[i]) : s[i] != shape[k]) return 0;
  }
  std::size_t host = i;  // host name, then "proc[pid]:" or "proc:"
  while (i < e && s[i] != ' ' && i - host < 128) ++i;
  if (i >= e || i == host) return 0;
  ++i;
  std::size_t proc = i;
  while (i < e && s[i] != ':' && s[i] != ' ' && i - proc < 128) ++i;
  if (i >= e || s[i] != ':' || i == proc) return 0;
  ++i;
  while (i < e && s[i] == ' ') ++i;
  return i - b;
}

std::size_t strip_prefixes(const std::string& s, std::size_t b, std::size_t e) {
  // Prefixes nest ("vllm-1 | ERROR ... [core.py:387] "); a few rounds cover every real case.
  for (int round = 0; round < 4; ++round) {
    std::size_t n = prefix_rank(s, b, e);
    if (!n) n = prefix_worker(s, b, e);
    if (!n) n = prefix_vllm(s, b, e);
    if (!n) n = prefix_journald(s, b, e);
    if (!n) n = prefix_compose(s, b, e);
    if (!n) break;
    b += n;
  }
  return b;
}

}  // namespace

std::string normalise(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  bool space = true;  // drop leading spaces
  auto put = [&](char c) {
    bool ws = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\0' || c == '\v' || c == '\f';
    if (ws) {
      if (!space) out.push_back(' ');
      space = true;
    } else {
      out.push_back(c);
      space = false;
    }
  };
  std::size_t b = 0;
  while (b <= text.size()) {
    std::size_t e = text.find('\n', b);
    if (e == std::string::npos) e = text.size();
    std::size_t i = strip_prefixes(text, b, e);
    for (; i < e; ++i) {
      char c = text[i];
      if (c == '\x1b' && i + 1 < e && text[i + 1] == '[') {  // ANSI colour: ESC [ params letter
        std::size_t j = i + 2;
        while (j < e && (is_digit(text[j]) || text[j] == ';')) ++j;
        i = j;  // skips the final letter too
        continue;
      }
      put(c);
    }
    put('\n');
    b = e + 1;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::optional<std::uint64_t> read_uint(const std::string& s, std::size_t pos, std::size_t* end) {
  while (pos < s.size() && s[pos] == ' ') ++pos;
  std::size_t i = pos;
  unsigned __int128 v = 0;
  while (i < s.size() && is_digit(s[i])) {
    v = v * 10 + static_cast<unsigned>(s[i] - '0');
    if (v > std::numeric_limits<std::uint64_t>::max()) return std::nullopt;
    ++i;
  }
  if (i == pos) return std::nullopt;
  if (end) *end = i;
  return static_cast<std::uint64_t>(v);
}

std::optional<double> read_decimal(const std::string& s, std::size_t pos, std::size_t* end) {
  while (pos < s.size() && s[pos] == ' ') ++pos;
  std::size_t i = pos;
  while (i < s.size() && is_digit(s[i])) ++i;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && is_digit(s[i])) ++i;
  }
  if (i == pos || i - pos > 30) return std::nullopt;
  if (end) *end = i;
  return std::stod(s.substr(pos, i - pos));
}

std::optional<Size> read_size(const std::string& s, std::size_t pos, bool require_unit) {
  while (pos < s.size() && s[pos] == ' ') ++pos;
  std::size_t i = pos;
  unsigned __int128 mantissa = 0;
  int int_digits = 0, frac_digits = 0;
  while (i < s.size() && is_digit(s[i])) {
    if (++int_digits > 20) return std::nullopt;
    mantissa = mantissa * 10 + static_cast<unsigned>(s[i] - '0');
    ++i;
  }
  if (int_digits == 0) return std::nullopt;
  if (i + 1 < s.size() && s[i] == '.' && is_digit(s[i + 1])) {
    ++i;
    while (i < s.size() && is_digit(s[i])) {
      if (frac_digits < 6) {  // PyTorch prints 2 decimals, vLLM 4; more carries no information
        mantissa = mantissa * 10 + static_cast<unsigned>(s[i] - '0');
        ++frac_digits;
      }
      ++i;
    }
  }
  std::size_t number_end = i;
  std::size_t j = i;
  if (j < s.size() && s[j] == ' ') ++j;
  struct Unit {
    const char* text;
    std::uint64_t scale;
  };
  static const Unit kUnits[] = {
      {"bytes", 1},          {"TiB", 1ull << 40}, {"GiB", 1ull << 30}, {"MiB", 1ull << 20},
      {"KiB", 1ull << 10},   {"TB", 1ull << 40},  {"GB", 1ull << 30},  {"MB", 1ull << 20},
      {"KB", 1ull << 10},    {"kB", 1ull << 10},  {"B", 1},
  };
  std::uint64_t scale = 0;
  std::size_t unit_end = number_end;
  for (const Unit& u : kUnits) {
    std::size_t n = std::strlen(u.text);
    if (s.compare(j, n, u.text) == 0) {
      // "B" must end the word ("5 Bytes" is fine via "bytes"; "12 Blocks" is not a size).
      if (j + n < s.size() && std::isalpha(static_cast<unsigned char>(s[j + n]))) continue;
      scale = u.scale;
      unit_end = j + n;
      break;
    }
  }
  if (scale == 0) {
    if (require_unit || frac_digits > 0) return std::nullopt;
    scale = 1;
  }
  unsigned __int128 pow10 = 1;
  for (int k = 0; k < frac_digits; ++k) pow10 *= 10;
  unsigned __int128 bytes = (mantissa * scale * 2 + pow10) / (pow10 * 2);  // round half up
  Size out;
  if (bytes <= std::numeric_limits<std::uint64_t>::max()) out.bytes = static_cast<std::uint64_t>(bytes);
  out.end = unit_end;
  out.display = s.substr(pos, unit_end - pos);
  return out;
}

std::string clean_utf8(const std::string& s) {
  // Well-formed sequences per RFC 3629 section 4 (no overlongs, surrogates or code points past U+10FFFF).
  auto byte = [&](std::size_t i) { return i < s.size() ? static_cast<unsigned char>(s[i]) : 0u; };
  auto in = [](unsigned v, unsigned lo, unsigned hi) { return v >= lo && v <= hi; };
  std::string out;
  out.reserve(s.size());
  std::size_t i = 0;
  while (i < s.size()) {
    unsigned c = byte(i), c1 = byte(i + 1), c2 = byte(i + 2), c3 = byte(i + 3);
    std::size_t len = 0;
    if (c >= 0x20 && c < 0x7F) len = 1;
    else if (in(c, 0xC2, 0xDF) && in(c1, 0x80, 0xBF)) len = 2;
    else if (c == 0xE0 && in(c1, 0xA0, 0xBF) && in(c2, 0x80, 0xBF)) len = 3;
    else if ((in(c, 0xE1, 0xEC) || in(c, 0xEE, 0xEF)) && in(c1, 0x80, 0xBF) && in(c2, 0x80, 0xBF)) len = 3;
    else if (c == 0xED && in(c1, 0x80, 0x9F) && in(c2, 0x80, 0xBF)) len = 3;
    else if (c == 0xF0 && in(c1, 0x90, 0xBF) && in(c2, 0x80, 0xBF) && in(c3, 0x80, 0xBF)) len = 4;
    else if (in(c, 0xF1, 0xF3) && in(c1, 0x80, 0xBF) && in(c2, 0x80, 0xBF) && in(c3, 0x80, 0xBF)) len = 4;
    else if (c == 0xF4 && in(c1, 0x80, 0x8F) && in(c2, 0x80, 0xBF) && in(c3, 0x80, 0xBF)) len = 4;
    if (len == 0) {
      out.push_back('?');
      ++i;
      continue;
    }
    out.append(s, i, len);
    i += len;
  }
  return out;
}

std::size_t rfind_str(const std::string& s, const char* needle, std::size_t pos) {
  const std::size_t m = std::strlen(needle);
  if (m == 0 || m > s.size()) return std::string::npos;
  const char* base = s.data();
  std::size_t end = std::min(pos, s.size() - m) + 1;  // candidate starts lie in [0, end)
  while (end > 0) {
    // std::string::rfind of one char, not memrchr: that is a GNU extension (no MSVC, no mingw).
    const std::size_t i = s.rfind(needle[0], end - 1);
    if (i == std::string::npos) return std::string::npos;
    if (std::memcmp(base + i, needle, m) == 0) return i;
    end = i;
  }
  return std::string::npos;
}

}  // namespace headroom::oom
