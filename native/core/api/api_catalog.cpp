// api::catalog(): the catalog as JSON (models, precisions, GPUs, presets, verdict spellings).
#include "core/api/api.hpp"
#include "core/api/runtime_fields.hpp"
#include "core/catalog/catalog.hpp"
#include "core/base/data_files.hpp"
#include "core/base/error.hpp"
#include "core/catalog/verdict.hpp"
#include "core/plan/changes.hpp"

namespace headroom::api {

json catalog() {
  const Catalog& c = catalog_data();
  json out;
  out["models"] = json::array();
  for (const auto& m : c.models) {
    const PrecisionInfo& p = resolve_precision(m.default_precision, "default_precision");
    json j = {{"name", m.name},
              {"role", role_name(m.role)},
              {"family", m.family},
              {"variant", m.variant},
              {"aliases", m.aliases},
              {"params", m.params},
              {"default_precision", m.default_precision},
              {"default_weight_bytes", weight_bytes(m, p)},
              {"experts", m.experts}};
    json comp = json::object();
    if (!m.companion_text_encoders.empty()) comp["text_encoders"] = m.companion_text_encoders;
    if (!m.companion_vae.empty()) comp["vae"] = m.companion_vae;
    if (!m.companion_clip_vision.empty()) comp["clip_vision"] = m.companion_clip_vision;
    j["companions"] = comp;
    if (m.data->contains("defaults")) j["defaults"] = (*m.data)["defaults"];
    out["models"].push_back(j);
  }
  out["precisions"] = json::array();
  for (const auto& p : c.precisions) {
    json j = {{"name", p.name},
              {"aliases", p.aliases},
              {"kind", precision_kind_name(p.kind)},
              {"bits_per_weight", p.bits_per_weight()},
              {"elems_per_block", p.elems_per_block},
              {"bytes_per_block", p.bytes_per_block}};
    j["ggml_type"] = p.ggml_type >= 0 ? json(p.ggml_type) : json(nullptr);
    out["precisions"].push_back(j);
  }
  out["runtime"] = c.runtime ? *c.runtime : json::object();  // constants with sources, for the Python nodes
  out["gpus"] = json::array();
  for (const auto& g : c.gpus) {
    out["gpus"].push_back({{"name", g.name},
                           {"aliases", g.aliases},
                           {"memory_bytes", g.memory_bytes},
                           {"memory_gb", g.memory_gb},
                           {"price_eur_per_hour", g.price_eur_per_hour ? json(*g.price_eur_per_hour) : json(nullptr)},
                           {"fp8_compute", g.fp8_compute ? json(*g.fp8_compute) : json(nullptr)}});
  }
  // Listed as the file has them, once the planner has checked every field (a broken presets.json is an
  // error here too, not an empty list).
  planner_preset_data();
  out["presets"] = data_file("presets.json").at("presets");
  out["verdicts"] = verdicts_json();
  return out;
}

}  // namespace headroom::api
