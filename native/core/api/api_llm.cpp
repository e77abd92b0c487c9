// api::llm and api::train: the LLM inference and training memory models (their request tables live
// with them in core/llm/).
#include "core/api/api.hpp"
#include "core/llm/llm_memory.hpp"
#include "core/llm/train_memory.hpp"

namespace headroom::api {

json llm(const json& request) { return headroom::llm::estimate(request); }

json train(const json& request) { return headroom::train::estimate(request); }

}  // namespace headroom::api
