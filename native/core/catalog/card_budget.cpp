#include "core/catalog/card_budget.hpp"

#include <string>

#include "core/base/error.hpp"
#include "core/base/units.hpp"

namespace headroom {

// ComfyUI itself needs more than a quarter GiB, so a smaller card is a mistyped unit, not a card.
constexpr double kSmallestCard = 256.0 * MiB;
constexpr double kLargest = static_cast<double>(kMaxMemoryBytes);

const request::Fields& card_budget_fields() {
  using request::Kind;
  static const request::Fields f = {
      {"gpu", Kind::String, "a catalog GPU name or an unambiguous part of one (\"4090\")", 0, 0, {}, false, "gpu"},
      {"vram_bytes", Kind::Bytes, "the card's memory in bytes (24 GiB = 25769803776)", kSmallestCard, kLargest, {},
       false, "vram-bytes"},
      {"vram", Kind::Size, "the card's memory as a number of GiB or a size text (\"24GB\")", kSmallestCard, kLargest,
       {}, false, "vram"},
      {"free_bytes", Kind::Bytes, "memory free for this run as ComfyUI counts it; verdicts are then against it", 1,
       kLargest, {}, false, "free", GiB},
  };
  return f;
}

request::Fields with_card_budget(request::Fields own) {
  own.insert(own.end(), card_budget_fields().begin(), card_budget_fields().end());
  return own;
}

CardBudget card_budget_of(const request::Request& r) {
  CardBudget b;
  if (r.has("gpu") + r.has("vram_bytes") + r.has("vram") > 1)
    throw InputError("gpu", "give only one of gpu, vram_bytes and vram");
  if (r.has("gpu")) {
    b.gpu = &resolve_gpu(r.text("gpu"), "gpu");
    b.vram_bytes = b.gpu->memory_bytes;
  } else if (r.has("vram_bytes")) {
    b.vram_bytes = r.bytes("vram_bytes");
  } else if (r.has("vram")) {
    b.vram_bytes = r.bytes("vram");
  }
  if (r.has("free_bytes")) {
    b.free_bytes = r.bytes("free_bytes");
    if (b.vram_bytes && b.free_bytes > b.vram_bytes)
      throw InputError("free_bytes", "is more than the card's memory (" + std::to_string(b.vram_bytes) + " bytes)");
  }
  return b;
}

}  // namespace headroom
