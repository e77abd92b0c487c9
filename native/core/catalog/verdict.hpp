#pragma once
// The answers to "does this run fit the card?", spelled once. The estimator, the planner, the LLM and
// training models, the CLI, the Python nodes and the browser all take the spelling from here (the latter
// two through api::catalog()'s "verdicts").
#include <optional>
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

// The stable id ("fits", "tight", "streams", "does_not_fit", "unknown"): answers carry it as
// "verdict_id" beside the words, and whoever reads an answer decides from it.
const char* verdict_id(Verdict v);

// The verdict of an id; throws InputError(field) naming the ids when `id` is none of them.
Verdict verdict_from_id(const std::string& id, const std::string& field);

// An answer's verdict, read from its "verdict_id" (none when the answer has no verdict).
std::optional<Verdict> answer_verdict(const nlohmann::json& answer);

// Writes "verdict" (the words) and "verdict_id" into `out`; without a verdict, "verdict" is `none`
// and "verdict_id" null.
void put_verdict(nlohmann::json& out, std::optional<Verdict> v, const nlohmann::json& none = nullptr);

// The table's flags of a verdict, for C++ that decides as the browser does from "verdicts": whether the
// run completes, and whether it was sized at all.
bool verdict_runs(Verdict v);
bool verdict_sized(Verdict v);

// [{id, text, runs, fits, sized}] in the order above: id is the enum's name in snake case, text its spelling.
nlohmann::json verdicts_json();

}  // namespace headroom
