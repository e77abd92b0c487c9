// widgets_values order of the node types the planner reads. The UI format stores widget values as a
// bare array in the order of the node's INPUT_TYPES widgets; the frontend inserts one extra entry
// ("control_after_generate": fixed/randomize/...) right after every seed widget and after a
// PrimitiveNode's number value. Orders checked against ComfyUI's nodes.py, comfy_extras/nodes_*.py
// (see ../shared/facts/comfyui-internals.md sections 2.4, 4.1 and 5) and the real templates in
// ../shared/real-workflows/ (INDEX.md lists the loader orders).
#include <unordered_map>

#include "core/workflow/workflow_graph.hpp"

namespace headroom::workflow {

namespace {

const std::string kControl = "";  // frontend-only entry after a seed; never an input of the node

const std::unordered_map<std::string, std::vector<std::string>>& table() {
  static const std::unordered_map<std::string, std::vector<std::string>> t = {
      // loaders
      {"UNETLoader", {"unet_name", "weight_dtype"}},
      {"HeadroomLoadDiffusionModel", {"unet_name", "weight_dtype", "width", "height", "frames", "batch", "budget"}},
      {"HeadroomPreflight", {"budget", "action"}},
      {"CheckpointLoaderSimple", {"ckpt_name"}},
      {"DualCLIPLoader", {"clip_name1", "clip_name2", "type", "device"}},
      {"TripleCLIPLoader", {"clip_name1", "clip_name2", "clip_name3"}},
      {"CLIPLoader", {"clip_name", "type", "device"}},
      {"VAELoader", {"vae_name"}},
      {"CLIPVisionLoader", {"clip_name"}},
      {"StyleModelLoader", {"style_model_name"}},
      {"LoraLoader", {"lora_name", "strength_model", "strength_clip"}},
      {"LoraLoaderModelOnly", {"lora_name", "strength_model"}},
      // city96/ComfyUI-GGUF loaders
      {"UnetLoaderGGUF", {"unet_name"}},
      {"UnetLoaderGGUFAdvanced", {"unet_name", "dequant_dtype", "patch_dtype", "patch_on_device"}},
      {"CLIPLoaderGGUF", {"clip_name", "type"}},
      {"DualCLIPLoaderGGUF", {"clip_name1", "clip_name2", "type"}},
      {"TripleCLIPLoaderGGUF", {"clip_name1", "clip_name2", "clip_name3"}},
      // latents
      {"EmptyLatentImage", {"width", "height", "batch_size"}},
      {"EmptySD3LatentImage", {"width", "height", "batch_size"}},
      {"EmptyHunyuanLatentVideo", {"width", "height", "length", "batch_size"}},
      {"EmptyMochiLatentVideo", {"width", "height", "length", "batch_size"}},
      {"EmptyLTXVLatentVideo", {"width", "height", "length", "batch_size"}},
      {"EmptyCosmosLatentVideo", {"width", "height", "length", "batch_size"}},
      {"WanImageToVideo", {"width", "height", "length", "batch_size"}},
      {"Wan22ImageToVideoLatent", {"width", "height", "length", "batch_size"}},
      {"WanFirstLastFrameToVideo", {"width", "height", "length", "batch_size"}},
      {"WanFunControlToVideo", {"width", "height", "length", "batch_size"}},
      {"Wan22FunControlToVideo", {"width", "height", "length", "batch_size"}},
      {"WanFunInpaintToVideo", {"width", "height", "length", "batch_size"}},
      {"WanCameraImageToVideo", {"width", "height", "length", "batch_size"}},
      {"WanPhantomSubjectToVideo", {"width", "height", "length", "batch_size"}},
      {"WanVaceToVideo", {"width", "height", "length", "batch_size", "strength"}},
      {"InpaintModelConditioning", {"noise_mask"}},
      // samplers and guiders
      {"KSampler", {"seed", kControl, "steps", "cfg", "sampler_name", "scheduler", "denoise"}},
      {"KSamplerAdvanced", {"add_noise", "noise_seed", kControl, "steps", "cfg", "sampler_name", "scheduler",
                            "start_at_step", "end_at_step", "return_with_leftover_noise"}},
      {"SamplerCustom", {"add_noise", "noise_seed", kControl, "cfg"}},
      {"CFGGuider", {"cfg"}},
      {"DualCFGGuider", {"cfg_conds", "cfg_cond2_negative"}},
      // decoders
      {"VAEDecodeTiled", {"tile_size", "overlap", "temporal_size", "temporal_overlap"}},
      {"HeadroomVAEDecode", {"mode", "budget"}},
      // a PrimitiveNode holds the value of the widget it feeds (plus a control entry for numbers)
      {"PrimitiveNode", {"value", kControl}},
  };
  return t;
}

}  // namespace

const std::vector<std::string>* widget_names(const std::string& type) {
  auto it = table().find(type);
  return it == table().end() ? nullptr : &it->second;
}

}  // namespace headroom::workflow
