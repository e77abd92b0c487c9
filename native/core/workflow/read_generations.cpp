#include "core/workflow/read_generations.hpp"

#include <cmath>

#include "core/base/json_reader.hpp"
#include "core/catalog/catalog.hpp"
#include "core/estimate/job_models.hpp"

namespace headroom::workflow {

void read_generation(ReaderState& st, const Node& n, const ComfyNode& info) {
  const Node* from = source_of(st.g, n, info.generator_input);
  auto value = resolved_value(st.g, n, info.new_tokens_widget);
  // A token count must be whole; a duration (tokens_per_unit != 1) is any number, rounded once scaled.
  const bool readable = value && (info.new_tokens_per_unit == 1 ? value->is_number_integer() : value->is_number());
  const double tokens = readable ? value->get<double>() * info.new_tokens_per_unit : 0;
  const bool in_range = tokens >= 1 && tokens <= (1 << 20);
  st.generations.push_back({n.type + " #" + n.id, from ? from->id : "", in_range ? static_cast<int>(std::lround(tokens)) : 0});
}

void resolve_generations(ReaderState& st) {
  for (const auto& p : st.generations) {
    auto it = st.encoders_by_node.find(p.loader);
    if (it == st.encoders_by_node.end()) {
      st.notes().push_back(p.node + ": no text encoder loader feeds it; what it writes is not counted");
      continue;
    }
    const LoadedEncoder& e = it->second;
    const ModelInfo* m = find_model_of(e.component);
    if (!m || !m->encoder || m->encoder->kv_elems_per_token <= 0) {
      st.notes().push_back(p.node + ": its language model '" + e.file + "' is " +
                        (m ? "not known to write text (no arch.generation in models.json)" : "not in the catalog") +
                        "; what it writes is not counted");
      continue;
    }
    if (p.new_tokens < 1) {
      st.notes().push_back(p.node + ": max_length is not a number Headroom can read; what it writes is not counted");
      continue;
    }
    st.info.job.text_generations.push_back({e.component, p.new_tokens});
    st.notes().push_back(p.node + ": " + m->name + " writes up to " + std::to_string(p.new_tokens) +
                      " tokens before the prompt is encoded (stage text_generate)");
  }
}

}  // namespace headroom::workflow
