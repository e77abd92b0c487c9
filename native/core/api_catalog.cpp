// PLACEHOLDER written by the lead so every helper can link from the start.
// The owner replaces this whole file; no placeholder may remain at the end.
#include "core/api.hpp"
#include "core/error.hpp"
namespace headroom::api {
json catalog() { throw Error("catalog: not implemented yet"); }
json estimate(const json&) { throw Error("estimate: not implemented yet"); }
}
