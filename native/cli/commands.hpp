#pragma once
// One function per `headroom` subcommand, each in its own cmd_<name>.cpp.
// Each returns the process exit code (the k* statuses below, as each command's --help documents).
#include <string>
#include <vector>

namespace headroom::cli {

// Exit statuses, one meaning each, so a script can tell a typo from a workflow Headroom cannot size.
constexpr int kExitOk = 0;           // it runs (fits, streams, tight), or the command did its job
constexpr int kExitDoesNotFit = 1;   // the verdict is "does not fit" (or explain: not an OOM message)
constexpr int kExitBadInput = 2;     // a flag, field or file is wrong; the message names it
constexpr int kExitNotCovered = 3;   // valid input that Headroom does not cover (a model not in the catalog)
constexpr int kExitInternal = 4;     // a bug: an exception Headroom does not throw on purpose

using Argv = std::vector<std::string>;

int cmd_models(const Argv& args);
int cmd_estimate(const Argv& args);
int cmd_plan(const Argv& args);
int cmd_inspect(const Argv& args);
int cmd_explain(const Argv& args);
int cmd_llm(const Argv& args);
int cmd_train(const Argv& args);
int cmd_runs(const Argv& args);
int cmd_schema(const Argv& args);

}  // namespace headroom::cli
