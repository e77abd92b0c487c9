// `headroom plan WORKFLOW.json [--gpu NAME | --vram GIB] [--models DIR] [--model-folder NAME=DIR] [--json]`
// Exit status: 0 it runs (fits, streams or tight, or no card given), 1 does not fit, 2 bad input, 3 a valid
// workflow the estimator does not cover (the JSON's not_covered says which node or model).
#include <iostream>

#include "cli/args.hpp"
#include "cli/commands.hpp"
#include "cli/field_flags.hpp"
#include "core/api/api.hpp"
#include "core/catalog/verdict.hpp"
#include "core/base/error.hpp"
#include "core/base/json_reader.hpp"
#include "core/base/units.hpp"
#include "core/catalog/catalog.hpp"
#include "core/workflow/workflow_graph.hpp"
#include "cli/table.hpp"

namespace headroom::cli {

namespace {

const char* kHelp =
    "usage: headroom plan WORKFLOW.json [--gpu NAME | --vram GIB] [--free GIB] [--models DIR]\n"
    "         [--model-folder NAME=DIR ...] [--json]\n"
    "         [--runtime dynamic|legacy] [--reserve-vram GB] [--vram-headroom GB] [--ram GIB]\n"
    "         [--async-offload N | --disable-async-offload] [--os linux|windows]\n"
    "\n"
    "Reads a ComfyUI workflow (UI format as saved by Workflow > Save, or API format), predicts the\n"
    "peak VRAM of each stage and, when it does not fit the card, lists the cheapest changes that do.\n"
    "\n"
    "  --models DIR   ComfyUI models folder: read the named files' headers instead of guessing from names\n"
    "  --model-folder NAME=DIR  one more folder ComfyUI searches for NAME (\"loras=/data/sd/Lora\", as in\n"
    "                 extra_model_paths.yaml); repeatable, searched before --models\n"
    "  --json         one JSON object: estimate's fields plus verdict, changes, cumulative, unknown_nodes,\n"
    "                 smallest_gpu (fully resident), smallest_gpu_runs (runs unchanged), job; for a workflow\n"
    "                 it cannot size: verdict unknown, reason, not_covered\n"
    "\n"
    "Exit status: 0 it runs (fits, streams or tight), 1 does not fit, 2 bad input (the message names the\n"
    "field), 3 not covered: a valid workflow Headroom cannot size (no diffusion model loader runs, or its\n"
    "model is not in the catalog); --json says which node and file in not_covered.\n";

// The card and loader flags, read from the plan request's table (the workflow's own fields have none).
const std::vector<FlagForm>& plan_flags() {
  static const std::vector<FlagForm> forms = flag_forms(api::plan_fields());
  return forms;
}

std::string help_text() {
  std::string h = kHelp;
  return h.insert(h.find("  --models DIR"), flags_help(plan_flags()));
}

std::string bytes(const api::json& v) { return v.is_number() ? format_bytes(v.get<std::uint64_t>()) : "-"; }

// The precision a component is estimated in: the one read from its name or header, else the catalog's
// default for the model (the JSON's "" means that default).
std::string precision_text(const api::json& c) {
  const std::string p = text_of(c, "precision");
  if (!p.empty()) return p;
  const std::string assumed = text_of(c, "precision_assumed");
  return assumed.empty() ? "(precision unknown)" : assumed + " (assumed: the catalog default)";
}

void print_job(const api::json& j) {
  std::cout << "Job       ";
  if (j.contains("diffusion") && j["diffusion"].is_object()) {
    // A file the catalog does not know has no model name: the file stands for it.
    const std::string model = text_of(j["diffusion"], "model");
    std::cout << (model.empty() ? "'" + text_of(j["diffusion"], "file") + "' (not in the catalog)" : model) << " "
              << precision_text(j["diffusion"]);
  }
  if (j.contains("tokens")) std::cout << ", " << j.value("tokens", 0) << " shape tokens";
  else std::cout << ", " << j.value("width", 0) << "x" << j.value("height", 0);
  if (j.value("frames", 1) > 1) std::cout << "x" << j.value("frames", 1) << " frames";
  std::cout << ", batch " << j.value("batch", 1) << "\n";
}

void print_changes(const api::json& r) {
  if (!r["changes"].empty()) {
    std::cout << "\nChanges (what makes it fit first, then what makes it run; cheapest first in each):\n";
    int i = 0;
    for (const auto& c : r["changes"])
      std::cout << "  " << ++i << ". " << c["description"].get<std::string>() << "\n     -> peak "
                << bytes(c["new_peak_bytes"]) << " (saves " << bytes(c["saving_bytes"]) << "), "
                << c["verdict"].get<std::string>() << "\n";
  }
  if (r.contains("cumulative") && !r["cumulative"]["steps"].empty()) {
    std::cout << "\nCombined until it fits:\n";
    for (const auto& c : r["cumulative"]["steps"])
      std::cout << "  + " << c["kind"].get<std::string>() << " -> " << bytes(c["new_peak_bytes"]) << " ("
                << c["verdict"].get<std::string>() << ")\n";
  }
}

// Each sampler as its own job (issue 19): by id, type and title, what it samples and its peak; the one
// marked binds, and the stages above are its.
void print_samplers(const api::json& r) {
  if (!r.contains("samplers") || r["samplers"].size() < 2) return;
  Table t;
  t.add({"sampler", "model", "shape", "cfg", "peak"});
  for (const auto& s : r["samplers"]) {
    std::string name = text_of(s, "type") + " #" + text_of(s, "node_id");
    if (!text_of(s, "title").empty()) name += " \"" + text_of(s, "title") + "\"";
    std::string shape = "?";
    if (s.value("size_known", false)) {
      shape = std::to_string(s.value("width", 0)) + "x" + std::to_string(s.value("height", 0));
      if (s.value("frames", 1) > 1) shape += "x" + std::to_string(s.value("frames", 1));
    }
    const std::string cfg = s["cfg"].is_number() ? fixed(s["cfg"].get<double>(), 1) : "-";
    const std::string peak = s["peak_bytes"].is_number() ? bytes(s["peak_bytes"]) : "not sized: " + text_of(s, "unsized");
    t.add({name, text_of(s, "model").empty() ? "?" : text_of(s, "model"), shape, cfg,
           peak + (s.value("binding", false) ? " (binds)" : "")});
  }
  std::cout << "\nSamplers (the stages are the binding one's):\n" << t.text();
}

void print_table(const std::string& path, const api::json& r) {
  const auto& wf = r["workflow"];
  std::cout << "Workflow  " << path << " (" << wf["format"].get<std::string>() << " format)\n";
  if (r.contains("job")) print_job(r["job"]);
  if (r.contains("free_bytes"))
    std::cout << "Budget    " << bytes(r["free_bytes"]) << " free"
              << (r.contains("vram_bytes") ? " of " + bytes(r["vram_bytes"]) : std::string()) << "\n";
  else if (r["budget_bytes"].is_number())
    std::cout << "Card      " << bytes(r["budget_bytes"]) << "\n";
  const bool unknown = answer_verdict(r) == Verdict::Unknown;
  if (unknown && !r["stages"].empty())
    std::cout << "\nSize unknown: " << text_of(r, "reason") << "\n";
  if (unknown && r["stages"].empty()) {
    std::cout << "\nNot covered: " << text_of(r, "reason") << "\n";
  } else {
    Table stages;
    stages.add({"stage", "peak", "resident"});
    for (const auto& s : r["stages"]) {
      std::string resident;
      if (s.contains("resident"))
        for (const auto& m : s["resident"]) resident += (resident.empty() ? "" : ", ") + m.get<std::string>();
      stages.add({text_of(s, "name"), bytes(s["peak_bytes"]), resident});
    }
    std::cout << "\n" << stages.text();
    print_samplers(r);
    std::cout << "\nPeak " << bytes(r["peak_bytes"]) << " in " << text_of(r, "peak_stage") << ", at least "
              << bytes(r["required_bytes"]) << ": "
              << (r["verdict"].is_string() ? r["verdict"].get<std::string>() : "no card given") << " ("
              << text_of(r, "runtime") << " loader)";
    if (text_of(r, "verdict_reason") != "") std::cout << ": " << text_of(r, "verdict_reason");
    std::cout << "\n";
    if (text_of(r, "advice") != "") std::cout << "As it is: " << text_of(r, "advice") << "\n";
  }
  print_changes(r);
  auto card = [](const api::json& g) {
    std::string t = g["name"].get<std::string>();
    if (g["price_eur_per_hour"].is_number()) t += " (" + fixed(g["price_eur_per_hour"].get<double>(), 2) + " EUR/h)";
    return t;
  };
  if (r.contains("smallest_gpu_runs") && r["smallest_gpu_runs"].is_object()) {
    const auto& g = r["smallest_gpu_runs"];
    std::cout << "\nSmallest card that runs it unchanged: " << card(g);
    if (answer_verdict(g) != Verdict::Fits) std::cout << ", " << text_of(g, "verdict");
    std::cout << "\n";
    if (r["smallest_gpu"].is_object() && r["smallest_gpu"]["name"] != g["name"])
      std::cout << "Smallest card that holds it fully resident: " << card(r["smallest_gpu"]) << "\n";
  } else if (!unknown) {
    std::cout << "\nNo card in gpus.json runs it unchanged.\n";
  }
  if (!r["unknown_nodes"].empty()) {
    std::cout << "\nUnknown nodes (not estimated):";
    for (const auto& u : r["unknown_nodes"]) std::cout << " #" << u["id"].get<std::string>() << " " << u["type"].get<std::string>();
    std::cout << "\n";
  }
  const auto& notes = r.contains("notes") ? r["notes"] : wf["notes"];
  if (!notes.empty()) {
    std::cout << "\nNotes:\n";
    for (const auto& n : notes) std::cout << "  - " << n.get<std::string>() << "\n";
  }
}

}  // namespace

int cmd_plan(const Argv& argv) {
  for (const auto& a : argv)
    if (a == "--help" || a == "-h") {
      std::cout << help_text();
      return 0;
    }
  const auto& forms = plan_flags();
  Args args(argv, value_flag_names(forms, {"models", "model-folder"}), switch_names(forms, {"json"}));
  if (args.positionals().size() != 1)
    throw InputError("WORKFLOW.json", "give exactly one workflow file (got " +
                                          std::to_string(args.positionals().size()) + ")\n\n" + help_text());
  if (args.get("gpu") && args.get("vram")) throw InputError("--gpu", "give --gpu or --vram, not both");
  const std::string path = args.positionals()[0];
  api::json request = request_from_flags(args, forms);
  request["workflow"] = workflow::parse_workflow_text(read_text(path, "WORKFLOW.json", workflow::kMaxWorkflowBytes), path);
  request["source"] = path;
  if (auto m = args.get("models")) request["models_dir"] = *m;
  for (const std::string& entry : args.get_all("model-folder")) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == entry.size())
      throw InputError("--model-folder", "expected NAME=DIR (a ComfyUI folder name such as loras, and a directory), "
                                         "got '" + entry + "'");
    request["model_folders"][entry.substr(0, eq)].push_back(entry.substr(eq + 1));
  }
  api::json r;
  try {
    r = api::plan(request);
  } catch (const InputError& e) {
    // Name the flag the user typed, not the request field it became.
    if (e.field().rfind("model_folders", 0) == 0)
      throw InputError("--model-folder", std::string(e.what()).substr(e.field().size() + 2));
    if (e.field() == "models_dir") throw InputError("--models", std::string(e.what()).substr(e.field().size() + 2));
    rethrow_as_flag(e, args, forms);
  }
  if (args.has("json")) std::cout << r.dump(2, ' ', false, api::json::error_handler_t::replace) << "\n";
  else print_table(path, r);
  const std::optional<Verdict> verdict = answer_verdict(r);
  if (verdict == Verdict::Unknown) return kExitNotCovered;
  return verdict == Verdict::DoesNotFit ? kExitDoesNotFit : kExitOk;
}

}  // namespace headroom::cli
