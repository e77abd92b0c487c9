#pragma once
// The Flux fill workflow (API format) the image-size tests put an image node into: node 10 is the image the
// conditioning node encodes, and the tests add what feeds it.
#include <string>

#include <nlohmann/json.hpp>

// A Flux fill workflow whose InpaintModelConditioning (or `conditioning`) encodes the image of node 10.
inline nlohmann::json flux_fill_workflow(const nlohmann::json& image_node, const std::string& conditioning) {
  using nlohmann::json;
  json wf = json::parse(R"({
    "1": {"class_type": "UNETLoader", "inputs": {"unet_name": "flux1-fill-dev.safetensors", "weight_dtype": "default"}},
    "2": {"class_type": "DualCLIPLoader", "inputs": {"clip_name1": "t5xxl_fp16.safetensors", "clip_name2": "clip_l.safetensors", "type": "flux"}},
    "3": {"class_type": "VAELoader", "inputs": {"vae_name": "ae.safetensors"}},
    "4": {"class_type": "CLIPTextEncode", "inputs": {"text": "a", "clip": ["2", 0]}},
    "6": {"class_type": "KSampler", "inputs": {"model": ["1", 0], "positive": ["5", 0], "negative": ["5", 1],
          "latent_image": ["5", 2], "seed": 1, "steps": 20, "cfg": 1, "sampler_name": "euler", "scheduler": "simple", "denoise": 1}},
    "7": {"class_type": "VAEDecode", "inputs": {"samples": ["6", 0], "vae": ["3", 0]}},
    "8": {"class_type": "SaveImage", "inputs": {"images": ["7", 0], "filename_prefix": "x"}}
  })");
  wf["5"] = {{"class_type", conditioning}, {"inputs", {{"positive", json::array({"4", 0})}, {"negative", json::array({"4", 0})},
                                                       {"vae", json::array({"3", 0})}, {"pixels", json::array({"10", 0})}}}};
  if (conditioning == "InpaintModelConditioning") wf["5"]["inputs"]["noise_mask"] = true;
  wf["10"] = image_node;
  return wf;
}

