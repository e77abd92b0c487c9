// PLACEHOLDER written by the lead so every helper can link from the start.
// The owner replaces this whole file; no placeholder may remain at the end.
#include "cli/commands.hpp"
#include "core/error.hpp"
namespace headroom::cli {
int cmd_models(const Argv&) { throw Error("models: not implemented yet"); }
int cmd_estimate(const Argv&) { throw Error("estimate: not implemented yet"); }
}
