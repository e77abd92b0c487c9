// `headroom inspect FILE... [--json]`: header-only report on .safetensors / .gguf files.
// Exit 0 when every file was read, 2 when any is malformed or unreadable (the others are still shown).
#include <iostream>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/table.hpp"
#include "core/api/api.hpp"
#include "core/base/error.hpp"
#include "core/base/units.hpp"

namespace headroom::cli {
namespace {

using nlohmann::json;

const char* kHelp =
    "usage: headroom inspect FILE... [--json]\n"
    "Reads the headers of .safetensors and .gguf files (never their tensor data) and reports the model\n"
    "recognised, parameters, dtype mix, precision and the bytes ComfyUI will hold on the GPU.\n"
    "Exit status: 0 all files read, 2 any file malformed or unreadable.\n";

std::string text(const json& v) { return v.is_string() ? v.get<std::string>() : v.is_null() ? "-" : v.dump(); }

std::string params(std::uint64_t n) {
  if (n >= 1000000000ull) return fixed(n / 1e9, 2) + " B";
  if (n >= 1000000ull) return fixed(n / 1e6, 1) + " M";
  return std::to_string(n);
}

void print_component(const json& c, const std::string& indent) {
  std::cout << indent << "model:        " << text(c["model"]);
  if (c.contains("variant") && !c["variant"].is_null() && c["variant"] != c["model"])
    std::cout << " (" << text(c["variant"]) << ")";
  if (c.contains("family") && !c["family"].is_null()) std::cout << ", family " << text(c["family"]);
  std::cout << "\n" << indent << "role:         " << text(c["role"]) << "\n";
  if (c.contains("candidates")) std::cout << indent << "also matches: " << c["candidates"].dump() << "\n";
  if (c.contains("key_prefix") && !c["key_prefix"].get<std::string>().empty())
    std::cout << indent << "key prefix:   " << text(c["key_prefix"]) << "\n";
  std::cout << indent << "parameters:   " << params(c["parameters"].get<std::uint64_t>()) << "\n";
  std::cout << indent << "precision:    " << text(c["precision"]) << "\n";
  std::cout << indent << "GPU bytes:    " << format_bytes(c["gpu_bytes"].get<std::uint64_t>()) << " (weights "
            << format_bytes(c["weight_gpu_bytes"].get<std::uint64_t>()) << " + dequantisation transient "
            << format_bytes(c["dequant_transient_bytes"].get<std::uint64_t>()) << ")\n";
  std::cout << indent << "dtype mix:\n";
  Table mix(indent + "  ", 1);
  for (std::size_t column : {1, 3, 5}) mix.align_right(column);
  for (auto it = c["dtype_mix"].begin(); it != c["dtype_mix"].end(); ++it)
    mix.add({it.key(), std::to_string((*it)["tensors"].get<std::uint64_t>()), "tensors",
             params((*it)["parameters"].get<std::uint64_t>()), "params", format_bytes((*it)["bytes"].get<std::uint64_t>())});
  std::cout << mix.text();
}

void print_table(const json& r) {
  std::cout << r["path"].get<std::string>() << "\n";
  if (r.contains("error")) {
    std::cout << "  error: " << r["error"].get<std::string>() << "\n";
    return;
  }
  std::cout << "  format:       " << text(r["format"]) << ", " << r["tensors"].get<std::uint64_t>() << " tensors, file "
            << format_bytes(r["file_bytes"].get<std::uint64_t>()) << " (header "
            << format_bytes(r["header_bytes"].get<std::uint64_t>()) << ")\n";
  json whole = r["recognised"];
  for (const char* k : {"parameters", "precision", "gpu_bytes", "weight_gpu_bytes", "dequant_transient_bytes",
                        "dtype_mix", "key_prefix"})
    whole[k] = r[k];
  print_component(whole, "  ");
  if (r["recognised"].contains("components")) {
    std::cout << "  components:\n";
    for (const auto& c : r["recognised"]["components"]) {
      std::cout << "  - " << (c["key_prefix"].get<std::string>().empty() ? "(no prefix)" : text(c["key_prefix"]))
                << "\n";
      print_component(c, "      ");
    }
  }
}

}  // namespace

int cmd_inspect(const Argv& argv) {
  Args args(argv, {}, {"json", "help"});
  if (args.has("help")) {
    std::cout << kHelp;
    return 0;
  }
  if (args.positionals().empty()) throw InputError("FILE", "expected one or more .safetensors or .gguf files");
  json reports = api::inspect(args.positionals());
  bool failed = false;
  for (const auto& r : reports) failed = failed || r.contains("error");
  if (args.has("json")) {
    std::cout << reports.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  } else {
    bool first = true;
    for (const auto& r : reports) {
      if (!first) std::cout << "\n";
      first = false;
      print_table(r);
    }
  }
  if (failed) {
    for (const auto& r : reports)
      if (r.contains("error")) std::cerr << "headroom inspect: " << r["error"].get<std::string>() << "\n";
  }
  return failed ? 2 : 0;
}

}  // namespace headroom::cli
