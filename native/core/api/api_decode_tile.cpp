// api::decode_tile: the tile for ComfyUI's tiled decode inside a budget, in one request (issue 25: the
// fallback of VAE Decode (Headroom) once priced each candidate tile with its own estimate call).
#include "core/api/api.hpp"
#include "core/api/runtime_fields.hpp"
#include "core/base/request_fields.hpp"
#include "core/base/units.hpp"
#include "core/estimate/decode_tile.hpp"

namespace headroom::api {

const request::Fields& decode_tile_fields() {
  using request::Kind;
  static const request::Fields f = {
      {"model", Kind::String, "the VAE: catalog name, alias or file name (recognise's model)", 0, 0, {}, true, "model"},
      {"latent_width", Kind::Int, "the latent's width in latent px (its shape's last dimension)", 1, 16384, {}, true, "latent-width"},
      {"latent_height", Kind::Int, "the latent's height in latent px", 1, 16384, {}, true, "latent-height"},
      {"latent_frames", Kind::Int, "video: the latent's frames (T); images: 1", 1, 2501, {}, false, "latent-frames"},
      {"batch", Kind::Int, "latents decoded at once", 1, 1024, {}, false, "batch"},
      {"spatial_upscale", Kind::Int, "output px per latent px (default: the VAE's spatial stride)", 1, 64, {}, false,
       "spatial-upscale"},
      {"budget_bytes", Kind::Bytes, "device memory the decode may use; absent = no budget", 0,
       static_cast<double>(1ull << 50), {}, false, "budget", MiB},
  };
  return f;
}

json decode_tile(const json& body) {
  const request::Request request(body, "decode_tile", decode_tile_fields());
  DecodeTileRequest r;
  r.vae = request.text("model");
  r.latent_width = static_cast<int>(request.integer("latent_width"));
  r.latent_height = static_cast<int>(request.integer("latent_height"));
  r.latent_frames = static_cast<int>(request.integer_or("latent_frames", 1));
  r.batch = static_cast<int>(request.integer_or("batch", 1));
  r.spatial_upscale = static_cast<int>(request.integer_or("spatial_upscale", 0));
  r.budget_bytes = request.bytes_if("budget_bytes");
  const DecodeTile t = plan_decode_tile(r, runtime_defaults());  // as estimate answers a request that names no runtime
  json priced = json::array();
  for (const PricedTile& p : t.priced)
    priced.push_back({{"tile_latent", p.tile_latent}, {"tile_px", p.tile_px}, {"peak_bytes", p.peak_bytes}});
  return {{"model", t.vae},
          {"tile_latent", t.tile_latent},
          {"overlap_latent", t.overlap_latent},
          {"tile_px", t.tile_px},
          {"peak_bytes", t.peak_bytes},
          {"budget_bytes", r.budget_bytes ? json(*r.budget_bytes) : json(nullptr)},
          {"over_budget", t.over_budget},
          {"priced", priced},
          {"candidates_latent", decode_tile_candidates()}};
}

}  // namespace headroom::api
