#include "core/workflow/assemble_job.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "core/base/json_reader.hpp"
#include "core/catalog/catalog.hpp"
#include "core/estimate/job_models.hpp"
#include "core/workflow/read_generations.hpp"
#include "core/workflow/read_latents.hpp"
#include "core/workflow/sampler_jobs.hpp"

namespace headroom::workflow {
namespace {

// 2 a known sampled model, 1 an unknown one, 0 a known model that runs one forward pass (models.json one_pass).
int standing(const Component& c) {
  if (c.model.empty()) return 1;
  const ModelInfo* m = find_model_of(c);
  return m && !m->one_pass.empty() ? 0 : 2;
}

// The bytes a diffusion component holds: its header's, else the catalog's figure at its precision;
// 0 when neither is known (an unknown model never wins over a known one).
std::uint64_t component_bytes(const Component& c) {
  if (c.weight_bytes) return *c.weight_bytes;
  const ModelInfo* m = find_model_of(c);
  if (!m) return 0;
  const PrecisionInfo* p = find_precision(c.precision.empty() ? m->default_precision : c.precision);
  return p ? weight_bytes(*m, *p) * static_cast<std::uint64_t>(std::max(1, m->experts)) : 0;
}

// Several models run one after another (an all-in-one edit workflow): the largest sets the peak, not the
// one whose loader comes first. Known sampled models win over unknown ones, and an unknown one over a
// known one-pass model: a segmenter beside an unknown video model must not make the workflow read as
// estimated with the segmenter's small figures.
// Text tokens a diffusion component adds to its attention sequence: of two models with the same
// weights (Ideogram 4's conditional and unconditional files), the one that runs the text beside the
// image has the longer sequence and so the larger activations.
std::uint64_t sequence_text_tokens(const Component& c) {
  const ModelInfo* m = find_model_of(c);
  if (!m || !m->diffusion || !m->diffusion->text_in_sequence) return 0;
  return static_cast<std::uint64_t>(m->diffusion->text_tokens);
}

// ...then the most bytes, then the longer text sequence.
std::size_t largest_diffusion(const std::vector<Component>& diffusion) {
  std::size_t pick = 0;
  for (std::size_t i = 1; i < diffusion.size(); ++i) {
    const int rank = standing(diffusion[i]), pick_rank = standing(diffusion[pick]);
    const std::uint64_t bytes = component_bytes(diffusion[i]), pick_bytes = component_bytes(diffusion[pick]);
    if (rank != pick_rank ? rank > pick_rank
                          : bytes != pick_bytes ? bytes > pick_bytes
                                                : sequence_text_tokens(diffusion[i]) > sequence_text_tokens(diffusion[pick]))
      pick = i;
  }
  return pick;
}

// Wan 2.2 A14B's two experts are one component (ComfyUI runs one at a time); other models beside the
// picked one are named.
void note_other_diffusion(ReaderState& st, std::size_t pick) {
  Job& job = st.info.job;
  const ModelInfo* first = find_model_of(st.diffusion[0]);
  const bool experts =
      st.diffusion.size() == 2 && st.diffusion[0].model == st.diffusion[1].model && first && first->experts == 2;
  if (experts) {
    if (st.diffusion[1].weight_bytes &&
        (!job.diffusion->weight_bytes || *st.diffusion[1].weight_bytes > *job.diffusion->weight_bytes))
      job.diffusion->weight_bytes = st.diffusion[1].weight_bytes;
    st.notes().push_back("two Wan 2.2 A14B experts (" + st.diffusion_files[0] + ", " + st.diffusion_files[1] +
                         "): one diffusion model, since sampling uses one expert at a time and ComfyUI unloads "
                         "the other when memory is short");
  } else if (st.diffusion.size() > 1) {
    st.notes().push_back(std::to_string(st.diffusion.size()) + " diffusion models run one after another; the "
                         "estimate uses the largest, '" + st.diffusion_files[pick] + "'");
    // A model the catalog lacks beside it (Lotus depth before Flux) is not counted: say so, by name.
    for (std::size_t i = 0; i < st.diffusion.size(); ++i)
      if (i != pick && st.diffusion[i].model.empty())
        st.notes().push_back("diffusion model '" + st.diffusion_files[i] + "' is not in the catalog; it is not counted");
  }
}

void choose_diffusion(ReaderState& st) {
  Job& job = st.info.job;
  if (st.diffusion.empty()) {
    st.notes().push_back("no diffusion model loader runs in this workflow");
    return;
  }
  const std::size_t pick = largest_diffusion(st.diffusion);
  job.diffusion = st.diffusion[pick];
  if (const ModelInfo* picked = find_model_of(*job.diffusion);
      picked && !picked->one_pass.empty()) {
    st.one_pass = true;
    st.notes().push_back(picked->name + " runs as one forward pass (" + picked->one_pass + ")");
  }
  note_other_diffusion(st, pick);
  if (job.diffusion->model.empty())
    st.notes().push_back("diffusion model '" + job.diffusion->file + "' is not in the catalog");
}

// An audio model is sized by the clip's seconds, an image or video model by its pixels: a length read
// for the other kind is dropped, and an audio model without one takes its default (the size stays unknown).
void audio_length(ReaderState& st) {
  Job& job = st.info.job;
  const ModelInfo* m = job.diffusion ? find_model_of(*job.diffusion) : nullptr;
  const bool audio = m && m->diffusion && m->diffusion->audio();
  if (!audio && job.seconds > 0) {
    st.notes().push_back("an audio latent of " + json_preview(job.seconds, 12) + " s runs beside a model that is not "
                         "an audio model; its length is not counted");
    job.seconds = 0;
  } else if (audio && job.seconds <= 0) {
    job.seconds = m->defaults && m->defaults->seconds > 0 ? m->defaults->seconds : 60.0;
    if (!st.info.size_known && st.latent_nodes == 0 && !st.image_sized_latent && !st.info.size_from_unknown)
      st.notes().push_back("the audio latent's length is not set by a node Headroom reads (it follows an input clip "
                           "or a computed value); assumed " + json_preview(job.seconds, 12) + " s");
  }
}

// A token-latent model is sized by its shape tokens: tokens read beside another kind of model are dropped,
// and a token-latent model without them takes its default (the size stays unknown).
void token_length(ReaderState& st) {
  Job& job = st.info.job;
  const ModelInfo* m = job.diffusion ? find_model_of(*job.diffusion) : nullptr;
  const bool tokens = m && m->diffusion && m->diffusion->token_latent;
  if (!tokens && job.tokens > 0) {
    st.notes().push_back("a latent of " + std::to_string(job.tokens) + " shape tokens runs beside a model that does not "
                         "sample shape tokens; they are not counted");
    job.tokens = 0;
  } else if (tokens && job.tokens <= 0) {
    job.tokens = m->defaults && m->defaults->tokens > 0 ? m->defaults->tokens : 3072;
    st.info.size_known = false;
    st.notes().push_back("the shape-token latent's length is not set by a node Headroom reads; assumed " +
                         std::to_string(job.tokens) + " tokens");
  }
}

// The first node behind a sampler's latent input (Reroutes are already linked past) that `accept`
// accepts, as the node the size follows.
template <typename Accept>
std::optional<UnknownNode> latent_source(const ReaderState& st, Accept accept, const std::string& why) {
  for (const auto& id : st.run) {
    const Node* n = st.g.node(id);
    for (const auto& name : comfy_nodes().sampled_latent_inputs) {
      const Node* from = n ? source_of(st.g, *n, name) : nullptr;
      if (from && accept(*from)) return UnknownNode{from->id, from->type, why};
    }
  }
  return std::nullopt;
}

// The first node Headroom does not know behind a sampler's latent input, else a known node whose latent
// no rule sizes (an encoded input clip, an edit size of 0 that keeps the input image's): the size is as
// unknown behind one as behind the other.
void find_unknown_size(ReaderState& st) {
  WorkflowInfo& info = st.info;
  if (!info.size_known && !st.image_sized_latent && st.latent_nodes == 0)
    info.size_from_unknown = latent_source(st, [](const Node& from) { return !node_info(from.type); },
                                           "a node Headroom does not know");
  if (!info.size_known && st.image_unknown) info.size_from_unknown = st.image_unknown;
  if (!info.size_known && !info.size_from_unknown && !st.diffusion.empty())
    info.size_from_unknown = latent_source(st, [](const Node&) { return true; },
                                           "whose output size Headroom does not read (it follows an input image or clip)");
}

// A latent upsampler enlarges the latent a second sampler runs on, which sets the peak.
void upscaled_size(ReaderState& st) {
  Job& job = st.info.job;
  if (!st.info.size_known || st.latent_scale <= 1.0) return;
  const int w = static_cast<int>(std::lround(job.width * st.latent_scale));
  const int h = static_cast<int>(std::lround(job.height * st.latent_scale));
  st.notes().push_back("a latent upsampler enlarges the " + std::to_string(job.width) + "x" + std::to_string(job.height) +
                       " latent " + json_preview(st.latent_scale, 8) + "x and a second sampler runs on it at " +
                       std::to_string(w) + "x" + std::to_string(h));
  job.width = w;
  job.height = h;
}

// Two pipelines in one workflow (a text-to-image model, then a pixel decoder Headroom does not know upscaling its
// output): the largest latent may be another model's. The picked model is sized at the latents its own samplers
// denoise, when every one of them has a size read and none is the largest.
void size_of_the_picked_model(ReaderState& st) {
  Job& job = st.info.job;
  if (!st.info.size_known || !job.diffusion || job.diffusion->model.empty()) return;
  const SamplerJob* own = nullptr;
  const SamplerJob* other = nullptr;
  const auto pixels = [](const auto& s) { return 1LL * s.width * s.height * s.frames * s.batch; };
  for (const auto& s : job.samplers) {
    const bool mine = s.diffusion && s.diffusion->file == job.diffusion->file && s.diffusion->model == job.diffusion->model;
    if (mine && !s.size_known) return;
    if (mine && (!own || pixels(s) > pixels(*own))) own = &s;
    if (!mine && s.size_known && (!other || pixels(s) > pixels(*other))) other = &s;
  }
  if (!own || !other || pixels(*own) >= pixels(job) || pixels(*other) < pixels(job)) return;
  const std::string by = other->diffusion ? "'" + other->diffusion->file + "'" : other->type + " #" + other->node_id;
  st.notes().push_back("the largest latent (" + std::to_string(job.width) + "x" + std::to_string(job.height) + ") is " +
                       other->type + " #" + other->node_id + "'s, whose model is " + by + ", not " +
                       job.diffusion->model + "; " + job.diffusion->model + " samples " + std::to_string(own->width) +
                       "x" + std::to_string(own->height) + ", the size used");
  job.width = own->width;
  job.height = own->height;
  job.frames = own->frames;
  job.batch = own->batch;
}

void size(ReaderState& st) {
  Job& job = st.info.job;
  if (st.latent_nodes > 1) st.notes().push_back(std::to_string(st.latent_nodes) + " latent nodes run; the largest sets the size");
  size_from_image_latent(st);
  upscaled_size(st);
  size_of_the_picked_model(st);
  find_unknown_size(st);
  if (const auto& u = st.info.size_from_unknown) {
    st.notes().push_back("the sampled latent's size follows " + u->type + " #" + u->id + ", " + u->why +
                         ": it is unknown, and the figures are for an assumed " + std::to_string(job.width) + "x" +
                         std::to_string(job.height) + ", " + std::to_string(job.frames) + " frame(s)");
  } else if (!st.info.size_known) {
    if ((st.image_sized_latent || st.latent_nodes == 0) && job.seconds <= 0)
      st.notes().push_back("output size unknown (it follows an input image); assumed " + std::to_string(job.width) +
                           "x" + std::to_string(job.height));
  }
}

void cfg(ReaderState& st) {
  Job& job = st.info.job;
  if (st.cfg > 1.0 && st.one_pass)
    st.notes().push_back("the guiders' cfg " + json_preview(st.cfg, 8) + " belongs to another model; " +
                         job.diffusion->model + " runs one pass without guidance");
  else if (st.cfg >= 0)
    job.cfg = st.cfg;
}

// The most memory-hungry decoder that runs decides.
void decode_mode(ReaderState& st) {
  Job& job = st.info.job;
  bool any_full = false, any_tiled = false, any_headroom = false;
  int tile = 0;
  for (const auto& d : st.info.decoders) {
    switch (node_info(d.type)->decode) {
      case DecodeKind::Full: any_full = true; break;
      case DecodeKind::Headroom:
        if (d.mode && text(d.mode->value) == "full") any_full = true;
        else any_headroom = true;
        break;
      case DecodeKind::Tiled: {
        any_tiled = true;
        auto ts = d.tile_size ? integer(d.tile_size->value) : std::nullopt;
        const int node_default = static_cast<int>(runtime_constant("tiled_decode_default_tile_px"));
        tile = std::max(tile, static_cast<int>(ts.value_or(node_default)));
        break;
      }
      case DecodeKind::None: break;
    }
  }
  if (any_full) job.decode_mode = DecodeMode::Full;
  else if (any_tiled) {
    job.decode_mode = DecodeMode::Tiled;
    job.decode_tile_px = tile;
  } else if (any_headroom) job.decode_mode = DecodeMode::Headroom;
}

// A patch no sampler's model reaches is loaded to the CPU and never sampled with (ComfyUI moves a patch to the
// card only through the sampler's models()): it is left out of the sample stage, said.
void unreached_patches(ReaderState& st) {
  Job& job = st.info.job;
  if (job.samplers.empty()) return;
  for (const auto& p : job.model_patches) {
    const bool reached = std::any_of(job.samplers.begin(), job.samplers.end(), [&](const SamplerJob& s) {
      return std::any_of(s.model_patches.begin(), s.model_patches.end(),
                         [&](const Component& c) { return c.file == p.file && c.model == p.model; });
    });
    if (!reached)
      st.notes().push_back("model patch '" + p.file + "' reaches no sampler's model; it is not counted in a sample stage");
  }
}

}  // namespace

void assemble_job(ReaderState& st) {
  Job& job = st.info.job;
  resolve_generations(st);
  trace_samplers(st);
  unreached_patches(st);
  choose_diffusion(st);
  if (job.text_encoders.empty() && !st.checkpoint_text_encoders.empty()) job.text_encoders = st.checkpoint_text_encoders;
  if (!job.vae && st.checkpoint_vae) job.vae = st.checkpoint_vae;
  if (!job.clip_vision && st.checkpoint_clip_vision) job.clip_vision = st.checkpoint_clip_vision;
  audio_length(st);
  token_length(st);
  size(st);
  cfg(st);
  decode_mode(st);
}

}  // namespace headroom::workflow
