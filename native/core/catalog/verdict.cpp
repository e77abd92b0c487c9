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
  bool sized;  // the run was sized at all (false: no peak, so no answer about the card)
};

const std::array<Row, 5>& rows() {
  static const std::array<Row, 5> t = {{
      {Verdict::Fits, "fits", "fits", true, true, true},
      {Verdict::Tight, "tight", "tight", true, false, true},
      {Verdict::Streams, "streams", "streams", true, false, true},
      {Verdict::DoesNotFit, "does_not_fit", "does not fit", false, false, true},
      {Verdict::Unknown, "unknown", "unknown", false, false, false},
  }};
  return t;
}

}  // namespace

// rows() is indexed by the enum: each row must sit at its enum's place.
const std::string& spelling(Verdict v) {
  const Row& r = rows()[static_cast<std::size_t>(v)];
  return r.verdict == v ? r.text : rows()[0].text;  // a misplaced row is caught by test_verdict.cpp
}

nlohmann::json verdicts_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows()) out.push_back({{"id", r.id}, {"text", r.text}, {"runs", r.runs}, {"fits", r.fits}, {"sized", r.sized}});
  return out;
}

}  // namespace headroom
