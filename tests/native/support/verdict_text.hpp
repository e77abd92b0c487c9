#pragma once
// Lets INFO() and Catch's failure messages show a verdict or a stage mode by its words.
#include <optional>
#include <ostream>

#include "core/catalog/verdict.hpp"
#include "core/estimate/estimator.hpp"

namespace headroom {

inline std::ostream& operator<<(std::ostream& os, Verdict v) { return os << spelling(v); }
inline std::ostream& operator<<(std::ostream& os, const std::optional<Verdict>& v) {
  return v ? os << spelling(*v) : os << "(no verdict)";
}
inline std::ostream& operator<<(std::ostream& os, StageMode m) { return os << stage_mode_name(m); }

}  // namespace headroom
