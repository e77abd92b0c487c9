// Every entry point's request table by name, for the CLI (flag text -> JSON by the same rules) and tests.
#include "core/api/api.hpp"
#include "core/llm/llm_memory.hpp"
#include "core/llm/train_memory.hpp"

namespace headroom::api {

const request::Fields* fields_of(std::string_view entry) {
  if (entry == "estimate") return &estimate_fields();
  if (entry == "plan") return &plan_fields();
  if (entry == "apply_preset") return &apply_preset_fields();
  if (entry == "suggest_preset") return &suggest_preset_fields();
  if (entry == "decode_tile") return &decode_tile_fields();
  if (entry == "inspect") return &inspect_fields();
  if (entry == "recognise") return &recognise_fields();
  if (entry == "explain") return &explain_fields();
  if (entry == "runs") return &runs_fields();
  if (entry == "calibrate") return &calibrate_fields();
  if (entry == "llm") return &headroom::llm::request_fields();
  if (entry == "train") return &headroom::train::request_fields();
  return nullptr;
}

const std::vector<std::string_view>& entry_names() {
  static const std::vector<std::string_view> names = {"estimate", "plan",      "apply_preset", "suggest_preset",
                                                      "decode_tile", "inspect",  "recognise", "explain",      "runs",
                                                      "calibrate", "llm",      "train"};
  return names;
}

}  // namespace headroom::api
