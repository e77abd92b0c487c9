// One function per change kind (see changes.hpp). Every candidate is priced by the estimator.
#include "core/plan/changes.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>

#include "core/base/data_files.hpp"
#include "core/base/error.hpp"
#include "core/base/load_once.hpp"

namespace headroom {
namespace {

using namespace plan_search;

std::optional<ChangeOutcome> decode_tiled(const ChangeContext& c) {
  if (c.job.decode_mode != DecodeMode::Full) return std::nullopt;
  std::vector<Job> candidates;
  for (int t : c.search.tile_sizes_px) {
    Job j = c.job;
    j.decode_mode = DecodeMode::Tiled;
    j.decode_tile_px = t;
    candidates.push_back(j);
  }
  auto r = first_fitting(candidates, c.runtime);
  if (!r) return std::nullopt;
  const std::string tile = std::to_string(r->job.decode_tile_px);
  return ChangeOutcome{std::move(*r), "decode in " + tile + " px tiles: VAE Decode (Headroom) (seamless) or "
                                      "VAE Decode (Tiled) with tile_size " + tile};
}

// Text encoders with a usual fp8 release (models.json fp8_file) that load at 16 bits or more.
std::optional<ChangeOutcome> text_encoder_fp8(const ChangeContext& c) {
  if (c.job.text_encoder_on_cpu) return std::nullopt;
  Job j = c.job;
  const ModelInfo* first = nullptr;
  for (auto& te : j.text_encoders) {
    const ModelInfo* m = find_model_of(te);
    if (m && !m->fp8_file.empty() && bits_of(te) >= 16) {
      te.precision = c.spec.precision;
      te.weight_bytes.reset();
      if (!first) first = m;
    }
  }
  if (!first) return std::nullopt;
  auto r = first_fitting({j}, c.runtime);
  if (!r) return std::nullopt;
  return ChangeOutcome{std::move(*r), "load " + first->name + " as fp8 (e.g. " + first->fp8_file + ")"};
}

std::optional<ChangeOutcome> text_encoder_cpu(const ChangeContext& c) {
  if (c.job.text_encoder_on_cpu || c.job.text_encoders.empty()) return std::nullopt;
  Job j = c.job;
  j.text_encoder_on_cpu = true;
  auto r = first_fitting({j}, c.runtime);
  if (!r) return std::nullopt;
  return ChangeOutcome{std::move(*r), "run the text encoders on the CPU (CLIPLoader/DualCLIPLoader device: cpu)"};
}

// The diffusion model at the kind's precision, when that stores fewer bits than it loads with now.
std::optional<Priced> diffusion_at(const ChangeContext& c) {
  if (!c.job.diffusion || c.job.diffusion->model.empty()) return std::nullopt;
  const PrecisionInfo* p = precision_named(c.spec.precision);
  // A hundredth of a bit: precisions of equal size (fp8 variants) are no reduction.
  if (!p || bits_of(*c.job.diffusion) <= p->bits_per_weight() + 0.01) return std::nullopt;
  Job j = c.job;
  j.diffusion->precision = c.spec.precision;
  j.diffusion->weight_bytes.reset();
  return first_fitting({j}, c.runtime);
}

std::optional<ChangeOutcome> weights_dtype(const ChangeContext& c) {
  auto r = diffusion_at(c);
  if (!r) return std::nullopt;
  return ChangeOutcome{std::move(*r), "load the diffusion model with weight_dtype " + c.spec.precision};
}

std::optional<ChangeOutcome> gguf_file(const ChangeContext& c) {
  auto r = diffusion_at(c);
  if (!r) return std::nullopt;
  const PrecisionInfo* p = precision_named(c.spec.precision);
  // "gguf-q8_0" -> "q8_0": the quantisation as GGUF file names spell it.
  const std::string quant = p->kind == PrecisionKind::Gguf && p->name.rfind("gguf-", 0) == 0 ? p->name.substr(5) : p->name;
  return ChangeOutcome{std::move(*r), "use a " + quant + " GGUF of " + c.job.diffusion->model +
                                          " (UnetLoaderGGUF from ComfyUI-GGUF)"};
}

// ComfyUI's own per-layer formats (nvfp4, mxfp8): offered where the card computes them natively, since
// elsewhere every layer is dequantised first and a GGUF or fp8 file is the better trade.
std::optional<ChangeOutcome> quant_file(const ChangeContext& c) {
  const PrecisionInfo* p = precision_named(c.spec.precision);
  if (!p || (p->native_compute_from && c.runtime.compute_capability + 1e-9 < *p->native_compute_from)) return std::nullopt;
  auto r = diffusion_at(c);
  if (!r) return std::nullopt;
  return ChangeOutcome{std::move(*r), "use an " + p->name + " file of " + c.job.diffusion->model +
                                          " (ComfyUI's native quantised format, loaded by UNETLoader)"};
}

std::optional<ChangeOutcome> block_swap(const ChangeContext& c) {
  // Dynamic VRAM already streams the weights that do not fit, layer by layer: a block swap node on
  // top of it only moves the same weights by a slower path.
  if (!c.job.diffusion || c.runtime.loader == Runtime::Loader::Dynamic) return std::nullopt;
  const ModelInfo* m = find_model_of(*c.job.diffusion);
  const int blocks = m && m->diffusion ? m->diffusion->blocks : 0;
  if (blocks <= c.job.blocks_swapped) return std::nullopt;
  auto r = fewest_blocks(c.job, blocks, c.runtime);
  if (!r) return std::nullopt;
  const std::string what = "swap " + std::to_string(r->job.blocks_swapped) + " of " + std::to_string(blocks) +
                           " transformer blocks to RAM (block swap / offload node)";
  return ChangeOutcome{std::move(*r), what};
}

std::optional<ChangeOutcome> batch(const ChangeContext& c) {
  if (c.job.batch <= 1) return std::nullopt;
  auto r = largest_fitting(1, c.job.batch - 1, 1, c.runtime, [&](int b) {
    Job j = c.job;
    j.batch = b;
    return j;
  });
  if (!r) return std::nullopt;
  const std::string what = "batch_size " + std::to_string(r->job.batch) + " instead of " + std::to_string(c.job.batch);
  return ChangeOutcome{std::move(*r), what};
}

std::optional<ChangeOutcome> frames(const ChangeContext& c) {
  const SearchSpec& s = c.search;
  if (c.job.frames <= s.min_frames) return std::nullopt;
  // A layered image's frames are the layers asked for, not a clip's length on the 4k+1 grid.
  const ModelInfo* m = c.job.diffusion ? find_model_of(*c.job.diffusion) : nullptr;
  if (m && m->diffusion && m->diffusion->latent_layers) return std::nullopt;
  const int hi = c.job.frames - s.frames_step;
  int lo = s.min_frames;
  if (hi < lo) return std::nullopt;
  lo = hi - ((hi - lo) / s.frames_step) * s.frames_step;  // keep the 4k+1 grid of the original length
  auto r = largest_fitting(lo, hi, s.frames_step, c.runtime, [&](int f) {
    Job j = c.job;
    j.frames = f;
    return j;
  });
  if (!r) return std::nullopt;
  const std::string what = "length " + std::to_string(r->job.frames) + " frames instead of " + std::to_string(c.job.frames);
  return ChangeOutcome{std::move(*r), what};
}

std::optional<ChangeOutcome> resolution(const ChangeContext& c) {
  if (c.job.seconds > 0) return std::nullopt;  // an audio clip has no resolution; its length is the user's
  if (c.job.tokens > 0) return std::nullopt;   // nor a set of shape tokens (Hunyuan3D): no pixels to shrink
  std::vector<Job> candidates;
  const int m = c.search.resolution_multiple_px;
  for (double f : c.search.resolution_scales) {
    Job j = c.job;
    j.width = std::max(m, static_cast<int>(std::floor(c.job.width * f / m)) * m);
    j.height = std::max(m, static_cast<int>(std::floor(c.job.height * f / m)) * m);
    if (j.width == c.job.width && j.height == c.job.height) continue;
    candidates.push_back(j);
  }
  auto r = first_fitting(candidates, c.runtime);
  if (!r) return std::nullopt;
  std::ostringstream text;
  text << "render at " << r->job.width << "x" << r->job.height << " instead of " << c.job.width << "x" << c.job.height
       << ", then upscale x" << std::fixed << std::setprecision(2) << static_cast<double>(c.job.width) / r->job.width;
  return ChangeOutcome{std::move(*r), text.str()};
}

}  // namespace

const std::map<std::string, ChangeKind, std::less<>>& change_kinds() {
  static const char* const format = "diffusion weights";
  static const std::map<std::string, ChangeKind, std::less<>> kinds = {
      {"decode_tiled", {decode_tiled, false}},   {"text_encoder_fp8", {text_encoder_fp8, true}},
      {"text_encoder_cpu", {text_encoder_cpu, false}}, {"weights_fp8", {weights_dtype, true, format}},
      {"gguf_q8", {gguf_file, true, format}},    {"gguf_q5", {gguf_file, true, format}},
      {"gguf_q4", {gguf_file, true, format}},    {"block_swap", {block_swap, false}},
      {"weights_nvfp4", {quant_file, true, format}},
      {"batch", {batch, false}},                 {"frames", {frames, false}},
      {"resolution", {resolution, false}},
  };
  return kinds;
}

const PresetData& planner_preset_data() {
  // Checked once against the planner's kinds; a failed check is not remembered (load_once.hpp).
  static LoadOnce<bool> checked;
  checked.get([] {
    const auto& kinds = change_kinds();
    const std::string file = data_file_label("presets.json");
    std::string known;
    for (const auto& k : kinds) known += (known.empty() ? "" : ", ") + k.first;
    for (const ChangeSpec& spec : preset_data().changes) {
      auto it = kinds.find(spec.kind);
      if (it == kinds.end())
        throw Error(file + ": change kind '" + spec.kind + "' has no planner function (known kinds: " + known + ")");
      if (it->second.needs_precision && !find_precision(spec.precision))
        throw Error(file + ": change '" + spec.kind + "' needs a 'precision' the catalog knows, got '" +
                    spec.precision + "'");
    }
    return true;
  });
  return preset_data();
}

}  // namespace headroom
