// Workflow -> Job. Node semantics: ../shared/facts/comfyui-internals.md (4.1 UNETLoader, 5 latent nodes,
// 2.4 VAEDecodeTiled); format: ../shared/real-workflows/INDEX.md. Each node that runs is visited once and
// handed to the unit that reads its kind (read_loaders, read_latents, read_generations); assemble_job
// then makes the Job of what they gathered.
#include "core/workflow/workflow.hpp"

#include <algorithm>
#include <string>

#include "core/base/error.hpp"
#include "core/base/file_reader.hpp"
#include "core/base/json_reader.hpp"
#include "core/estimate/estimator.hpp"
#include "core/workflow/assemble_job.hpp"
#include "core/workflow/executed_nodes.hpp"
#include "core/workflow/read_generations.hpp"
#include "core/workflow/read_latents.hpp"
#include "core/workflow/read_loaders.hpp"
#include "core/workflow/reader_state.hpp"

namespace headroom::workflow {

namespace {

void sampler_cfg(ReaderState& st, const Node& n, const std::string& widget) {
  auto v = resolved_value(st.g, n, widget);
  if (!v || !v->is_number()) return;
  st.cfg = std::max(st.cfg, v->get<double>());
}

void decoder(ReaderState& st, const Node& n, const ComfyNode& info) {
  Decoder d{n.id, n.type, n.where, std::nullopt, std::nullopt};
  if (!info.tile_widget.empty()) d.tile_size = st.ref(n, info.tile_widget);
  if (!info.mode_widget.empty()) d.mode = st.ref(n, info.mode_widget);
  st.info.decoders.push_back(d);
}

// One reference image is one set of tokens, however many conditionings it is attached to (the klein
// edit templates give the same latent to the positive and the negative side).
void reference_image(ReaderState& st, const Node& n) {
  const Input* in = n.input("latent");
  const std::string source = in && in->from_node ? *in->from_node + ":" + std::to_string(in->from_slot) : n.id;
  if (st.reference_sources.insert(source).second) ++st.info.job.reference_images;
}

// Nodes that only pass values, switch, or say what they leave out: known, nothing to size.
bool passive(const ComfyNode& info) {
  return info.neutral || info.is_virtual || !info.value_outputs.empty() || info.size_from_image ||
         !info.switch_widget.empty() || !info.run_note.empty();
}

// Dispatches a node that runs to the reader of its kind (comfy_nodes.json decides the kind).
void visit(ReaderState& st, const Node& n) {
  const ComfyNode* info = node_info(n.type);
  if (!info) return st.info.unknown_nodes.push_back({n.id, n.type, ""});
  if (!info->stage.empty()) st.info.node_stages[n.id] = info->stage;
  if (!info->loads.empty()) return read_loader(st, n, info->loads);
  if (info->latent) {
    // A latent node that also runs something it does not count (ARVideoI2V's start-image encode) says so.
    if (!info->run_note.empty()) st.notes().push_back(n.type + " #" + n.id + ": " + info->run_note);
    return read_latent(st, n, *info);
  }
  if (info->audio_latent) return read_audio_latent(st, n, *info);
  if (info->token_latent) return read_token_latent(st, n, *info);
  if (!info->cfg_widget.empty()) return sampler_cfg(st, n, info->cfg_widget);
  if (info->cfg_at_least) {
    st.cfg = std::max(st.cfg, *info->cfg_at_least);  // several conditionings plus uncond run batched
    return;
  }
  if (info->decode != DecodeKind::None) return decoder(st, n, *info);
  if (!info->latent_from_image.empty()) {
    // A text encoder that also makes the latent (TextEncodeQwenImage21) still reports what it leaves out.
    if (!info->run_note.empty()) st.notes().push_back(n.type + " #" + n.id + ": " + info->run_note);
    return read_image_latent(st, n, *info);
  }
  if (info->reference_image) return reference_image(st, n);
  // A latent upsampler does not set the size: a second sampler runs on its larger latent, which sets the peak.
  if (info->latent_scale > 1.0) st.latent_scale = std::max(st.latent_scale, info->latent_scale);
  if (!info->generator_input.empty()) {
    if (!info->run_note.empty()) st.notes().push_back(n.type + " #" + n.id + ": " + info->run_note);
    return read_generation(st, n, *info);
  }
  if (!info->run_note.empty()) st.notes().push_back(n.type + " #" + n.id + ": " + info->run_note);
  if (!passive(*info)) st.info.unknown_nodes.push_back({n.id, n.type, ""});
}

WorkflowInfo read_graph(const Graph& g, const ParseOptions& options) {
  ReaderState st(g, options);
  st.info.api_format = g.api_format;
  st.run = executed_nodes(g);
  for (auto& note : unfed_input_notes(g, st.run)) st.notes().push_back(std::move(note));
  // Deterministic order: node ids in the order of their spelling.
  for (const auto& id : st.run) visit(st, *g.node(id));
  assemble_job(st);
  return std::move(st.info);
}

}  // namespace

json WorkflowInfo::to_json() const {
  json loaders_json = json::array();
  for (const auto& l : loaders)
    loaders_json.push_back({{"node_id", l.node_id}, {"type", l.type}, {"role", l.role}, {"file", l.file},
                            {"model", l.model.empty() ? json(nullptr) : json(l.model)},
                            {"precision", l.precision.empty() ? json(nullptr) : json(l.precision)},
                            {"size_source", l.size_source},
                            {"file_problem", l.file_problem.empty() ? json(nullptr) : json(l.file_problem)},
                            {"file_problem_text", l.file_problem_text.empty() ? json(nullptr) : json(l.file_problem_text)}});
  json unknown = json::array();
  for (const auto& u : unknown_nodes) unknown.push_back({{"id", u.id}, {"type", u.type}});
  json unsized = json::array();
  for (const auto& u : unsized_parts) unsized.push_back({{"id", u.id}, {"type", u.type}, {"why", u.why}});
  json samplers_json = json::array();
  for (const auto& s : job.samplers) samplers_json.push_back(sampler_job_json(s));
  return {{"format", api_format ? "api" : "ui"},
          {"loaders", loaders_json},
          {"unknown_nodes", unknown},
          {"latent_node", latent_node.empty() ? json(nullptr) : json(latent_node)},
          {"size_known", size_known},
          {"size_from_unknown", size_from_unknown ? json{{"id", size_from_unknown->id}, {"type", size_from_unknown->type},
                                                         {"why", size_from_unknown->why}}
                                                  : json(nullptr)},
          {"unsized_parts", unsized},
          {"node_stages", node_stages},
          {"samplers", samplers_json},
          {"notes", job.notes}};
}

WorkflowInfo analyse_workflow(const json& wf, const std::string& source, const ParseOptions& options) {
  Graph g = build_graph(wf, source);
  link_past_virtual_nodes(g, source);
  return read_graph(g, options);
}

WorkflowInfo analyse_workflow_file(const std::string& path, const ParseOptions& options) {
  return analyse_workflow(parse_workflow_text(read_text_file(path, kMaxWorkflowBytes), path), path, options);
}

}  // namespace headroom::workflow
