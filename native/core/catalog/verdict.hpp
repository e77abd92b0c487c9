#pragma once
// The answers to "does this run fit the card?", spelled once. The estimator, the planner, the LLM and
// training models, the CLI, the Python nodes and the browser all take the spelling from here (the latter
// two through api::catalog()'s "verdicts").
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace headroom {

enum class Verdict {
  Fits,        // every stage fits with margin, no weights streamed
  Tight,       // it runs, but with partial loading, a tiled fallback or little margin (legacy loader)
  Streams,     // it runs under dynamic VRAM with part of the weights copied in per step (also a stage's mode)
  DoesNotFit,  // some stage cannot run on the card (also a stage's mode)
  Unknown,     // the run could not be sized (no catalog diffusion model)
};

// "fits", "tight", "streams", "does not fit", "unknown".
const std::string& spelling(Verdict v);

// [{id, text, runs, fits, sized}] in the order above: id is the enum's name in snake case, text its spelling.
nlohmann::json verdicts_json();

}  // namespace headroom
