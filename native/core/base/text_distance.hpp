#pragma once
// How far apart two names are, for "did you mean" suggestions on unknown model, GPU or precision names.
#include <cstddef>
#include <string>

namespace headroom {

// Levenshtein distance (insertions, deletions and substitutions each cost 1) of the first 64 bytes of each.
std::size_t edit_distance(const std::string& a, const std::string& b);

}  // namespace headroom
