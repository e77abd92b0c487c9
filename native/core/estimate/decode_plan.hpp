#pragma once
// Memory plan of Headroom's native VAE decoders: full or tiled, which tile, what peak.
// Pure C++ so the estimator, the CLI and the LibTorch decoders share one model of it.
#include <cstdint>
#include <string>
#include <vector>

namespace headroom {

struct VaeArch;  // core/catalog/model_arch.hpp

// The decode modes. DecodeRequest::mode and DecodePlan::mode carry their names, the form in which
// they cross to the torch decoders and Python; the planners parse the name once.
enum class DecodeTiling { Auto, Full, Exact, Fast, Blend };
const char* decode_tiling_name(DecodeTiling tiling);  // "auto", "full", "exact", "fast", "blend"
// The mode called `name`; throws InputError(field) naming the modes for any other word.
DecodeTiling decode_tiling_from_name(const std::string& name, const std::string& field);

struct DecodeRequest {
  std::string family;            // the decoder kind: decoder_kind_name() of DecoderKind ("kl", "wan2.1", "wan2.2")
  // The VAE's figures (models.json arch: widths, blocks, strides); nullptr = those of the first
  // catalog VAE with this decoder kind. The fields below, when set, override them.
  const VaeArch* arch = nullptr;
  int latent_channels = 16;
  int batch = 1;
  int latent_frames = 1;         // video: latent T; images: 1
  int latent_height = 128;
  int latent_width = 128;
  int base_channels = 0;         // KL: width of the first level; Wan: base width; 0 = arch's
  int dtype_bytes = 2;           // activations: 4 fp32, 2 bf16/fp16
  std::string mode = "auto";     // full | exact | fast | blend | auto
  int tile_px = 0;               // requested tile edge in output pixels; 0 = largest that fits
  std::uint64_t budget_bytes = 0;  // 0 = no limit
  // KL only, from the loaded weights: width of each level (decoder.up.N), empty = arch's channels
  // (scaled to base_channels when that is set); blocks per level, 0 = arch's res_blocks.
  std::vector<int> level_widths;
  int blocks_per_level = 0;
};

struct DecodePlan {
  std::string mode;              // the mode that will run (auto resolves to full or exact): decode_tiling_name
  DecodeTiling tiling() const { return decode_tiling_from_name(mode, "mode"); }
  int tile_latent = 0;           // tile edge in latent pixels (0 for full)
  int halo_latent = 0;           // extra latent pixels decoded on each side of a tile
  int tiles = 1;                 // number of tiles per image
  bool park_on_cpu = false;      // activations parked in CPU memory between norm layers
  std::uint64_t peak_bytes = 0;  // predicted device memory at the decode's peak (reserved)
  std::uint64_t full_peak_bytes = 0;  // what a full decode would need
  std::uint64_t weights_bytes = 0;    // KL: decoder weights in the activation dtype (part of both peaks)
};

// Bytes the Wan decoders allow the mid-block attention scores of one query chunk (scores and their
// softmax together). A design choice that bounds the attention at any frame size; the plan counts it.
constexpr std::uint64_t kWanAttentionScratchBytes = 64ull << 20;

// Throws InputError when no plan fits the budget (naming budget and the smallest that works).
DecodePlan plan_decode(const DecodeRequest& request);

// The Wan part of plan_decode (decode_plan_wan.cpp); plan_decode dispatches to it.
DecodePlan plan_decode_wan(const DecodeRequest& request);

// The figures a request plans with: request.arch, else the catalog's VAE of its decoder kind.
// Throws InputError("family") for an unknown kind or one no catalog VAE has.
const VaeArch& decode_arch(const DecodeRequest& request);

}  // namespace headroom
