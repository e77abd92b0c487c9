#pragma once
// A Job's models resolved once. A Job names its models (what the user and the workflow wrote, and what
// job_to_json echoes); the estimator and the planner need the catalog entries, and a plan prices
// dozens of copies of one job. resolve_models fills each Component's `info` when the Job is built;
// model_of answers from it, and by name where it is unset or no longer names the component's model.
#include <string>

#include "core/estimate/job.hpp"

namespace headroom {

// Sets `info` on every component whose model the catalog knows; the others stay null, so an unknown
// name is still refused, with its field, where it is used.
void resolve_models(Job& job);

// The component's catalog entry; throws InputError(field) for a model the catalog does not know.
const ModelInfo& model_of(const Component& c, const std::string& field = "model");
// The same, nullptr for an unknown model (callers that probe).
const ModelInfo* find_model_of(const Component& c);

}  // namespace headroom
