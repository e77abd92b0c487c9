#pragma once
// The card a request sizes for, read the same way by every entry point that takes one (estimate, plan,
// apply_preset, llm, train): gpu (a catalog name) | vram_bytes | vram (GiB or "24GB"), and free_bytes.
#include <cstdint>

#include "core/base/request_fields.hpp"
#include "core/catalog/catalog.hpp"

namespace headroom {

struct CardBudget {
  const GpuInfo* gpu = nullptr;  // when named with gpu
  std::uint64_t vram_bytes = 0;  // the card's total; 0 = not given
  std::uint64_t free_bytes = 0;  // memory free for this run; 0 = not given
  bool given() const { return vram_bytes != 0 || free_bytes != 0; }
  // What verdicts are against: the free memory when given, else the card.
  std::uint64_t budget_bytes() const { return free_bytes ? free_bytes : vram_bytes; }
};

// The four fields, each with its kind and range (declared once here), to append to an entry's table.
const request::Fields& card_budget_fields();

// Reads them: at most one of gpu, vram_bytes and vram; free_bytes no more than the card. InputError otherwise.
CardBudget card_budget_of(const request::Request& r);

// A table with the card fields appended.
request::Fields with_card_budget(request::Fields own);

}  // namespace headroom
