#pragma once
// What the requests that take a workflow (plan, apply_preset, suggest_preset) share: their fields, how a
// request becomes a runtime, parse options and a workflow, and when a verdict on it must be withheld.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/base/request_fields.hpp"
#include "core/estimate/estimator.hpp"
#include "core/workflow/workflow.hpp"

namespace headroom::api {

// workflow, models_dir, model_folders, source, the card and the runtime fields.
request::Fields workflow_fields();
Runtime runtime_of(const request::Request& request);
workflow::ParseOptions options_of(const request::Request& request);
// The request's workflow; one sent as text is parsed into `parsed`, which then holds it.
const nlohmann::json& workflow_of(const request::Request& request, nlohmann::json& parsed);

// Why no verdict may rest on this workflow's figures although Headroom sized it: the latent's size was
// assumed, a sampler that runs cannot be sized (unknown_sampler.hpp), or a loader's file is broken (0 bytes,
// truncated). `not_covered` names the node and what.
struct Withheld {
  std::string why;
  nlohmann::json not_covered;
};
std::optional<Withheld> withheld_verdict(const workflow::WorkflowInfo& info);

}  // namespace headroom::api
