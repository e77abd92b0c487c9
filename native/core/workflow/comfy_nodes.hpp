#pragma once
// What Headroom knows about ComfyUI node types (native/data/comfy_nodes.json), read once into typed
// structs: widget order, what a loader loads and from which models subfolders, where a latent node
// takes its size, which widget holds the CFG scale, how a decoder decodes.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/estimate/job.hpp"
#include "core/workflow/image_rules.hpp"
#include "core/workflow/resolution_rule.hpp"

namespace headroom::workflow {

struct LoaderRole {
  std::vector<std::string> folders;  // ComfyUI folder_paths names, legacy aliases after
  // Widgets naming the files: the first alternative whose first widget is an input of the node is
  // used, else the last (CLIPLoader's clip_name vs DualCLIPLoader's clip_name1/2).
  std::vector<std::vector<std::string>> file_widgets;
};

struct LatentSize {  // widget (or input) names
  std::string width, height, batch;  // batch "": always one (WanInfiniteTalkToVideo)
  std::string length;  // "" for image latents
  // A layered latent (EmptyQwenImageLayeredLatentImage): the widget counting the layers; the latent holds
  // them and the composite image, layers + 1 frames of one image each. "" for other latents.
  std::string layers;
};

// An audio latent node (EmptyLatentAudio, EmptyAceStepLatentAudio): widget names of the clip's length
// in seconds and of the batch. The model's arch.audio turns seconds into latent positions.
struct AudioLatentSize {
  std::string seconds, batch;
};

// A token latent node (EmptyLatentHunyuan3Dv2): widget names of the number of shape tokens and of the
// batch. A model with arch.token_latent samples one sequence position per token.
struct TokenLatentSize {
  std::string tokens, batch;
};

enum class DecodeKind { None, Full, Tiled, Headroom };

struct ComfyNode {
  std::string type;
  std::string source;
  std::optional<std::vector<std::string>> widgets;  // widgets_values order; "" = frontend-only entry
  std::string loads;                                // loader role ("" = not a loader)
  std::optional<LatentSize> latent;
  std::optional<AudioLatentSize> audio_latent;
  std::optional<TokenLatentSize> token_latent;
  std::string latent_note;                          // caveat reported when the node sets the size
  std::string latent_from_image;                    // note text after "<type> #<id>": size follows an image
  // The image a latent_from_image node encodes (its input name), and how image sizes travel to it: a
  // node that sets an image's size (image_size), one that keeps its input's (image_through, the input),
  // or why a node's output size is not known (image_size_unknown: a loaded image).
  std::string image_input, image_through, image_size_unknown;
  std::string image_file;  // a node loading an image file of ComfyUI's input folder: the widget naming it
  SizeRules image;                         // how the node sets its output image's size (none: it does not)
  std::optional<ImageModes> image_modes;   // or per mode of a mode widget, each with its widgets_values order
  std::string upscale_model_file;          // an upscale model loader: the widget naming its file (the factor's source)
  // Outputs 0 and 1 are a width and a height computed from an aspect choice and a pixel count (ResolutionSelector).
  std::optional<ResolutionRule> resolution;
  bool reference_image = false;                     // adds one reference image (Kontext ReferenceLatent)
  std::string cfg_widget;                           // a sampler or guider
  std::optional<double> cfg_at_least;               // a guider that batches this many conditionings
  DecodeKind decode = DecodeKind::None;
  std::string tile_widget, mode_widget;
  bool output = false, neutral = false, is_virtual = false;
  // The input a virtual node hands on unchanged (a Reroute's one input, named ""): the frontend removes the
  // node before queueing, so a link to it is a link to what feeds that input. None: it passes nothing on.
  std::optional<std::string> passes;
  // A checkpoint loader that also outputs the checkpoint's CLIP vision model (ImageOnlyCheckpointLoader):
  // the diffusion model's companion clip_vision joins the job. Only the checkpoint reader asks for it.
  bool clip_vision_output = false;
  // A checkpoint loader's output slot of its CLIP (ComfyUI's CheckpointLoaderSimple: MODEL, CLIP, VAE): the
  // text encoders it bundles are read by a prompt only through it. None: no CLIP output.
  std::optional<int> clip_output;
  // The latent it hands on has its latent input's sides and batch, and this widget's frames
  // (WanSoundImageToVideoExtend: a new clip of `length` frames after the video so far). "" = none.
  std::string latent_frames;
  // A node joining two latents (LatentConcat): along the frame axis (its `widget` one of `values`) the result
  // keeps `input`'s sides and batch, and the frames are the sum. A latent_frames node after it reads only the sides.
  struct FramesConcat {
    std::string input, widget;
    std::vector<std::string> values;
  };
  std::optional<FramesConcat> frames_concat;
  // A node whose outputs pass widget values on (PrimitiveInt's value, WanCameraEmbedding's width,
  // height and length): output slot -> the widget it passes ("" = not a value).
  std::vector<std::string> value_outputs;
  // Outputs known only when the workflow runs (GetImageSize measures an input image): a size that
  // comes from one is the receiving node's own stored value, reported as assumed.
  bool size_from_image = false;
  // ComfySwitchNode: only the input the switch widget selects runs.
  std::string switch_widget, on_true, on_false;
  std::string run_note;  // reported when the node runs (what Headroom does not count)
  double latent_scale = 0;  // > 1: the node enlarges the latent's sides by this factor (LTX's latent upsampler)
  // A node that runs a loaded text encoder as a language model (TextGenerate): the input carrying the
  // encoder and the widget giving how many tokens it may write.
  std::string generator_input, new_tokens_widget;
  // Tokens written per unit of that widget: 1 for a token count (TextGenerate's max_length), 25 for a
  // duration in seconds of 25 Hz audio frames (MiniMaxMusic3TextEncode's max_duration).
  double new_tokens_per_unit = 1;
  // A node that makes a SAMPLER (SamplerARVideo): the sampler_kinds entry of the sampler it makes, how that
  // sampler steps the latent, and the widget giving its latent frames per block ("" = one per block).
  std::string sampler;
  std::optional<SamplingKind> sampling;
  std::string block_frames_widget;
  // The estimator's stage whose memory this node uses when it runs ("" = none of them): the run recorder
  // files a measured node under the stage the estimate predicted for it.
  std::string stage;
};

// Where a getter of a named pass-through looks for the setter of its name: its own graph only (Easy-Use), or
// its own graph first and then the graphs its subgraph sits in (KJNodes: a Set in the top graph serves a
// Get inside a subgraph; a Set inside a subgraph is not seen from outside).
enum class NamedScope { Graph, GraphThenParents };

// A pair of frontend-only nodes that carry a link by name (KJNodes' SetNode/GetNode): the setter's one input
// feeds every getter whose `name_widget` holds the same name, and the setter's own output, if linked. The
// frontend resolves them when it queues, so they never reach an API prompt.
struct NamedPassThrough {
  std::string source, setter, getter, name_widget;
  NamedScope scope = NamedScope::Graph;
};

struct ComfyNodes {
  std::map<std::string, ComfyNode> nodes;
  std::vector<NamedPassThrough> named_pass_throughs;
  std::map<std::string, LoaderRole> loader_roles;
  std::map<std::string, std::string> weight_dtypes;  // UNETLoader weight_dtype -> canonical precision
  std::vector<std::string> sampled_latent_inputs;    // a sampler's input carrying the latent it denoises
  // The inputs a known node takes the latent it hands on from (its size kept, or scaled by latent_scale),
  // and the model it patches and hands on: a sampler's latent and model are traced back through them.
  std::vector<std::string> latent_through_inputs, model_through_inputs;
  // ComfyUI sampler names (comfy/samplers.py KSAMPLER_NAMES) whose cost is not the standard one, by the cost kind.
  std::map<std::string, SamplingKind> sampler_kinds;
  const ComfyNode* find(const std::string& type) const;
  // The named pass-through whose setter (or getter) is node type `type`; nullptr for any other type.
  const NamedPassThrough* setter_rule(const std::string& type) const;
  const NamedPassThrough* getter_rule(const std::string& type) const;

 private:
  const NamedPassThrough* rule_with(std::string NamedPassThrough::*side, const std::string& type) const;
};

// Throws Error naming `file`, the node type (or section) and the key on a missing or mistyped field.
ComfyNodes load_comfy_nodes(const nlohmann::json& data, const std::string& file);
const ComfyNodes& comfy_nodes();  // native/data/comfy_nodes.json, loaded once

}  // namespace headroom::workflow
