#include "core/estimate/vae_retry.hpp"

#include <algorithm>

#include "core/catalog/catalog.hpp"

namespace headroom {

RetryTile3d retry_tile_3d(std::uint64_t latent_t, std::uint64_t latent_h, std::uint64_t latent_w,
                          std::uint64_t start_tile, std::uint64_t untiled_estimate, std::uint64_t card_total_bytes,
                          const std::function<std::uint64_t(std::uint64_t, std::uint64_t)>& estimate) {
  RetryTile3d r;
  r.budget = untiled_estimate;
  if (card_total_bytes)
    r.budget = std::min<std::uint64_t>(
        r.budget, static_cast<std::uint64_t>(card_total_bytes * runtime_constant("tiled_retry_budget_share")));
  r.tile_t = latent_t;
  r.tile = std::max<std::uint64_t>(1, start_tile);
  while (r.tile_t > 2 && estimate(r.tile_t, r.tile) > r.budget) r.tile_t = (r.tile_t + 1) / 2;
  while (r.tile * 2 <= std::max(latent_h, latent_w) && estimate(r.tile_t, r.tile * 2) <= r.budget) r.tile *= 2;
  return r;
}

}  // namespace headroom
