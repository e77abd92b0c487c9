#pragma once
// What the portable and the per-OS parts of the file reader share (not part of its public interface).
#include <cstdint>
#include <string>

namespace headroom {

// The message for an input over its size limit.
std::string too_long(const std::string& name, std::uint64_t max_bytes);

}  // namespace headroom
