// `headroom`: the estimator, planner, inspector and OOM explainer from the command line.
// `headroom decode` runs the LibTorch decoder in a separate binary (headroom-decode) so that
// the estimator commands never load LibTorch and start in milliseconds.
#ifdef _WIN32
#define NOMINMAX
#define WIN32_LEAN_AND_MEAN
#include <windows.h>
#include <process.h>
#else
#include <unistd.h>
#endif

#include <cerrno>
#include <climits>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "cli/commands.hpp"
#include "core/base/error.hpp"

namespace {

const char* kUsage =
    "headroom: predict and fix VRAM use of Flux and Wan workflows\n"
    "\n"
    "usage: headroom COMMAND [options]\n"
    "\n"
    "commands:\n"
    "  models                      list models, precisions, GPUs and presets\n"
    "  estimate --model NAME ...   per-stage peak VRAM for one model and shape\n"
    "  plan WORKFLOW.json ...      estimate a ComfyUI workflow and plan changes that fit\n"
    "  inspect FILE...             read .safetensors/.gguf headers (no tensor data)\n"
    "  explain [FILE|-]            diagnose an out-of-memory error message\n"
    "  llm --model NAME ...        LLM inference memory (weights + KV cache)\n"
    "  train --model NAME ...      training memory (full, LoRA, QLoRA)\n"
    "  runs [--history FILE]       recorded ComfyUI runs: predicted against measured, per stage\n"
    "  schema [--markdown]         the JSON requests' fields: a JSON Schema, or docs/api.md's text\n"
    "  decode --vae F --latent F --out F [--force]   decode a saved latent (needs the LibTorch build)\n"
    "\n"
    "Run `headroom COMMAND --help` for a command's options.\n"
    "\n"
    "Exit status: 0 it runs (fits, streams or tight), 1 does not fit, 2 bad input (the message names the\n"
    "field), 3 not covered (plan, estimate: a valid workflow or model Headroom cannot size), 4 internal error.\n";

#ifdef _WIN32
// Windows: the decoder binary beside this one, run as a child (there is no exec), its status passed on.
std::string self_dir(const char* argv0) {
  char buf[MAX_PATH];
  DWORD n = GetModuleFileNameA(nullptr, buf, sizeof buf);
  std::string path = n > 0 && n < sizeof buf ? std::string(buf, n) : std::string(argv0);
  auto slash = path.find_last_of("/\\");
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

int run_decode(const char* argv0, int argc, char** argv) {
  std::string exe = self_dir(argv0) + "\\headroom-decode.exe";
  if (GetFileAttributesA(exe.c_str()) == INVALID_FILE_ATTRIBUTES) {
    std::cerr << "headroom decode: " << exe << " is missing: this build has no LibTorch decoders.\n";
    return 2;
  }
  std::vector<const char*> args;
  args.push_back(exe.c_str());
  for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  intptr_t status = _spawnv(_P_WAIT, exe.c_str(), args.data());
  if (status < 0) {
    std::cerr << "headroom decode: cannot run " << exe << ": " << std::strerror(errno) << "\n";
    return 2;
  }
  return static_cast<int>(status);
}
#else
std::string self_dir(const char* argv0) {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  std::string path = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string(argv0);
  auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

int run_decode(const char* argv0, int argc, char** argv) {
  std::string exe = self_dir(argv0) + "/headroom-decode";
  if (access(exe.c_str(), X_OK) != 0) {
    std::cerr << "headroom decode: " << exe
              << " is missing: this build has no LibTorch. Install torch for the Python you build with "
                 "(bash scripts/deps.sh does) and rebuild with scripts/build.sh.\n";
    return 2;
  }
  std::vector<char*> args;
  args.push_back(const_cast<char*>(exe.c_str()));
  for (int i = 2; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  execv(exe.c_str(), args.data());
  std::cerr << "headroom decode: cannot run " << exe << ": " << std::strerror(errno) << "\n";
  return 2;
}
#endif

}  // namespace

int main(int argc, char** argv) {
  using namespace headroom::cli;
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h" ||
      std::string(argv[1]) == "help") {
    std::cout << kUsage;
    return argc < 2 ? 2 : 0;
  }
  std::string command = argv[1];
  if (command == "decode") return run_decode(argv[0], argc, argv);
  Argv args(argv + 2, argv + argc);
  try {
    if (command == "models") return cmd_models(args);
    if (command == "estimate") return cmd_estimate(args);
    if (command == "plan") return cmd_plan(args);
    if (command == "inspect") return cmd_inspect(args);
    if (command == "explain") return cmd_explain(args);
    if (command == "llm") return cmd_llm(args);
    if (command == "train") return cmd_train(args);
    if (command == "runs") return cmd_runs(args);
    if (command == "schema") return cmd_schema(args);
    if (command == "--version" || command == "version") {
      std::cout << "headroom 0.1.0\n";
      return 0;
    }
  } catch (const headroom::Error& e) {
    std::cerr << "headroom " << command << ": " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::exception& e) {
    // Not 3: that status says "not covered", which a script may act on; a bug is something else.
    std::cerr << "headroom " << command << ": internal error: " << e.what() << "\n";
    return kExitInternal;
  }
  std::cerr << "headroom: unknown command '" << command << "'\n\n" << kUsage;
  return 2;
}
