// apply_calibration(): learned corrections onto the estimator's stages.
#include "core/estimate/apply_calibration.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <locale>
#include <sstream>

#include "core/base/error.hpp"
#include "core/base/file_reader.hpp"
#include "core/base/units.hpp"

namespace headroom {
namespace {

// The models each stage the estimator reports runs; a correction's model is matched against these.
std::vector<const Component*> components_of(const std::string& stage, const Job& job) {
  std::vector<const Component*> out;
  if (stage == "text_encode")
    for (const auto& t : job.text_encoders) out.push_back(&t);
  if (stage == "clip_vision_encode" && job.clip_vision) out.push_back(&*job.clip_vision);
  if (stage == "audio_encode" && job.audio_encoder) out.push_back(&*job.audio_encoder);
  if ((stage == "vae_encode" || stage == "vae_decode") && job.vae) out.push_back(&*job.vae);
  if (stage == "sample" && job.diffusion) out.push_back(&*job.diffusion);
  return out;
}

constexpr const char* kStages[] = {"text_encode", "clip_vision_encode", "audio_encode", "vae_encode", "sample", "vae_decode"};

bool known_stage(const std::string& name) {
  return std::any_of(std::begin(kStages), std::end(kStages), [&](const char* s) { return name == s; });
}

// The history keeps file names only; a workflow may name the file with its subfolder ("flux/x.safetensors").
bool names(const calibrate::Correction& c, const Component& comp) {
  return c.model == comp.model || (!comp.file.empty() && (c.model == comp.file || c.model == path_file_name(comp.file)));
}

// What a lower measured peak may take from: the stage's working memory, not its fixed parts.
bool adjustable(const std::string& part) {
  return part.rfind("weights:", 0) != 0 && part != "cached_models" && part != "cuda_context" &&
         part != "comfyui_reserve" && part != "dynamic_vram_headroom" && part != "calibration";
}

void lower(Stage& s, std::uint64_t by) {
  std::uint64_t room = 0;
  for (const auto& kv : s.breakdown)
    if (adjustable(kv.first)) room += kv.second;
  by = std::min(by, room);
  if (by == 0) return;
  std::uint64_t left = by;
  for (auto& kv : s.breakdown) {
    if (!adjustable(kv.first) || left == 0) continue;
    const auto take = std::min<std::uint64_t>(
        left, static_cast<std::uint64_t>(std::ceil(static_cast<double>(kv.second) * by / room)));
    kv.second -= take;
    left -= take;
  }
  s.peak_bytes -= by - left;
}

std::string times(double x) {
  std::ostringstream o;
  o.imbue(std::locale::classic());
  o << std::fixed << std::setprecision(2) << x;
  return o.str() + "x";
}

}  // namespace

void apply_calibration(Estimate& est, const Job& job, const std::vector<calibrate::Correction>& corrections) {
  for (std::size_t i = 0; i < corrections.size(); ++i)
    if (!known_stage(corrections[i].stage))
      throw InputError("calibration[" + std::to_string(i) + "].stage",
                       "expected a stage the estimator reports (text_encode, clip_vision_encode, audio_encode, vae_encode, sample, "
                       "vae_decode), got '" + corrections[i].stage + "'");
  for (auto& s : est.stages) {
    const auto comps = components_of(s.name, job);
    auto c = std::find_if(corrections.begin(), corrections.end(), [&](const calibrate::Correction& k) {
      return k.stage == s.name && std::any_of(comps.begin(), comps.end(), [&](const Component* p) { return names(k, *p); });
    });
    if (c == corrections.end()) continue;
    const std::uint64_t before = s.peak_bytes;
    auto target = static_cast<std::uint64_t>(std::llround(static_cast<double>(before) * c->factor));
    if (est.vram_bytes) target = std::min(target, std::max(before, est.vram_bytes));
    if (target > before) {
      s.breakdown["calibration"] += target - before;
      s.peak_bytes = target;
    } else if (target < before) {
      lower(s, before - target);
    }
    s.calibration = *c;
    s.uncalibrated_peak_bytes = before;
    const std::string on = c->card.empty() ? "this card" : "this card (" + c->card + ")";
    std::string note = s.name + ": calibrated from " + std::to_string(c->runs) + " runs on " + on + ": measured peaks were " +
                       times(c->factor) + " the model's, " + format_bytes(before) + " -> " + format_bytes(s.peak_bytes);
    if (s.peak_bytes != static_cast<std::uint64_t>(std::llround(static_cast<double>(before) * c->factor)))
      note += est.vram_bytes && s.peak_bytes == std::max(before, est.vram_bytes)
                  ? " (held at the card's size: runs that fit say nothing of a run that would not)"
                  : " (weights, context and reserve do not shrink)";
    s.notes.push_back(note);
    est.notes.push_back(note);
  }
}

}  // namespace headroom
