// PLACEHOLDER written by the lead so every helper can link from the start.
// The owner replaces this whole file; no placeholder may remain at the end.
#include "cli/commands.hpp"
#include "core/error.hpp"
namespace headroom::cli {
int cmd_explain(const Argv&) { throw Error("explain: not implemented yet"); }
int cmd_llm(const Argv&) { throw Error("llm: not implemented yet"); }
int cmd_train(const Argv&) { throw Error("train: not implemented yet"); }
}
