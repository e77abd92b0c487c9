// PLACEHOLDER written by the lead; the Wan owner replaces this whole file.
#include "core/decode_plan.hpp"
#include "core/error.hpp"
namespace headroom {
DecodePlan plan_decode_wan(const DecodeRequest& r) { throw Error("plan_decode_wan(" + r.family + "): not implemented yet"); }
}  // namespace headroom
