#pragma once
// The tile ComfyUI's automatic retry picks after the untiled 3-D (video) VAE decode ran out of memory
// (Comfy-Org/ComfyUI comfy/sd.py@033046cc VAE.decode, the dims == 3 branch of a VAE without its own
// tiling): it budgets min(its untiled estimate, 0.8 x the card), halves the temporal tile until one
// tile fits that budget by its own estimate, then doubles the spatial tile while it still fits.
#include <cstdint>
#include <functional>

namespace headroom {

struct RetryTile3d {
  std::uint64_t tile_t = 0;  // latent frames per tile
  std::uint64_t tile = 0;    // latent px per tile edge
  std::uint64_t budget = 0;  // what ComfyUI reserves for the retry
};

// `estimate(tile_t, tile)` is ComfyUI's memory_used_decode for the latent clamped to one tile;
// `start_tile` is 256 px over the VAE's spatial compression; `card_total_bytes` 0 = no card (the
// untiled estimate alone is the budget).
RetryTile3d retry_tile_3d(std::uint64_t latent_t, std::uint64_t latent_h, std::uint64_t latent_w,
                          std::uint64_t start_tile, std::uint64_t untiled_estimate, std::uint64_t card_total_bytes,
                          const std::function<std::uint64_t(std::uint64_t, std::uint64_t)>& estimate);

}  // namespace headroom
