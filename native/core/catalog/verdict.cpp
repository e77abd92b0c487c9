#include "core/catalog/verdict.hpp"

#include <array>

namespace headroom {
namespace {

struct Row {
  Verdict verdict;
  const char* id;
  std::string text;
  bool runs;  // the run completes (perhaps slowly)
  bool fits;  // the run completes with everything resident and margin to spare
};

const std::array<Row, 4>& rows() {
  static const std::array<Row, 4> t = {{
      {Verdict::Fits, "fits", "fits", true, true},
      {Verdict::Tight, "tight", "tight", true, false},
      {Verdict::DoesNotFit, "does_not_fit", "does not fit", false, false},
      {Verdict::Unknown, "unknown", "unknown", false, false},
  }};
  return t;
}

}  // namespace

const std::string& spelling(Verdict v) { return rows()[static_cast<std::size_t>(v)].text; }

nlohmann::json verdicts_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows()) out.push_back({{"id", r.id}, {"text", r.text}, {"runs", r.runs}, {"fits", r.fits}});
  return out;
}

}  // namespace headroom
