#pragma once
// native/data/llms.json, checked whole before anything computes with it.
#include <nlohmann/json.hpp>

namespace headroom::llm {

// The parsed llms.json after every field the LLM and training estimates read was checked for its type
// and range (throws Error naming the file, the entry and the key). Callers may then read it directly.
const nlohmann::json& llm_data();

}  // namespace headroom::llm
