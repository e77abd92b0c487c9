// PLACEHOLDER written by the lead so every helper can link from the start.
// The owner replaces this whole file; no placeholder may remain at the end.
#include "core/api.hpp"
#include "core/error.hpp"
namespace headroom::api {
json plan(const json&) { throw Error("plan: not implemented yet"); }
json apply_preset(const json&) { throw Error("apply_preset: not implemented yet"); }
}
