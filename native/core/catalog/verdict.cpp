#include "core/catalog/verdict.hpp"

#include <array>

#include "core/base/error.hpp"

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

const char* verdict_id(Verdict v) {
  const Row& r = rows()[static_cast<std::size_t>(v)];
  return r.verdict == v ? r.id : rows()[0].id;
}

Verdict verdict_from_id(const std::string& id, const std::string& field) {
  std::string ids;
  for (const auto& r : rows()) {
    if (id == r.id) return r.verdict;
    ids += std::string(ids.empty() ? "" : ", ") + r.id;
  }
  throw InputError(field, "expected a verdict id (" + ids + "), got '" + id + "'");
}

std::optional<Verdict> answer_verdict(const nlohmann::json& answer) {
  const auto it = answer.find("verdict_id");
  if (it == answer.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) throw InputError("verdict_id", "expected a string, got " + std::string(it->type_name()));
  return verdict_from_id(it->get<std::string>(), "verdict_id");
}

void put_verdict(nlohmann::json& out, std::optional<Verdict> v, const nlohmann::json& none) {
  out["verdict"] = v ? nlohmann::json(spelling(*v)) : none;
  out["verdict_id"] = v ? nlohmann::json(verdict_id(*v)) : nlohmann::json(nullptr);
}

bool verdict_runs(Verdict v) { return rows()[static_cast<std::size_t>(v)].runs; }
bool verdict_sized(Verdict v) { return rows()[static_cast<std::size_t>(v)].sized; }

nlohmann::json verdicts_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : rows()) out.push_back({{"id", r.id}, {"text", r.text}, {"runs", r.runs}, {"fits", r.fits}, {"sized", r.sized}});
  return out;
}

}  // namespace headroom
