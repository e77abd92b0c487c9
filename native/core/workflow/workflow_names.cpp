// File name -> model and precision, through the one recogniser.
#include "core/workflow/workflow_names.hpp"

#include "core/workflow/comfy_nodes.hpp"

namespace headroom::workflow {

NameGuess resolve_file(const std::string& file, const std::string& role) { return recognise_file_name(file, role); }

std::string precision_from_weight_dtype(const std::string& weight_dtype) {
  const auto& table = comfy_nodes().weight_dtypes;
  auto it = table.find(weight_dtype);
  return it == table.end() ? "" : it->second;  // "default" (ComfyUI keeps the file's dtype) or Headroom's "auto"
}

}  // namespace headroom::workflow
