#pragma once
// What the workflow reader gathers while it visits the nodes that run, before the Job is assembled
// (assemble_job.hpp). Each reading unit (loaders, latents, generations) fills its part of it.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core/base/file_reader.hpp"
#include "core/workflow/image_size.hpp"
#include "core/workflow/workflow.hpp"
#include "core/workflow/workflow_models_dir.hpp"
#include "core/workflow/workflow_values.hpp"

namespace headroom::workflow {

// A text encoder loader, by node id, for the nodes that run it as a language model.
struct LoadedEncoder {
  Component component;
  std::string file;
};

struct PendingGeneration {
  std::string node, loader;  // "TextGenerate #12", the loader node id feeding it ("" = none found)
  int new_tokens = 0;
};

// The size a latent node gives, by node id, for the samplers that follow it.
struct LatentShape {
  int width = 0, height = 0, frames = 1, batch = 1;
  double seconds = 0;
  int tokens = 0;
};

struct ReaderState {
  ReaderState(const Graph& graph, const ParseOptions& options) : g(graph), opt(options) {}

  const Graph& g;
  const ParseOptions& opt;
  WorkflowInfo info;
  std::set<std::string> run;
  std::vector<Component> diffusion;       // one per diffusion loader that runs
  std::vector<std::string> diffusion_files;
  std::set<std::string> reference_sources;  // "node:slot" feeding a ReferenceLatent
  std::vector<Component> checkpoint_text_encoders;
  std::optional<Component> checkpoint_vae;
  std::optional<Component> checkpoint_clip_vision;  // ImageOnlyCheckpointLoader's CLIP_VISION output
  int latent_nodes = 0;
  double latent_scale = 1.0;  // the largest latent upsampler that runs
  bool one_pass = false;      // the job's diffusion model runs one forward pass, not a sampling loop
  long long best_pixels = -1;
  bool image_sized_latent = false;  // the latent follows an input image (inpaint, Kontext, img2img)
  std::optional<UnknownNode> image_unknown;  // the first such image whose size the workflow does not give
  std::optional<ImageSize> image_size;       // the largest such image whose size it gives
  std::string image_latent_type;
  double cfg = -1;
  std::map<std::string, LoadedEncoder> encoders_by_node;
  // By loader node id, the text encoders its CLIP object holds (a CLIP loader's files, a checkpoint's
  // bundled encoders), the ones the catalog knows: for the encoders each sampler's conditioning reads.
  std::map<std::string, std::vector<Component>> encoder_loads;
  // By node id, for tracing each sampler (sampler_jobs.hpp): what a loader loads, what a LoRA weighs,
  // what size a latent node gives.
  std::map<std::string, Component> diffusion_by_node;
  std::map<std::string, std::uint64_t> lora_bytes_by_node;
  std::map<std::string, Component> patches_by_node;  // ModelPatchLoader id -> the patch it loads
  std::map<std::string, LatentShape> latent_shapes;
  std::map<std::string, UnknownNode> latent_unknown;  // an image-sized latent whose image has no known size
  std::vector<PendingGeneration> generations;
  // --models: one walk of the folder and one answer per file and loader role, however many loaders name
  // it and however its path is spelled ("x", "./x", ".//x" are one file): keyed by the file's identity
  // and name (the name takes part in recognition), or by the whole path when it cannot be opened.
  ModelsFolderIndex models_index;
  using FactsKey = std::tuple<std::optional<FileIdentity>, std::string, std::string>;
  std::map<FactsKey, HeaderFacts> facts;

  std::vector<std::string>& notes() { return info.job.notes; }

  // Widget `widget` of `n` with every place it is stored, nullopt when it has no value.
  std::optional<WidgetRef> ref(const Node& n, const std::string& widget) const {
    WidgetRef r;
    r.node_id = n.id;
    r.widget = widget;
    auto v = resolved_value(g, n, widget, &r.where);
    if (!v) return std::nullopt;
    r.value = *v;
    return r;
  }
};

}  // namespace headroom::workflow
