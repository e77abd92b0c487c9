// The tile search for ComfyUI's tiled decode (decode_tile.hpp): one request, every candidate priced here.
#include "core/estimate/decode_tile.hpp"

#include <algorithm>

#include "core/base/error.hpp"
#include "core/catalog/catalog.hpp"
#include "core/estimate/estimator.hpp"
#include "core/estimate/job_models.hpp"

namespace headroom {
namespace {

// The estimator's smallest and largest image edge (estimate's width/height fields) and ComfyUI's
// smallest tile_size of VAEDecodeTiled (nodes.py: min 64 px), below which the estimator refuses a tile.
constexpr int kMinEdgePx = 16;
constexpr int kMaxEdgePx = 16384;
constexpr int kMinTilePx = 64;
constexpr int kMaxFrames = 10001;  // the estimator's longest clip (estimate's frames field)

// The overlap ComfyUI gives its own tiles: a quarter of the tile (comfy/sd.py VAE.decode's OOM retry,
// overlap = tile // 4), and at least 4 latent px for images, 2 for video: the least the pack's fallback
// used before the core chose its tiles, kept so that no decode's seams change with the move.
int overlap_for(int tile_latent, bool video, bool over_budget) {
  // Over the budget even at the smallest tile: the narrowest seam, the least extra area per tile.
  const int least = over_budget || video ? 2 : 4;
  return std::max(least, tile_latent / 4);
}

// The candidates worth pricing for a latent whose longest edge is `edge`: past the latent's own edge a
// bigger tile changes nothing (decode_tiled clips each tile to the latent), so the search starts at the
// first candidate covering the latent and keeps only the smaller ones after it.
std::vector<int> useful_candidates(int edge) {
  const std::vector<int>& all = decode_tile_candidates();
  int first = all.front();
  for (int t : all)
    if (t >= edge) first = t;  // the list falls, so the last one at or past the edge is the smallest
  std::vector<int> out{first};
  for (int t : all)
    if (t < edge && t < first) out.push_back(t);
  return out;
}

void check_size(const std::string& field, int latent_px, int upscale) {
  const long long px = static_cast<long long>(latent_px) * upscale;
  if (px < kMinEdgePx || px > kMaxEdgePx)
    throw InputError(field, field + " " + std::to_string(latent_px) + " x spatial_upscale " + std::to_string(upscale) +
                                " = " + std::to_string(px) + " px of output; expected " + std::to_string(kMinEdgePx) +
                                " to " + std::to_string(kMaxEdgePx) + " px (the estimator's image sizes)");
}

}  // namespace

const std::vector<int>& decode_tile_candidates() {
  // Latent px, largest first. At most 256 (2048 px at 8x): this decode runs because a whole one ran out
  // of memory, and a larger tile is close to that whole decode again. At least 8 (64 px at 8x,
  // VAEDecodeTiled's smallest tile_size). Between them steps of 3/4 and 2/3 of the edge, about half the
  // tile's area each, so that ten estimates at most find the largest tile that fits.
  static const std::vector<int> candidates = {256, 192, 128, 96, 64, 48, 32, 24, 16, 8};
  return candidates;
}

DecodeTile plan_decode_tile(const DecodeTileRequest& r, const Runtime& runtime) {
  const ModelInfo& vae = resolve_model(r.vae, "model");
  if (vae.role != Role::Vae || !vae.vae)
    throw InputError("model", "expected a VAE (the model recognise names for the decode's VAE), got " + vae.name +
                                  ", a " + role_name(vae.role));
  if (vae.vae->audio())
    throw InputError("model", vae.name + " is an audio VAE: its decode has no image tiles to choose");
  const int upscale = r.spatial_upscale > 0 ? r.spatial_upscale : vae.vae->spatial_stride();
  check_size("latent_width", r.latent_width, upscale);
  check_size("latent_height", r.latent_height, upscale);
  const bool video = vae.vae->video();

  Job job = default_job(vae.name);
  resolve_models(job);
  job.width = r.latent_width * upscale;
  job.height = r.latent_height * upscale;
  job.frames = video ? (r.latent_frames - 1) * vae.vae->temporal_stride() + 1 : 1;
  if (job.frames > kMaxFrames)
    throw InputError("latent_frames", std::to_string(r.latent_frames) + " latent frames are " + std::to_string(job.frames) +
                                          " video frames at " + vae.name + "'s temporal stride; expected at most " +
                                          std::to_string(kMaxFrames));
  job.batch = r.batch;
  job.decode_mode = DecodeMode::Tiled;

  DecodeTile out;
  out.vae = vae.name;
  for (int tile : useful_candidates(std::max(r.latent_width, r.latent_height))) {
    job.decode_tile_px = std::max(kMinTilePx, tile * upscale);
    const std::uint64_t peak = estimate(job, runtime).peak_bytes;
    out.priced.push_back({tile, job.decode_tile_px, peak});
    if (!r.budget_bytes || peak <= *r.budget_bytes) break;
  }
  const PricedTile& chosen = out.priced.back();
  out.tile_latent = chosen.tile_latent;
  out.tile_px = chosen.tile_px;
  out.peak_bytes = chosen.peak_bytes;
  out.over_budget = r.budget_bytes && chosen.peak_bytes > *r.budget_bytes;
  out.overlap_latent = overlap_for(chosen.tile_latent, video, out.over_budget);
  return out;
}

}  // namespace headroom
