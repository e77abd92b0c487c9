#pragma once
// The tile for ComfyUI's own tiled decode (VAE.decode_tiled) inside a budget: what VAE Decode (Headroom)
// runs when its native decoder does not load. Each candidate is priced by the estimator's model of
// ComfyUI's tiled decode (memory_model.cpp tiled_decode, the one the planner's "decode in tiles" change
// prices); Headroom's own decoders plan their tiles in decode_plan.hpp, a different memory model.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace headroom {

struct Runtime;  // core/estimate/estimator.hpp

struct DecodeTileRequest {
  std::string vae;                // catalog name, alias or file name of a VAE (recognise's model)
  int latent_width = 0;           // the latent's own size, in latent px
  int latent_height = 0;
  int latent_frames = 1;          // video: the latent's T; images: 1
  int batch = 1;
  int spatial_upscale = 0;        // output px per latent px; 0 = the VAE's spatial stride (models.json)
  std::optional<std::uint64_t> budget_bytes;  // none: no budget, the largest useful tile
};

struct PricedTile {
  int tile_latent = 0;            // tile edge in latent px, as decode_tiled takes it
  int tile_px = 0;                // the same in output px, as the estimator (VAEDecodeTiled) takes it
  std::uint64_t peak_bytes = 0;   // the decode stage's estimated peak at this tile
};

struct DecodeTile {
  std::string vae;                // the catalog name
  int tile_latent = 0;
  int overlap_latent = 0;
  int tile_px = 0;
  std::uint64_t peak_bytes = 0;
  bool over_budget = false;       // even the smallest candidate's peak is above the budget
  std::vector<PricedTile> priced; // every candidate priced, in the order tried (largest first)
};

// Tile edges tried, in latent px, largest first (decode_tile.cpp says why these).
const std::vector<int>& decode_tile_candidates();

// The largest candidate whose peak fits; the smallest, flagged over_budget, when none does. Each is priced
// as estimate() prices the VAE alone under `runtime` (no card: the peak, not a verdict). Throws InputError
// naming the field for a model that is not an image or video VAE, or a size the estimator refuses.
DecodeTile plan_decode_tile(const DecodeTileRequest& request, const Runtime& runtime);

}  // namespace headroom
