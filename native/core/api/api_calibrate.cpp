// api::calibrate(): corrections learned from the recorded runs, in the form estimate and plan take back.
#include "core/api/api.hpp"
#include "core/calibrate/calibration.hpp"

namespace headroom::api {

const request::Fields& calibrate_fields() {
  using request::Kind;
  static const request::Fields f = {
      {"runs", Kind::List, "the recorded runs, newest first (GET /headroom/runs' or `headroom runs --json`'s \"runs\")",
       0, 0, {}, true},
      {"card", Kind::String, "learn only from runs on this device (the runs' runtime.device)"},
      {"since", Kind::Number, "learn only from runs started at or after this unix time (a reset's time)", 0, 1e11},
  };
  return f;
}

json calibrate(const json& body) {
  const request::Request request(body, "calibrate", calibrate_fields());
  const auto learned = calibrate::learn(request.raw("runs"), request.text_or("card", ""),
                                          request.number_or("since", 0));
  json out = {{"v", 1}, {"rule", calibrate::rule_json(calibrate::rule())}, {"calibration", json::array()},
              {"runs_seen", learned.runs_seen}, {"stages_used", learned.stages_used},
              {"stages_skipped", learned.stages_skipped}};
  for (const auto& c : learned.corrections) out["calibration"].push_back(calibrate::to_json(c));
  return out;
}

}  // namespace headroom::api
