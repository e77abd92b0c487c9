// The smallest cards that run a job (see smallest_card.hpp).
#include "core/plan/smallest_card.hpp"

#include <algorithm>
#include <vector>

#include "core/base/units.hpp"
#include "core/catalog/catalog.hpp"
#include "core/plan/change_search.hpp"

namespace headroom {

namespace {

struct Candidate {
  std::string name;
  std::uint64_t memory_bytes = 0;
  std::optional<double> price;
  const GpuInfo* gpu = nullptr;  // nullptr: the request's own card, already estimated
};

}  // namespace

SmallestCards smallest_cards(const Job& job, const Runtime& rt, const Estimate& here) {
  std::vector<Candidate> cards;
  for (const auto& g : catalog_data().gpus) cards.push_back({g.name, g.memory_bytes, g.price_eur_per_hour, &g});
  // A card measured by its free memory is partly someone else's: only a whole one compares with
  // whole catalog cards. Catalog cards of the same size come first (they carry a name and a price).
  const bool whole = rt.vram_bytes && !rt.free_bytes && here.verdict.has_value();
  if (whole) cards.push_back({"the card given (" + format_bytes(rt.vram_bytes) + ")", rt.vram_bytes, std::nullopt, nullptr});
  std::stable_sort(cards.begin(), cards.end(),
                   [](const Candidate& a, const Candidate& b) { return a.memory_bytes < b.memory_bytes; });
  SmallestCards out;
  for (const Candidate& c : cards) {
    if (out.runs && out.resident) break;
    std::optional<Estimate> e;
    if (!c.gpu) {
      e = here;
    } else {
      // Below the fully-resident peak a card can only stream: worth pricing only for "runs".
      if (out.runs && c.memory_bytes < here.full_load_peak_bytes) continue;
      Runtime r = rt;
      r.vram_bytes = c.memory_bytes;
      r.free_bytes = 0;  // a whole other card, not this one's free memory
      r.fp8_compute = c.gpu->fp8_compute ? (*c.gpu->fp8_compute ? 1 : 0) : -1;
      e = plan_search::try_estimate(job, r);
    }
    if (!e) continue;
    const SmallestGpu found{c.name, c.memory_bytes, c.price, e->peak_bytes, e->verdict};
    if (!out.runs && plan_search::runs(*e)) out.runs = found;
    if (!out.resident && plan_search::fits(*e)) out.resident = found;
  }
  return out;
}

nlohmann::json SmallestGpu::to_json() const {
  nlohmann::json j = {{"name", name},
                      {"memory_bytes", memory_bytes},
                      {"price_eur_per_hour", price_eur_per_hour ? nlohmann::json(*price_eur_per_hour) : nlohmann::json(nullptr)},
                      {"peak_bytes", peak_bytes}};
  put_verdict(j, verdict, "");
  return j;
}

}  // namespace headroom
