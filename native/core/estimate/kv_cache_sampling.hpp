#pragma once
// The sample stage of a block-autoregressive sampler (SamplingKind::KvCacheBlocks): ComfyUI's ar_video
// sampler (comfy/k_diffusion/sampling.py sample_ar_video) denoises a Causal-Wan model's latent a block of
// frames at a time. Each pass runs one block's tokens; every block's roped keys and values stay in a cache
// sized for the whole clip (comfy/ldm/wan/ar_model.py CausalWanModel.init_kv_caches), and each block's
// cross-attention keeps the text's keys and values (crossattn_cache). So the activations are one block's
// while the cache grows with the clip: the memory of a long clip is the cache, not the pass.
#include <cstdint>
#include <optional>
#include <string>

#include "core/catalog/catalog.hpp"
#include "core/estimate/job.hpp"
#include "core/estimate/memory_model.hpp"

namespace headroom {

// "standard" and "kv_cache_blocks", the names of the request field `sampling` and of comfy_nodes.json
// sampler_kinds' costs.
std::string sampling_kind_name(SamplingKind kind);
std::optional<SamplingKind> sampling_kind_of(const std::string& name);

struct KvCacheCost {
  std::uint64_t frame_tokens = 0;   // tokens of one latent frame
  std::uint64_t cached_tokens = 0;  // every latent frame's tokens: the cache holds the whole clip
  std::uint64_t blocks = 0;         // passes along the clip: ceil(latent frames / block frames)
  std::uint64_t pass_tokens = 0;    // tokens of one pass: one block
  std::uint64_t kv_cache_bytes = 0;     // k and v of every transformer block, all cached tokens
  std::uint64_t cross_cache_bytes = 0;  // k and v of the text tokens, every transformer block
};

// The caches and the pass of a job sampled block by block, in the model's compute dtype (`dtype_bytes`:
// sample_ar_video allocates the caches in inner_model.get_dtype()). Throws InputError naming
// `block_frames` or `sampling` when the job cannot be sampled so (an image, audio or UNet model).
KvCacheCost kv_cache_cost(const DiffusionArch& arch, const SampleGeometry& g, int batch, int block_frames, int dtype_bytes);

// Turns a whole-latent sample demand into the block-by-block one: one block's activations (per_token
// bytes per token, eff_batch sequences), both caches (reserved: a few large tensors allocated once), the
// work and weight streaming of one pass per block, and a note with the figures.
void apply_kv_cache_sampling(StageDemand& d, const ModelInfo& m, const SampleGeometry& g, const Job& job, int eff_batch,
                             double per_token);

}  // namespace headroom
