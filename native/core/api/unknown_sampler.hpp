#pragma once
// Issue 19: a workflow's peak is the worst of its samplers', so a sampler Headroom cannot size (its latent
// or its model stops at a node Headroom does not read) leaves the verdict unknown, however the samplers
// beside it fare: their figures are shown, nothing judges them.
#include <optional>

#include "core/api/workflow_request.hpp"

namespace headroom::api {

// The first sampler that runs whose size or model is unknown, naming it and the node its trace stopped
// at (id, type, title); nullopt when every sampler that runs is sized.
std::optional<Withheld> unknown_sampler(const Job& job);

}  // namespace headroom::api
