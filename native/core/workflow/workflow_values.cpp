#include "core/workflow/workflow_values.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include "core/workflow/resolution_rule.hpp"

namespace headroom::workflow {

std::string text(const std::optional<json>& v) { return v && v->is_string() ? v->get<std::string>() : ""; }

std::optional<long long> integer(const std::optional<json>& v) {
  if (!v) return std::nullopt;
  if (v->is_number_integer()) return v->get<long long>();
  if (v->is_number_float()) {
    // Whole values only, and only where the conversion is defined (1e300 would be undefined behaviour).
    const double d = v->get<double>();
    if (d != std::floor(d) || !(std::fabs(d) < 9.0e18)) return std::nullopt;
    return static_cast<long long>(d);
  }
  return std::nullopt;
}

// A link to a node that passes a widget on (the frontend's PrimitiveNode, PrimitiveInt, Int,
// WanCameraEmbedding's width/height/length) is followed to that widget, so the value that really runs is
// read, not the stale copy the receiving node keeps. `where` lists the source first, then that copy, so a
// rewrite changes both and the workflow stays consistent in the editor. A number sent as text ("960", as
// a custom Int node stores it) counts as the number.
namespace {

// The width (slot 0) or height (slot 1) a ResolutionSelector computes from its own widgets, each possibly
// linked to a value node; nothing when a widget is missing or its aspect choice is not in the rule.
std::optional<json> resolution_output(const Graph& g, const Node& src, const ResolutionRule& rule, int slot, int depth) {
  if (slot != 0 && slot != 1) return std::nullopt;
  auto number = [&](const std::string& widget) -> std::optional<double> {
    if (widget.empty()) return std::nullopt;
    const auto v = resolved_value(g, src, widget, nullptr, depth + 1);
    return v && v->is_number() ? std::optional<double>(v->get<double>()) : std::nullopt;
  };
  const auto aspect = resolved_value(g, src, rule.aspect_ratio, nullptr, depth + 1);
  const auto megapixels = number(rule.megapixels);
  if (!aspect || !aspect->is_string() || !megapixels) return std::nullopt;
  const auto ratio = rule.ratios.find(aspect->get<std::string>());
  if (ratio == rule.ratios.end()) return std::nullopt;
  const auto multiple = number(rule.multiple), minimum = number(rule.minimum);
  const auto sides = resolution_sides(ratio->second, *megapixels, static_cast<long long>(multiple.value_or(8)),
                                      static_cast<long long>(minimum.value_or(0)));
  if (!sides) return std::nullopt;
  return json(slot == 0 ? sides->first : sides->second);
}

}  // namespace

std::optional<json> resolved_value(const Graph& g, const Node& n, const std::string& name, std::vector<Pointer>* where,
                                   int depth) {
  const Input* in = n.input(name);
  if (in && in->from_node && depth < 16) {
    const Node* src = g.node(*in->from_node);
    const ComfyNode* info = src ? node_info(src->type) : nullptr;
    // A computed size is the computation's, not the receiver's stale copy; no widget holds it to rewrite.
    if (info && info->resolution)
      if (auto v = resolution_output(g, *src, *info->resolution, in->from_slot, depth)) return v;
    if (info && in->from_slot >= 0 && static_cast<std::size_t>(in->from_slot) < info->value_outputs.size() &&
        !info->value_outputs[in->from_slot].empty()) {
      if (auto v = resolved_value(g, *src, info->value_outputs[in->from_slot], where, depth + 1)) {
        if (where) where->insert(where->end(), in->where.begin(), in->where.end());
        if (v->is_string()) {
          const std::string t = v->get<std::string>();
          if (!t.empty() && t.size() < 10 && std::all_of(t.begin(), t.end(), [](unsigned char c) { return std::isdigit(c); }))
            return json(std::stoll(t));
        }
        return v;
      }
    }
  }
  return g.value(n, name, where);
}

const Node* source_of(const Graph& g, const Node& n, const std::string& name) {
  const Input* in = n.input(name);
  const Node* from = in && in->from_node ? g.node(*in->from_node) : nullptr;
  for (int hops = 0; from && is_virtual(from->type) && hops < 64; ++hops) {
    const Input* through = passed_input(*from);
    from = through && through->from_node ? g.node(*through->from_node) : nullptr;
  }
  return from;
}

const Input* passed_input(const Node& n) {
  const ComfyNode* info = node_info(n.type);
  return info && info->is_virtual && info->passes ? n.input(*info->passes) : nullptr;
}

}  // namespace headroom::workflow
