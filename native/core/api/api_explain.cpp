// api::explain: the JSON face of the OOM parser and its diagnosis.
#include "core/api/api.hpp"
#include "core/base/request_fields.hpp"
#include "core/oom/oom_diagnose.hpp"
#include "core/oom/oom_parse.hpp"

namespace headroom::api {

const request::Fields& explain_fields() {
  static const request::Fields f = {
      {"text", request::Kind::String, "the error message or log text", 0, 0, {}, true}};
  return f;
}

json explain(const std::string& text) {
  oom::Report report = oom::parse(text);
  if (report.recognised) report.diagnosis = oom::diagnose(report);
  return oom::to_json(report);
}

json explain_request(const json& body) {
  const request::Request request(body, "explain", explain_fields());
  return explain(request.text("text"));
}

}  // namespace headroom::api
