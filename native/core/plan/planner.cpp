// The planner (see planner.hpp). Every candidate is priced by the estimator itself, so a change is
// listed with the peak the estimator predicts for the changed job, never with a rule of thumb.
#include "core/plan/planner.hpp"

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <map>

#include "core/catalog/catalog.hpp"
#include "core/catalog/verdict.hpp"
#include "core/base/error.hpp"
#include "core/catalog/presets.hpp"
#include "core/base/units.hpp"

namespace headroom {

namespace {

struct Priced {
  Job job;
  Estimate est;
};

std::optional<Estimate> try_estimate(const Job& job, const Runtime& rt) {
  try {
    return estimate(job, rt);
  } catch (const Error&) {
    return std::nullopt;  // the change is not valid for this model (e.g. a precision its role refuses)
  }
}

bool fits(const Estimate& e) { return e.verdict == spelling(Verdict::Fits); }
bool runs(const Estimate& e) { return e.verdict != spelling(Verdict::DoesNotFit); }

// Exact canonical-name lookups (the planner only sees canonical names; find_model's alias search
// would normalise strings on every call).
const ModelInfo* model_named(const std::string& name) {
  static const std::unordered_map<std::string, const ModelInfo*> index = [] {
    std::unordered_map<std::string, const ModelInfo*> i;
    for (const auto& m : catalog_data().models) i[m.name] = &m;
    return i;
  }();
  auto it = index.find(name);
  return it != index.end() ? it->second : find_model(name);
}

const PrecisionInfo* precision_named(const std::string& name) {
  static const std::unordered_map<std::string, const PrecisionInfo*> index = [] {
    std::unordered_map<std::string, const PrecisionInfo*> i;
    for (const auto& p : catalog_data().precisions) i[p.name] = &p;
    return i;
  }();
  auto it = index.find(name);
  return it != index.end() ? it->second : find_precision(name);
}

// Bits per weight of a component as it will load ("" = the catalog's default precision).
double bits_of(const Component& c) {
  std::string p = c.precision;
  if (p.empty())
    if (const ModelInfo* m = model_named(c.model)) p = m->default_precision;
  const PrecisionInfo* info = precision_named(p);
  return info ? info->bits_per_weight() : 16.0;
}

int blocks_of(const std::string& model) {
  const ModelInfo* m = model_named(model);
  if (!m || !m->data || !m->data->contains("arch")) return 0;
  return (*m->data)["arch"].value("blocks", 0);
}

// Tries candidate jobs in order (least reduction first) and keeps the first that fits, or the one
// with the lowest peak when none does.
std::optional<Priced> first_fitting(const std::vector<Job>& candidates, const Runtime& rt) {
  std::optional<Priced> best;
  // The strongest reduction first: when even it does not fit, the milder ones cannot (the peak grows
  // with tile size and resolution), and one estimate settles it.
  if (candidates.size() > 1) {
    auto strongest = try_estimate(candidates.back(), rt);
    if (strongest && !fits(*strongest)) {
      // None fits; if the strongest at least runs (partial loading), the mildest one that runs, as
      // largest_fitting does: reducing more would cost quality without making it fit.
      if (!runs(*strongest)) return Priced{candidates.back(), std::move(*strongest)};
      for (std::size_t i = 0; i + 1 < candidates.size(); ++i)
        if (auto e = try_estimate(candidates[i], rt); e && runs(*e)) return Priced{candidates[i], std::move(*e)};
      return Priced{candidates.back(), std::move(*strongest)};
    }
  }
  for (const auto& j : candidates) {
    auto e = try_estimate(j, rt);
    if (!e) continue;
    if (fits(*e)) return Priced{j, std::move(*e)};
    if (!best || e->peak_bytes < best->est.peak_bytes) best = Priced{j, std::move(*e)};
  }
  return best;
}

// Largest value in [lo, hi] (stepping by `step` from hi) whose job fits; `make` builds the job.
// Binary search over the index: the peak grows with the value.
template <class Make>
std::optional<Priced> largest_fitting(int lo, int hi, int step, const Runtime& rt, Make make) {
  if (hi < lo) return std::nullopt;
  int n = (hi - lo) / step;  // values lo + k*step, k = 0..n
  auto at = [&](int k) { return lo + k * step; };
  auto low = try_estimate(make(at(0)), rt);
  if (!low) return std::nullopt;
  // When even the strongest reduction does not fit but lets the job run (partial loading), the
  // least reduction that still runs: cutting further would cost content without making it fit.
  const bool want_fit = fits(*low);
  if (!want_fit && !runs(*low)) return Priced{make(at(0)), *low};
  auto ok = [&](const Estimate& e) { return want_fit ? fits(e) : runs(e); };
  int good = 0, bad = n + 1;
  std::optional<Estimate> good_est = low;
  while (bad - good > 1) {
    int mid = (good + bad) / 2;
    auto e = try_estimate(make(at(mid)), rt);
    if (e && ok(*e)) {
      good = mid;
      good_est = std::move(e);
    } else {
      bad = mid;
    }
  }
  return Priced{make(at(good)), std::move(*good_est)};
}

// Smallest number of swapped blocks that fits (more blocks = less memory, slower).
std::optional<Priced> fewest_blocks(const Job& job, int blocks, const Runtime& rt) {
  auto make = [&](int n) {
    Job j = job;
    j.blocks_swapped = n;
    return j;
  };
  auto most = try_estimate(make(blocks), rt);
  if (!most) return std::nullopt;
  if (!fits(*most)) return Priced{make(blocks), *most};
  int bad = job.blocks_swapped, good = blocks;
  Estimate good_est = *most;
  while (good - bad > 1) {
    int mid = (good + bad) / 2;
    auto e = try_estimate(make(mid), rt);
    if (e && fits(*e)) {
      good = mid;
      good_est = *e;
    } else {
      bad = mid;
    }
  }
  return Priced{make(good), good_est};
}

std::string decode_text(const Job& j) {
  return "decode in " + std::to_string(j.decode_tile_px) + " px tiles: VAE Decode (Headroom) (seamless) or "
         "VAE Decode (Tiled) with tile_size " + std::to_string(j.decode_tile_px);
}

}  // namespace

std::uint64_t need_bytes(const Estimate& e) { return std::max(e.peak_bytes, e.full_load_peak_bytes); }

std::optional<PlanChange> plan_change(const std::string& kind, const Job& job, const Runtime& rt,
                                      std::uint64_t baseline_need) {
  const PresetData& data = preset_data();
  const ChangeSpec* spec = data.change(kind);
  if (!spec) throw InputError("change", "unknown change kind '" + kind + "'");
  const SearchSpec& s = data.search;
  std::optional<Priced> r;
  std::string what;

  if (kind == "decode_tiled") {
    if (job.decode_mode != DecodeMode::Full) return std::nullopt;
    std::vector<Job> c;
    for (int t : s.tile_sizes_px) {
      Job j = job;
      j.decode_mode = DecodeMode::Tiled;
      j.decode_tile_px = t;
      c.push_back(j);
    }
    r = first_fitting(c, rt);
    if (r) what = decode_text(r->job);
  } else if (kind == "text_encoder_fp8") {
    Job j = job;
    std::vector<std::string> names;
    for (auto& te : j.text_encoders)
      if ((te.model == "t5-xxl" || te.model == "umt5-xxl") && bits_of(te) >= 16) {
        te.precision = "fp8_e4m3fn";
        te.weight_bytes.reset();
        names.push_back(te.model);
      }
    if (names.empty() || job.text_encoder_on_cpu) return std::nullopt;
    r = first_fitting({j}, rt);
    what = "load " + names[0] + " as fp8 (e.g. " +
           std::string(names[0] == "t5-xxl" ? "t5xxl_fp8_e4m3fn_scaled" : "umt5_xxl_fp8_e4m3fn_scaled") +
           ".safetensors)";
  } else if (kind == "text_encoder_cpu") {
    if (job.text_encoder_on_cpu || job.text_encoders.empty()) return std::nullopt;
    Job j = job;
    j.text_encoder_on_cpu = true;
    r = first_fitting({j}, rt);
    what = "run the text encoders on the CPU (CLIPLoader/DualCLIPLoader device: cpu)";
  } else if (kind == "weights_fp8" || kind.rfind("gguf_", 0) == 0) {
    if (!job.diffusion || job.diffusion->model.empty()) return std::nullopt;
    std::string target = kind == "weights_fp8" ? "fp8_e4m3fn" : spec->precision;
    const PrecisionInfo* p = precision_named(target);
    if (!p || bits_of(*job.diffusion) <= p->bits_per_weight() + 0.01) return std::nullopt;
    Job j = job;
    j.diffusion->precision = target;
    j.diffusion->weight_bytes.reset();
    r = first_fitting({j}, rt);
    what = kind == "weights_fp8" ? "load the diffusion model with weight_dtype fp8_e4m3fn"
                                 : "use a " + target.substr(5) + " GGUF of " + job.diffusion->model +
                                       " (UnetLoaderGGUF from ComfyUI-GGUF)";
  } else if (kind == "block_swap") {
    if (!job.diffusion) return std::nullopt;
    int blocks = blocks_of(job.diffusion->model);
    if (blocks <= job.blocks_swapped) return std::nullopt;
    r = fewest_blocks(job, blocks, rt);
    if (r)
      what = "swap " + std::to_string(r->job.blocks_swapped) + " of " + std::to_string(blocks) +
             " transformer blocks to RAM (block swap / offload node)";
  } else if (kind == "batch") {
    if (job.batch <= 1) return std::nullopt;
    r = largest_fitting(1, job.batch - 1, 1, rt, [&](int b) {
      Job j = job;
      j.batch = b;
      return j;
    });
    if (r) what = "batch_size " + std::to_string(r->job.batch) + " instead of " + std::to_string(job.batch);
  } else if (kind == "frames") {
    if (job.frames <= s.min_frames) return std::nullopt;
    int hi = job.frames - s.frames_step;
    int lo = s.min_frames;
    if (hi < lo) return std::nullopt;
    lo = hi - ((hi - lo) / s.frames_step) * s.frames_step;  // keep the 4k+1 grid of the original length
    r = largest_fitting(lo, hi, s.frames_step, rt, [&](int f) {
      Job j = job;
      j.frames = f;
      return j;
    });
    if (r) what = "length " + std::to_string(r->job.frames) + " frames instead of " + std::to_string(job.frames);
  } else if (kind == "resolution") {
    std::vector<Job> c;
    const int m = s.resolution_multiple_px;
    for (double f : s.resolution_scales) {
      Job j = job;
      j.width = std::max(m, static_cast<int>(std::floor(job.width * f / m)) * m);
      j.height = std::max(m, static_cast<int>(std::floor(job.height * f / m)) * m);
      if (j.width == job.width && j.height == job.height) continue;
      c.push_back(j);
    }
    r = first_fitting(c, rt);
    if (r) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "render at %dx%d instead of %dx%d, then upscale x%.2f", r->job.width,
                    r->job.height, job.width, job.height, static_cast<double>(job.width) / r->job.width);
      what = buf;
    }
  }
  if (!r) return std::nullopt;
  PlanChange c;
  c.kind = kind;
  c.cost = spec->cost;
  c.widget = spec->widget;
  c.job = r->job;
  c.new_peak_bytes = r->est.peak_bytes;
  c.new_need_bytes = need_bytes(r->est);
  c.saving_bytes = baseline_need > c.new_need_bytes ? baseline_need - c.new_need_bytes : 0;
  c.verdict = r->est.verdict;
  c.fits = fits(r->est);
  c.description = what + " (" + spec->effect + ")";
  return c;
}

Plan make_plan(const Job& job_in, const Runtime& rt, const PlanOptions& options) {
  Plan plan;
  plan.estimate = options.reuse ? options.reuse->estimate : estimate(job_in, rt);
  // Candidates are priced without the job's notes, which never change an estimate: every candidate
  // copies its job, and a workflow with thousands of loaders carries thousands of notes. The notes
  // go back on the jobs of the changes returned.
  Job job = job_in;
  job.notes.clear();
  plan.verdict = plan.estimate.verdict;
  const std::uint64_t need = need_bytes(plan.estimate);
  const PresetData& data = preset_data();

  if (rt.has_card() && plan.verdict != spelling(Verdict::Fits)) {
    std::vector<std::string> order = options.order;
    if (order.empty())
      for (const auto& c : data.changes) order.push_back(c.kind);
    auto allowed = [&](const std::string& k) { return !options.allowed || options.allowed->count(k); };
    std::map<std::string, std::optional<PlanChange>>& first = plan.singles;  // reused by the first greedy step
    for (const auto& spec : data.changes) {
      if (!allowed(spec.kind)) continue;
      std::optional<PlanChange> c;
      auto known = options.reuse ? options.reuse->singles.find(spec.kind) : first.end();
      if (options.reuse && known != options.reuse->singles.end())
        c = known->second;
      else
        c = plan_change(spec.kind, job, rt, need);
      first[spec.kind] = c;
      // Kept when it lowers the need or lifts the verdict (partial loading avoided).
      if (c && (c->saving_bytes > 0 || c->fits)) plan.changes.push_back(std::move(*c));
    }
    Job cur = job;
    std::uint64_t cur_need = need;
    bool cur_fits = false;
    // Greedy, cheapest first, restarting from the cheapest after each accepted change: one that
    // saves nothing while another stage sets the need (an fp8 text encoder next to 16-bit diffusion
    // weights) is taken as soon as the cheaper changes have made it useful, before any dearer one.
    std::set<std::string> applied;
    while (!cur_fits) {
      bool progress = false;
      for (const auto& kind : order) {
        if (!allowed(kind) || applied.count(kind)) continue;
        auto cached = applied.empty() ? first.find(kind) : first.end();
        auto c = cached != first.end() ? cached->second : plan_change(kind, cur, rt, cur_need);
        if (!c || (c->saving_bytes == 0 && !c->fits)) continue;
        cur = c->job;
        cur_need = c->new_need_bytes;
        cur_fits = c->fits;
        applied.insert(kind);
        progress = true;
        plan.cumulative.push_back(std::move(*c));
        break;
      }
      if (!progress) break;
    }
    plan.cumulative_fits = cur_fits;
  }

  for (auto* list : {&plan.changes, &plan.cumulative})
    for (auto& c : *list) c.job.notes = job_in.notes;
  for (auto& [kind, c] : plan.singles)
    if (c) c->job.notes = job_in.notes;

  if (options.smallest_gpu) {
    std::vector<const GpuInfo*> gpus;
    for (const auto& g : catalog_data().gpus) gpus.push_back(&g);
    std::stable_sort(gpus.begin(), gpus.end(),
                     [](const GpuInfo* a, const GpuInfo* b) { return a->memory_bytes < b->memory_bytes; });
    for (const GpuInfo* g : gpus) {
      // A card below the fully-resident peak can only run it with partial loading: not "unchanged".
      if (g->memory_bytes < plan.estimate.full_load_peak_bytes) continue;
      Runtime r = rt;
      r.vram_bytes = g->memory_bytes;
      r.free_bytes = 0;  // a whole other card, not this one's free memory
      r.fp8_compute = g->fp8_compute ? (*g->fp8_compute ? 1 : 0) : -1;
      auto e = try_estimate(job, r);
      if (e && fits(*e)) {
        plan.smallest_gpu = SmallestGpu{g->name, g->memory_bytes, g->price_eur_per_hour, e->peak_bytes};
        break;
      }
    }
  }
  return plan;
}

nlohmann::json PlanChange::to_json() const {
  return {{"kind", kind},       {"cost", cost},   {"description", description},
          {"saving_bytes", saving_bytes}, {"new_peak_bytes", new_peak_bytes},
          {"new_full_load_bytes", new_need_bytes}, {"fits", fits},
          {"verdict", verdict}, {"applies_by_preset", by_preset.value_or(widget)}};
}

nlohmann::json SmallestGpu::to_json() const {
  return {{"name", name},
          {"memory_bytes", memory_bytes},
          {"price_eur_per_hour", price_eur_per_hour ? nlohmann::json(*price_eur_per_hour) : nlohmann::json(nullptr)},
          {"peak_bytes", peak_bytes}};
}

nlohmann::json Plan::to_json() const {
  nlohmann::json j = estimate.to_json();
  j["verdict"] = verdict.empty() ? nlohmann::json(nullptr) : nlohmann::json(verdict);
  j["changes"] = nlohmann::json::array();
  for (const auto& c : changes) j["changes"].push_back(c.to_json());
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& c : cumulative) steps.push_back(c.to_json());
  j["cumulative"] = {{"steps", steps},
                     {"fits", cumulative_fits},
                     {"new_peak_bytes", cumulative.empty() ? nlohmann::json(nullptr)
                                                           : nlohmann::json(cumulative.back().new_peak_bytes)}};
  j["smallest_gpu"] = smallest_gpu ? smallest_gpu->to_json() : nlohmann::json(nullptr);
  return j;
}

}  // namespace headroom
