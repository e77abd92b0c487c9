// api::explain, api::llm and api::train: thin JSON wrappers over the OOM parser/diagnosis and the
// LLM inference / training memory models.
#include "core/api/api.hpp"
#include "core/llm/llm_memory.hpp"
#include "core/oom/oom_diagnose.hpp"
#include "core/oom/oom_parse.hpp"
#include "core/llm/train_memory.hpp"

namespace headroom::api {

json explain(const std::string& text) {
  oom::Report report = oom::parse(text);
  if (report.recognised) report.diagnosis = oom::diagnose(report);
  return oom::to_json(report);
}

json llm(const json& request) { return headroom::llm::estimate(request); }

json train(const json& request) { return headroom::train::estimate(request); }

}  // namespace headroom::api
