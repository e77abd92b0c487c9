#include "core/estimate/kv_cache_sampling.hpp"

#include <algorithm>

#include "core/base/error.hpp"
#include "core/base/units.hpp"

namespace headroom {
namespace {

// Only a video transformer has frames to sample one block after another.
void check_samplable(const DiffusionArch& arch) {
  if (!arch.levels.empty() || arch.audio() || arch.token_latent || arch.vae_stride[0] <= 1)
    throw InputError("sampling", "kv_cache_blocks samples a video transformer's latent frames block by block; this model "
                                 "is not a video transformer");
}

}  // namespace

std::string sampling_kind_name(SamplingKind kind) {
  return kind == SamplingKind::KvCacheBlocks ? "kv_cache_blocks" : "standard";
}

std::optional<SamplingKind> sampling_kind_of(const std::string& name) {
  if (name == "standard") return SamplingKind::Standard;
  if (name == "kv_cache_blocks") return SamplingKind::KvCacheBlocks;
  return std::nullopt;
}

KvCacheCost kv_cache_cost(const DiffusionArch& arch, const SampleGeometry& g, int batch, int block_frames, int dtype_bytes) {
  check_samplable(arch);
  if (block_frames < 1)
    throw InputError("block_frames", "expected at least 1 latent frame per block, got " + std::to_string(block_frames));
  KvCacheCost c;
  // sample_ar_video: frame_seq_len = ceil(h / 2) x ceil(w / 2) for the (1, 2, 2) patch, the cache
  // lat_t x frame_seq_len long, num_blocks = ceil(lat_t / num_frame_per_block).
  c.frame_tokens = ceil_div(g.latent_h, arch.patch[1]) * ceil_div(g.latent_w, arch.patch[2]);
  const std::uint64_t frames = ceil_div(g.latent_frames, arch.patch[0]);
  c.cached_tokens = frames * c.frame_tokens;
  const std::uint64_t bf = std::min<std::uint64_t>(static_cast<std::uint64_t>(block_frames), frames);
  c.blocks = ceil_div(frames, bf);
  c.pass_tokens = bf * c.frame_tokens;
  // init_kv_caches: per transformer block a k and a v of [batch, max_seq_len, heads, head_dim].
  const std::uint64_t width = static_cast<std::uint64_t>(arch.heads) * arch.head_dim;
  const std::uint64_t per_token = 2ull * arch.blocks * width * static_cast<std::uint64_t>(dtype_bytes) * batch;
  c.kv_cache_bytes = per_token * c.cached_tokens;
  // CausalWanAttentionBlock: crossattn_cache keeps norm_k(k(context)) and v(context), text_tokens long.
  c.cross_cache_bytes = per_token * static_cast<std::uint64_t>(arch.text_tokens);
  return c;
}

void apply_kv_cache_sampling(StageDemand& d, const ModelInfo& m, const SampleGeometry& g, const Job& job, int eff_batch,
                             double per_token) {
  const DiffusionArch& arch = *m.diffusion;
  const KvCacheCost c = kv_cache_cost(arch, g, job.batch, job.block_frames, dtype_bytes(m.compute_dtype));
  d.transient["activations"] = static_cast<std::uint64_t>(per_token * static_cast<double>(c.pass_tokens) * eff_batch);
  d.reserved["kv_cache"] = c.kv_cache_bytes;
  d.reserved["cross_attention_cache"] = c.cross_cache_bytes;
  // One pass attends a block's queries to the cache so far (on average half the clip); every schedule
  // step runs once per block, each pass streaming the weights again.
  const double n = static_cast<double>(c.pass_tokens), keys = 0.5 * static_cast<double>(c.cached_tokens + c.pass_tokens);
  d.flops_per_pass = eff_batch * (2.0 * m.params * n + 4.0 * n * keys * arch.hidden * arch.blocks);
  d.passes *= static_cast<double>(c.blocks);
  d.notes.push_back("block-autoregressive sampling: " + std::to_string(c.blocks) + " blocks of " +
                    std::to_string(c.pass_tokens / c.frame_tokens) + " latent frame(s), " + std::to_string(c.pass_tokens) +
                    " tokens per pass; the k/v cache holds all " + std::to_string(c.cached_tokens) + " tokens of " +
                    std::to_string(arch.blocks) + " blocks (" + format_bytes(c.kv_cache_bytes) +
                    ") and the cross-attention cache " + std::to_string(arch.text_tokens) + " text tokens (" +
                    format_bytes(c.cross_cache_bytes) + "); each schedule step runs once per block, plus one pass per "
                    "block that writes its clean frames to the cache");
}

}  // namespace headroom
