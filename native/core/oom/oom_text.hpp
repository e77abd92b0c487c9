#pragma once
// Text helpers for reading out-of-memory messages: undo what logs do to them (line prefixes,
// hard wraps, ANSI colours, NUL bytes) and read sizes exactly as the printing code wrote them.
#include <cstdint>
#include <optional>
#include <string>

namespace headroom::oom {

// One line of text per message: known log prefixes stripped from every line ("[rank0]: ",
// "vllm-1  | ", "(VllmWorker rank=1 pid=254) ", vLLM/journald timestamps), ANSI escapes
// removed, NUL/CR/tabs/newlines turned into spaces and runs of spaces collapsed. Joining the
// lines undoes hard wraps ("... total capacity of 23.65\nGiB ...").
std::string normalise(const std::string& text);

// A size read from a message.
struct Size {
  std::optional<std::uint64_t> bytes;  // empty when the figure does not fit 64 bits (2^64 "no limit")
  std::size_t end = 0;                 // index just past the unit
  std::string display;                 // as printed, e.g. "23.65 GiB", "23.58GiB", "0 bytes"
};

// Reads "<number>[ ]<unit>" starting at `pos` (leading spaces allowed). Units: bytes/B,
// KiB/MiB/GiB/TiB and KB/MB/GB/TB, all binary because PyTorch's MPS allocator, ComfyUI and
// vLLM print "GB"/"MB" while dividing by 1024^n (oom-examples.README.md, conversion rules).
// Rounds half-up to whole bytes from the printed decimals, in exact integer arithmetic.
// `require_unit` false accepts a bare integer as bytes (llama.cpp "buffer of size N").
std::optional<Size> read_size(const std::string& s, std::size_t pos, bool require_unit = true);

// Reads a non-negative integer at `pos` (leading spaces allowed); `end` receives the index after it.
std::optional<std::uint64_t> read_uint(const std::string& s, std::size_t pos, std::size_t* end = nullptr);

// Reads a decimal such as 0.90 at `pos`.
std::optional<double> read_decimal(const std::string& s, std::size_t pos, std::size_t* end = nullptr);

// Position of the last occurrence of `needle` starting at or before `pos`, or npos. Same answer
// as std::string::rfind, but memrchr-driven: libstdc++'s rfind compares at every position and took
// ~90 ms per needle on a 10 MB log without a match.
std::size_t rfind_str(const std::string& s, const char* needle, std::size_t pos = std::string::npos);

inline bool contains(const std::string& s, const char* needle) {
  return s.find(needle) != std::string::npos;
}

// `s` with invalid UTF-8 sequences and control characters replaced by '?', so values copied from
// a pasted log (node names, model names) can always be written as JSON.
std::string clean_utf8(const std::string& s);


}  // namespace headroom::oom
