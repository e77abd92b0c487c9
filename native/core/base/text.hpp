#pragma once
// The text helpers every area shares: ASCII case folding and the squashed form names compare in.
#include <string>

namespace headroom {

// ASCII lower case (other bytes as they are): spellings from data and requests compare without case.
std::string lower_ascii(std::string s);

// Lower-case letters and digits only, so "wan2.1_t2v_1.3B", "Wan2_1-T2V-1_3B" and "wan21t2v13b" compare
// equal, and "rtx40" is found in "RTX 4090 24GB".
std::string squash(const std::string& s);

}  // namespace headroom
