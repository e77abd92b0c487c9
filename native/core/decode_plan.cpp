// PLACEHOLDER written by the lead so every helper can link from the start.
// The owner replaces this whole file; no placeholder may remain at the end.
#include "core/decode_plan.hpp"
#include "core/error.hpp"
namespace headroom {
DecodePlan plan_decode(const DecodeRequest&) { throw Error("plan_decode: not implemented yet"); }
}
