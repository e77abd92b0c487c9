// The calibration rule: bounded medians of measured/predicted from the history's runs.
#include "core/calibrate/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <tuple>

#include "core/base/error.hpp"
#include "core/base/json_reader.hpp"
#include "core/catalog/catalog.hpp"

namespace headroom::calibrate {
namespace {

using nlohmann::json;

std::string at(const std::string& path, std::size_t i) { return path + "[" + std::to_string(i) + "]"; }

// A figure of the history: absent or null is "not measured"; anything but a whole number is refused,
// since a string or a negative byte count means the file was not written by the recorder.
std::optional<std::uint64_t> bytes_of(const json& object, const char* key, const std::string& path) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::nullopt;
  if (it->is_number_unsigned()) return it->get<std::uint64_t>();
  if (it->is_number_integer() && it->get<std::int64_t>() >= 0) return static_cast<std::uint64_t>(it->get<std::int64_t>());
  throw InputError(path + "." + key, "expected a whole number of bytes or null, got " + json_preview(*it));
}

std::string text_of(const json& object, const char* key, const std::string& path) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return "";
  if (!it->is_string()) throw InputError(path + "." + key, "expected text or null, got " + json_preview(*it));
  return it->get<std::string>();
}

// `path` names the element itself ("runs[2]").
const json& object_at(const json& list, std::size_t i, const std::string& path) {
  if (!list[i].is_object()) throw InputError(path, "expected an object, got " + json_preview(list[i]));
  return list[i];
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

const Rule& rule() {
  static const Rule r{static_cast<int>(runtime_constant("calibration_min_runs")),
                      static_cast<int>(runtime_constant("calibration_max_runs")),
                      runtime_constant("calibration_factor_min"), runtime_constant("calibration_factor_max")};
  return r;
}

json rule_json(const Rule& r) {
  return {{"min_runs", r.min_runs}, {"max_runs", r.max_runs}, {"factor_min", r.factor_min}, {"factor_max", r.factor_max}};
}

json to_json(const Correction& c) {
  return {{"model", c.model}, {"stage", c.stage}, {"card", c.card}, {"factor", c.factor}, {"runs", c.runs}};
}

Learned learn(const json& runs, const std::string& card, double since) {
  if (!runs.is_array()) throw InputError("runs", "expected the history's list of runs, got " + json_preview(runs));
  const Rule& r = rule();
  Learned out;
  using Key = std::tuple<std::string, std::string, std::string>;  // card, model, stage
  std::map<Key, std::vector<double>> ratios;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const std::string path = at("runs", i);
    const json& run = object_at(runs, i, path);
    ++out.runs_seen;
    const json* runtime = run.contains("runtime") && run["runtime"].is_object() ? &run["runtime"] : nullptr;
    const std::string device = runtime ? text_of(*runtime, "device", path + ".runtime") : "";
    const auto started = run.find("started");
    if (started != run.end() && !started->is_null() && !started->is_number())
      throw InputError(path + ".started", "expected unix seconds or null, got " + json_preview(*started));
    const bool recent = since <= 0 || (started != run.end() && started->is_number() && started->get<double>() >= since);
    const bool ok = text_of(run, "outcome", path) == "ok" && !device.empty() && (card.empty() || device == card) && recent;
    auto st = run.find("stages");
    if (st == run.end() || st->is_null()) continue;
    if (!st->is_array()) throw InputError(path + ".stages", "expected a list, got " + json_preview(*st));
    for (std::size_t k = 0; k < st->size(); ++k) {
      const std::string spath = at(path + ".stages", k);
      const json& stage = object_at(*st, k, spath);
      const std::string name = text_of(stage, "name", spath), model = text_of(stage, "model", spath);
      auto predicted = bytes_of(stage, "predicted_uncalibrated_bytes", spath);
      if (!predicted) predicted = bytes_of(stage, "predicted_bytes", spath);
      const auto measured = bytes_of(stage, "measured_bytes", spath);
      if (!ok || name.empty() || model.empty() || !predicted || !measured || *predicted == 0 || *measured == 0) {
        ++out.stages_skipped;
        continue;
      }
      auto& v = ratios[{device, model, name}];
      // Runs come newest first: the key's newest max_runs stages count, older ones are left out.
      if (static_cast<int>(v.size()) >= r.max_runs) {
        ++out.stages_skipped;
        continue;
      }
      v.push_back(static_cast<double>(*measured) / static_cast<double>(*predicted));
    }
  }
  for (const auto& [key, v] : ratios) {
    if (static_cast<int>(v.size()) < r.min_runs) {
      out.stages_skipped += static_cast<int>(v.size());
      continue;
    }
    out.stages_used += static_cast<int>(v.size());
    out.corrections.push_back({std::get<1>(key), std::get<2>(key), std::get<0>(key),
                               std::clamp(median(v), r.factor_min, r.factor_max), static_cast<int>(v.size())});
  }
  return out;
}

std::vector<Correction> read_corrections(const json& list, const std::string& field) {
  if (!list.is_array())
    throw InputError(field, "expected a list of {model, stage, factor, runs, card} (the answer of calibrate), got " +
                                json_preview(list));
  const Rule& r = rule();
  std::vector<Correction> out;
  std::set<std::pair<std::string, std::string>> seen;
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string path = at(field, i);
    const json& e = object_at(list, i, path);
    for (auto it = e.begin(); it != e.end(); ++it)
      if (it.key() != "model" && it.key() != "stage" && it.key() != "factor" && it.key() != "runs" && it.key() != "card")
        throw InputError(path + "." + it.key(), "unknown key; expected model, stage, factor, runs and card");
    Correction c;
    for (const char* key : {"model", "stage"}) {
      const std::string t = text_of(e, key, path);
      if (t.empty()) throw InputError(path + "." + key, "expected non-empty text, got " + json_preview(e.value(key, json())));
      (std::string(key) == "model" ? c.model : c.stage) = t;
    }
    c.card = text_of(e, "card", path);
    const json f = e.value("factor", json());
    if (!f.is_number() || !std::isfinite(f.get<double>()) || f.get<double>() < r.factor_min || f.get<double>() > r.factor_max)
      throw InputError(path + ".factor", "expected a number from " + json_preview(json(r.factor_min)) + " to " +
                                             json_preview(json(r.factor_max)) + " (the rule's clamp), got " + json_preview(f));
    c.factor = f.get<double>();
    const json n = e.value("runs", json());
    if (!n.is_number_integer() || n.get<std::int64_t>() < r.min_runs || n.get<std::int64_t>() > 1000000)
      throw InputError(path + ".runs", "expected a whole number of runs from " + std::to_string(r.min_runs) +
                                           " (the rule's minimum) to 1000000, got " + json_preview(n));
    c.runs = static_cast<int>(n.get<std::int64_t>());
    if (!seen.insert({c.model, c.stage}).second)
      throw InputError(path, "a second correction for " + c.model + " in " + c.stage +
                                 "; pass the corrections of one card only (the calibrate answer's entries with its card)");
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace headroom::calibrate
