// The inspector's entry points that use the built-in models.json, through the one recogniser. Kept
// apart from inspector.cpp so the parsers and the matcher build (and fuzz) without the embedded data.
#include "core/base/data_files.hpp"
#include "core/inspect/inspector.hpp"
#include "core/inspect/recognise.hpp"

namespace headroom {

Inspection inspect_file(const std::string& path) { return recognise_tensors(read_model_file(path)); }

WeightSummary weight_summary(const std::string& path) { return weight_summary(path, data_file("models.json")); }

}  // namespace headroom
