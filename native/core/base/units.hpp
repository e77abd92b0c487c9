#pragma once
// Byte sizes as people write them ("6GiB", "6000MB", "24 GB") and as we print them.
#include <cstdint>
#include <string>

namespace headroom {

constexpr std::uint64_t KiB = 1024ull;
constexpr std::uint64_t MiB = 1024ull * KiB;
constexpr std::uint64_t GiB = 1024ull * MiB;
constexpr std::uint64_t TiB = 1024ull * GiB;

// Largest memory size any request may give (card, free, budget, reserve): 1 PiB. No GPU or host has
// that much, and sums and products of sizes below it stay far from 64-bit overflow.
constexpr std::uint64_t kMaxMemoryBytes = 1024ull * TiB;

// Parses a size. Units: B, KB/MB/GB/TB (powers of 1000), KiB/MiB/GiB/TiB (powers of 1024),
// case-insensitive; a bare number means `bare_unit` bytes (GiB for VRAM flags).
// Throws InputError(field) on anything else, negative values, or sizes above kMaxMemoryBytes.
std::uint64_t parse_size(const std::string& text, const std::string& field,
                         std::uint64_t bare_unit = GiB);

// True for decimal notation only ("12", "-3.5", "1e3"): what strtod takes beyond it ("0x10", "inf",
// "nan", leading spaces) is refused by every number typed as text.
bool is_decimal_number(const std::string& text);

// Whole units of `b` that hold `a` (latent sides from pixels, tokens from patches, blocks from frames).
constexpr std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) { return (a + b - 1) / b; }

// "12.34 GiB", "512.0 MiB", "900 B".
std::string format_bytes(std::uint64_t bytes);

}  // namespace headroom
