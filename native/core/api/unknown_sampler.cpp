#include "core/api/unknown_sampler.hpp"

#include <string>

#include "core/estimate/job_models.hpp"

namespace headroom::api {
namespace {

std::string named(const NodeRef& n) { return n.type + " #" + n.id + (n.title.empty() ? "" : " \"" + n.title + "\""); }

nlohmann::json node_json(const NodeRef& n) {
  return {{"node_id", n.id}, {"node_type", n.type}, {"title", n.title.empty() ? nlohmann::json(nullptr) : nlohmann::json(n.title)}};
}

// Where the sampler's trace stopped and why; a model the catalog lacks stops at its loader.
std::optional<std::pair<NodeRef, std::string>> stop_of(const SamplerJob& s, std::string& what) {
  if (s.unknown_node) {
    what = s.unknown_what;
    return std::make_pair(*s.unknown_node, s.unknown);
  }
  if (s.diffusion && s.model_loader && !find_model_of(*s.diffusion)) {
    what = "model";
    return std::make_pair(*s.model_loader, "its model '" + s.diffusion->file + "' is not in the catalog");
  }
  return std::nullopt;
}

}  // namespace

std::optional<Withheld> unknown_sampler(const Job& job) {
  for (const auto& s : job.samplers) {
    std::string what;
    const auto stop = stop_of(s, what);
    if (!stop) continue;
    const NodeRef sampler{s.node_id, s.type, s.title};
    const NodeRef& at = stop->first;
    const std::string why = named(sampler) + " cannot be sized: " + stop->second +
                            (at.title.empty() ? "" : " (" + at.type + " #" + at.id + " is titled \"" + at.title + "\")") +
                            "; the run's peak is the worst sampler's, so no verdict rests on the " +
                            (job.samplers.size() > 1 ? "other samplers' figures" : "figures") + " shown";
    nlohmann::json not_covered = node_json(stop->first);
    not_covered["kind"] = what == "model" ? "sampler_model" : "sampler_size";
    not_covered["why"] = stop->second;
    not_covered["sampler"] = node_json(sampler);
    return Withheld{why, not_covered};
  }
  return std::nullopt;
}

}  // namespace headroom::api
