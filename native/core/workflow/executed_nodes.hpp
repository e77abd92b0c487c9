#pragma once
// Which nodes of a workflow run, as ComfyUI's frontend and executor decide it.
#include <set>
#include <string>
#include <vector>

#include "core/workflow/workflow_graph.hpp"

namespace headroom::workflow {

// ComfyUI's frontend leaves frontend-only nodes (a Reroute) out of the prompt it queues and links each
// consumer to what the Reroute was fed. The reader does the same once, so that no rule (a value node's
// widget, a size measured from an image, one reference image fed to two conditionings) has to look
// through them: a Reroute on a width link made a camera video read the stale stored 512 px. Getters of named
// pass-throughs (KJNodes' GetNode) are linked to what feeds their setter; `source` names the workflow in the
// error for a getter whose name no setter, or two, sets.
void link_past_virtual_nodes(Graph& g, const std::string& source);

// Outputs and their ancestors. Muted nodes stop the walk; bypassed nodes pass their inputs through, so
// the walk continues past them without running them.
std::set<std::string> executed_nodes(const Graph& g);

// Inputs of the nodes that run linked to a node that is not in the graph: a subgraph output wired to
// nothing inside (the video_ltx2_i2v_lora template's VIDEO). ComfyUI refuses such a prompt, so what should
// feed it never runs; saying where the chain breaks beats a bare "no diffusion model loader runs".
std::vector<std::string> unfed_input_notes(const Graph& g, const std::set<std::string>& run);

}  // namespace headroom::workflow
