#pragma once
// A ComfyUI workflow (UI or API format) -> the Job it will run, plus where each knob lives in the
// workflow so a preset can rewrite it. Only nodes that will execute count: bypassed (mode 4) and
// muted (mode 2) nodes and nodes that feed no output are ignored.
#include <optional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/estimate/job.hpp"
#include "core/workflow/workflow_graph.hpp"

namespace headroom::workflow {

// One widget value in the source workflow; `where` lists every copy (a PrimitiveNode and its target,
// a subgraph instance's promoted widget and the inner node).
struct WidgetRef {
  std::string node_id;
  std::string widget;
  json value;
  std::vector<Pointer> where;
};

struct Loader {
  std::string node_id;
  std::string type;
  std::string role;   // diffusion, checkpoint, text_encoder, vae, clip_vision, lora, style_model, audio_encoder, model_patch
  std::string file;
  std::string model;  // canonical catalog name, "" when not recognised
  std::string precision;
  // Where the size counted for the file comes from: "header" (read from the file), "file_name" (guessed
  // from its name: not looked up, not found, or a header that could not be used), "unknown" (neither).
  std::string size_source = "unknown";
  // "" or what is wrong with the file found on disk: "empty", "truncated", "bad_header", "unreadable";
  // `file_problem_text` says it in a sentence naming the node and the file.
  std::string file_problem;
  std::string file_problem_text;
  // A 0-byte or truncated file: what ComfyUI would load is not what the figures count, so no verdict
  // may rest on it.
  bool broken() const { return file_problem == "empty" || file_problem == "truncated"; }
};

struct Decoder {
  std::string node_id;
  std::string type;   // VAEDecode, VAEDecodeTiled, HeadroomVAEDecode
  Pointer where;      // the node object (a plain VAEDecode is switched to VAEDecodeTiled by presets)
  std::optional<WidgetRef> tile_size;  // VAEDecodeTiled
  std::optional<WidgetRef> mode;       // HeadroomVAEDecode
};

struct UnknownNode {
  std::string id;
  std::string type;
  std::string why;  // for the node a size follows: why its size is not known ("a node Headroom does not know")
};

struct WorkflowInfo {
  Job job;
  bool api_format = false;
  std::vector<Loader> loaders;
  std::vector<UnknownNode> unknown_nodes;
  // Loaders of a part the estimate counts (an audio encoder, a model patch) whose file Headroom cannot size:
  // no verdict rests on a peak that leaves them out.
  std::vector<UnknownNode> unsized_parts;
  std::string latent_node;     // type of the node that sets the output size ("" when unknown)
  bool size_known = false;     // false: no latent node or image size the workflow gives sets the size
  // The node the sampled latent's size follows when that size is not known (a node Headroom does not
  // know, a loaded image): no verdict may rest on the assumed size.
  std::optional<UnknownNode> size_from_unknown;
  bool is_video = false;
  // Knobs a preset may rewrite.
  std::vector<WidgetRef> weight_dtype;   // UNETLoader / HeadroomLoadDiffusionModel
  std::vector<WidgetRef> width, height, length, batch;
  std::vector<WidgetRef> text_encoder_device;  // CLIPLoader / DualCLIPLoader "device"
  std::vector<Decoder> decoders;
  // Node id -> the estimator stage it runs (comfy_nodes.json "stage"), for the nodes that run one.
  std::map<std::string, std::string> node_stages;

  json to_json() const;  // {format, loaders, unknown_nodes, latent_node, size_known, node_stages, notes}
};

struct ParseOptions {
  // ComfyUI's folder lists (folder_paths, extra_model_paths.yaml included), asked first: folder name ->
  // its directories. Then models_dir. Either one makes the files' headers count (api::inspect).
  std::map<std::string, std::vector<std::string>> model_folders;
  std::string models_dir;  // look the named files up here and read their headers (api::inspect)
  std::string input_dir;   // ComfyUI's input folder: the size of the images LoadImage loads, from their headers
  bool reads_files() const { return !model_folders.empty() || !models_dir.empty(); }
};

// Throws FileFormatError(source) on a document that is not a workflow; never on unknown nodes.
WorkflowInfo analyse_workflow(const json& workflow, const std::string& source, const ParseOptions& options = {});

// Reads and analyses a workflow file.
WorkflowInfo analyse_workflow_file(const std::string& path, const ParseOptions& options = {});

}  // namespace headroom::workflow
