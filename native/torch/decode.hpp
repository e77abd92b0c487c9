#pragma once
// Entry point of the native VAE decoders: the core's recogniser names the family from the state dict's
// keys (KL, FLUX.2, Wan 2.1/2.2: comfy_nodes.json vae_key_rules) and decode() runs that decoder in the
// requested mode.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include <torch/torch.h>

namespace headroom::torch_ops {

using StateDict = std::map<std::string, torch::Tensor>;

struct DecodeOptions {
  std::string mode = "auto";                  // full | exact | fast | blend | auto
  int tile_px = 0;                            // tile edge in output pixels; 0 = largest that fits
  std::optional<std::uint64_t> budget_bytes;  // none: free VRAM on CUDA (ComfyUI's definition), no limit on CPU
  std::optional<torch::Device> device;        // none: the latent's device
  std::optional<torch::ScalarType> dtype;     // none: the weights' dtype (fp32, bf16, fp16)
  std::function<void(int done, int total)> progress;  // called after each tile / latent frame
  std::function<bool()> cancelled;                     // polled between tiles; true aborts with Cancelled
};

// Thrown when `cancelled` returned true.
struct Cancelled : std::runtime_error {
  Cancelled() : std::runtime_error("decode cancelled") {}
};

// What decode() chose and measured; filled when `info` is given.
struct DecodeInfo {
  std::string family;      // "kl", "flux2", "wan2.1", "wan2.2"
  std::string mode;        // the mode that ran
  int tile_latent = 0;     // FLUX.2: pixels of the unpatchified 32-channel latent (1/8 of the image)
  int halo_latent = 0;
  int tiles = 1;
  std::uint64_t planned_peak_bytes = 0;
  std::uint64_t full_peak_bytes = 0;  // what a full decode would need (plan)
  std::uint64_t budget_bytes = 0;     // the budget the plan used (0 = none)
  bool park_on_cpu = false;           // exact: activations parked in CPU memory between layers
  std::uint64_t parked_bytes_peak = 0;  // exact: largest set of whole-image activations held between layers
};

// latent: [B, C, h, w] for KL VAEs ([B, 128, H/16, W/16] for FLUX.2's), [B, C, T, h, w] for Wan VAEs.
// Returns ComfyUI's IMAGE: float32 [B, H, W, 3] (video: [B*frames, H, W, 3]) on the CPU, in [0, 1].
// Throws headroom::InputError naming the field for bad inputs (missing keys, wrong channels, NaN...).
torch::Tensor decode(const StateDict& state_dict, const torch::Tensor& latent, const DecodeOptions& options,
                     DecodeInfo* info = nullptr);

// "kl", "flux2", "wan2.1" or "wan2.2" from the keys, as the core's recogniser decides
// (headroom::vae_decoder_family, core/inspect/recognise.hpp); throws InputError("vae", ...) otherwise.
std::string detect_vae_family(const StateDict& state_dict);

}  // namespace headroom::torch_ops
