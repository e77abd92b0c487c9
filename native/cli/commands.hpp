#pragma once
// One function per `headroom` subcommand, each in its own cmd_<name>.cpp.
// Each returns the process exit code: 0 ok, 1 "does not fit" style verdicts where documented, 2 bad input.
#include <string>
#include <vector>

namespace headroom::cli {

using Argv = std::vector<std::string>;

int cmd_models(const Argv& args);
int cmd_estimate(const Argv& args);
int cmd_plan(const Argv& args);
int cmd_inspect(const Argv& args);
int cmd_explain(const Argv& args);
int cmd_llm(const Argv& args);
int cmd_train(const Argv& args);

}  // namespace headroom::cli
