// History lines -> runs. Each line stands alone: an event is applied to the run of its prompt_id, so a
// run whose end was never written (the process was killed) still has every figure written before.
#include "core/runs/runs.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include "core/base/error.hpp"
#include "core/base/file_reader.hpp"
#include "core/base/json_reader.hpp"
#include "core/base/units.hpp"
#include "core/catalog/catalog.hpp"

namespace headroom::runs {
namespace {

// A byte count as written, or null: a negative, fractional or non-numeric value is not a measurement.
json bytes_or_null(const json& e, const char* key) {
  auto it = e.find(key);
  if (it == e.end()) return nullptr;
  if (it->is_number_unsigned()) return *it;
  if (it->is_number_integer() && it->get<std::int64_t>() >= 0) return it->get<std::uint64_t>();
  return nullptr;
}

std::optional<double> number(const json& e, const char* key) {
  auto it = e.find(key);
  if (it == e.end() || !it->is_number()) return std::nullopt;
  return it->get<double>();
}

json max_of(const json& a, const json& b) {
  if (a.is_null()) return b;
  if (b.is_null()) return a;
  return std::max(a.get<std::uint64_t>(), b.get<std::uint64_t>());
}

json min_of(const json& a, const json& b) {
  if (a.is_null()) return b;
  if (b.is_null()) return a;
  return std::min(a.get<std::uint64_t>(), b.get<std::uint64_t>());
}

// Host figures of the last event that carried them: what a killed run leaves.
struct HostFigures {
  json rss = nullptr, ram_available = nullptr, swap_used = nullptr;
  void take(const json& e) {
    for (auto [field, key] : {std::pair{&rss, "rss_bytes"}, {&ram_available, "ram_available_bytes"},
                              {&swap_used, "swap_used_bytes"}}) {
      json v = bytes_or_null(e, key);
      if (!v.is_null()) *field = v;
    }
  }
};

struct Run {
  std::string prompt_id;
  double started = 0;
  std::optional<double> ended;
  std::string outcome;  // "" until an end event
  json message = nullptr;
  json runtime = {{"loader", nullptr}, {"device", nullptr}, {"vram_total_bytes", nullptr}};
  json ram_total = nullptr;
  json prediction = nullptr;  // the predict event
  std::vector<json> nodes;    // node events, in order
  std::vector<json> timeline;
  std::string current_node_id, current_node_type;  // of the last node_start
  HostFigures last;
};

// The stage a node runs under, as the prediction's node_stages says; nodes of no stage (loaders, savers,
// a node the estimate does not know) are filed together under "other".
std::string stage_of(const Run& r, const std::string& node_id) {
  if (r.prediction.is_object()) {
    auto ns = r.prediction.find("node_stages");
    if (ns != r.prediction.end() && ns->is_object()) {
      auto it = ns->find(node_id);
      if (it != ns->end() && it->is_string()) return it->get<std::string>();
    }
  }
  return "other";
}

// The model file of a stage, from the prediction's job: the component that stage loads.
json stage_model(const json& prediction, const std::string& stage) {
  if (!prediction.is_object() || !prediction.contains("job") || !prediction["job"].is_object()) return nullptr;
  const json& job = prediction["job"];
  const char* component = stage == "sample" ? "diffusion"
                          : stage == "text_encode" ? "text_encoders"
                          : stage == "clip_vision_encode" ? "clip_vision"
                          : stage == "audio_encode" ? "audio_encoder"
                          : (stage == "vae_decode" || stage == "vae_encode") ? "vae" : nullptr;
  if (component == nullptr || !job.contains(component)) return nullptr;
  json c = job[component];
  if (c.is_array()) c = c.empty() ? json(nullptr) : c[0];
  if (!c.is_object()) return nullptr;
  std::string file = text_of(c, "file");
  if (file.empty()) return nullptr;
  return path_file_name(file);  // the history holds file names only; an older line may hold more
}

// The stage as the plan predicted it; for a workflow the plan could not size as a whole, as it sized that
// stage alone (the plan's sized_stages: a VAE decode without its diffusion model).
json predicted_stage(const json& prediction, const std::string& stage) {
  if (!prediction.is_object()) return nullptr;
  for (const char* key : {"stages", "sized_stages"}) {
    auto list = prediction.find(key);
    if (list == prediction.end() || !list->is_array()) continue;
    for (const auto& s : *list)
      if (s.is_object() && text_of(s, "name") == stage) return s;
  }
  return nullptr;
}

json stage_json(const Run& r, const std::string& name, const std::vector<const json*>& nodes) {
  json out = {{"name", name}, {"model", stage_model(r.prediction, name)}, {"nodes", json::array()}};
  double wall = 0;
  json reserved = nullptr, allocated = nullptr, rss = nullptr, pinned = nullptr, available = nullptr,
       swap = nullptr, aimdo = nullptr, host_peak = nullptr, host_added = nullptr;
  for (const json* n : nodes) {
    const double w = number(*n, "wall_s").value_or(0);
    wall += w;
    json node_reserved = bytes_or_null(*n, "peak_reserved_bytes"), node_allocated = bytes_or_null(*n, "peak_allocated_bytes");
    out["nodes"].push_back({{"id", text_of(*n, "id")}, {"type", text_of(*n, "type")}, {"wall_s", w},
                            {"peak_reserved_bytes", node_reserved}, {"peak_allocated_bytes", node_allocated}});
    // The host memory a node added over the RSS it started from: on the CPU every tensor of the node is
    // there, so this is what the stage needed on that device (a GPU run stages weights there too).
    json node_peak = bytes_or_null(*n, "peak_rss_bytes"), node_start = bytes_or_null(*n, "rss_start_bytes");
    host_peak = max_of(host_peak, node_peak);
    if (!node_peak.is_null() && !node_start.is_null())
      host_added = max_of(host_added, node_peak.get<std::uint64_t>() > node_start.get<std::uint64_t>()
                                          ? node_peak.get<std::uint64_t>() - node_start.get<std::uint64_t>()
                                          : 0);
    reserved = max_of(reserved, node_reserved);
    allocated = max_of(allocated, node_allocated);
    rss = max_of(rss, bytes_or_null(*n, "rss_bytes"));
    pinned = max_of(pinned, bytes_or_null(*n, "pinned_bytes"));
    available = min_of(available, bytes_or_null(*n, "ram_available_bytes"));
    swap = max_of(swap, bytes_or_null(*n, "swap_used_bytes"));
    if (n->contains("aimdo") && (*n)["aimdo"].is_object()) aimdo = (*n)["aimdo"];
  }
  const json p = predicted_stage(r.prediction, name);
  auto predicted = [&](const char* key) { return p.is_null() ? json(nullptr) : bytes_or_null(p, key); };
  out["wall_s"] = wall;
  out["predicted_bytes"] = predicted("peak_bytes");
  // What the estimate said before a calibration scaled it: the figure the calibration learner compares
  // measurements with (core/calibrate), so a correction never feeds on itself.
  json uncalibrated = predicted("uncalibrated_peak_bytes");
  out["predicted_uncalibrated_bytes"] = uncalibrated.is_null() ? out["predicted_bytes"] : uncalibrated;
  out["predicted_min_bytes"] = predicted("min_bytes");
  // The estimate gives the weights streamed per forward pass per model; the stage streams their sum.
  json streamed = p.is_null() ? json(nullptr) : predicted("streamed_bytes");
  if (!p.is_null() && p.contains("streamed_bytes") && p["streamed_bytes"].is_object()) {
    std::uint64_t sum = 0;
    for (const auto& bytes : p["streamed_bytes"])
      if (bytes.is_number_unsigned()) sum += bytes.get<std::uint64_t>();
    streamed = sum;
  }
  out["predicted_streamed_bytes"] = streamed;
  // The estimate gives host RAM for the run as a whole; each predicted stage carries that figure.
  out["predicted_host_bytes"] = p.is_null() ? json(nullptr) : bytes_or_null(r.prediction, "host_ram_bytes");
  out["measured_bytes"] = reserved;
  out["measured_allocated_bytes"] = allocated;
  out["measured_host_peak_bytes"] = host_peak;
  out["measured_host_added_bytes"] = host_added;
  out["rss_bytes"] = rss;
  out["pinned_bytes"] = pinned;
  out["ram_available_bytes"] = available;
  out["swap_used_bytes"] = swap;
  out["aimdo"] = aimdo;
  return out;
}

json stages_json(const Run& r) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<const json*>> by_stage;
  for (const auto& n : r.nodes) {
    std::string s = stage_of(r, text_of(n, "id"));
    if (!by_stage.count(s)) order.push_back(s);
    by_stage[s].push_back(&n);
  }
  json out = json::array();
  for (const auto& s : order) out.push_back(stage_json(r, s, by_stage[s]));
  return out;
}

json timeline_json(const Run& r) {
  const std::size_t step = r.timeline.size() / kMaxTimelinePoints + 1;
  json out = json::array();
  for (std::size_t i = 0; i < r.timeline.size(); i += step) out.push_back(r.timeline[i]);
  if (!r.timeline.empty() && (r.timeline.size() - 1) % step != 0) out.push_back(r.timeline.back());
  return out;
}

// Why a run stopped without an end event, from the last host figures it left.
json unfinished_json(const Run& r, bool active) {
  const std::string stage = r.current_node_id.empty() ? "" : stage_of(r, r.current_node_id);
  std::string cause = "unknown";
  if (!active && !r.last.ram_available.is_null() && !r.ram_total.is_null() && r.ram_total.get<std::uint64_t>() > 0) {
    const double share = r.last.ram_available.get<double>() / r.ram_total.get<double>();
    if (share < runtime_constant("unfinished_run_ram_low_fraction")) cause = "host_ram_exhausted";
  }
  return {{"stage", stage.empty() ? json(nullptr) : json(stage)},
          {"node", r.current_node_id.empty() ? json(nullptr)
                                             : json{{"id", r.current_node_id}, {"type", r.current_node_type}}},
          {"rss_bytes", r.last.rss}, {"ram_available_bytes", r.last.ram_available},
          {"swap_used_bytes", r.last.swap_used}, {"likely_cause", active ? json(nullptr) : json(cause)}};
}

std::string unfinished_message(const json& u) {
  auto figure = [](const json& v) { return v.is_null() ? std::string("unknown") : format_bytes(v.get<std::uint64_t>()); };
  std::string where = "before its first node";
  if (!u["node"].is_null()) {
    const std::string node = u["node"]["type"].get<std::string>() + " #" + u["node"]["id"].get<std::string>();
    where = u["stage"] == "other" ? "in " + node : "in stage " + u["stage"].get<std::string>() + " (" + node + ")";
  }
  std::string out = "the run stopped " + where + " without an end: the process used " + figure(u["rss_bytes"]) +
                    " of RAM, " + figure(u["ram_available_bytes"]) + " of system RAM was available, " +
                    figure(u["swap_used_bytes"]) + " of swap in use; ";
  if (u["likely_cause"] == "host_ram_exhausted")
    return out + "host RAM was near exhaustion, so the OS most likely ended ComfyUI (the Linux OOM killer, "
                 "or Windows when the page file cannot grow); lower host RAM use (smaller text encoder "
                 "precision, --cache-none, a larger page file)";
  return out + "no error was recorded (the window was closed, the process crashed or was killed)";
}

json run_json(const Run& r, const Options& options) {
  const bool finished = !r.outcome.empty();
  const bool active = !finished && !options.active_prompt_id.empty() && r.prompt_id == options.active_prompt_id;
  json out = {{"prompt_id", r.prompt_id},
              {"started", r.started},
              {"ended", r.ended ? json(*r.ended) : json(nullptr)},
              {"outcome", finished ? r.outcome : "unfinished"},
              {"message", r.message},
              {"runtime", r.runtime},
              {"ram_total_bytes", r.ram_total},
              {"stages", stages_json(r)},
              {"timeline", timeline_json(r)},
              {"active", active}};
  if (!finished) {
    out["unfinished"] = unfinished_json(r, active);
    out["message"] = active ? json("running now") : json(unfinished_message(out["unfinished"]));
  }
  return out;
}

const char* const kOutcomes[] = {"ok", "oom", "error", "interrupted"};

class Reader {
 public:
  explicit Reader(const Options& o) : options_(o) {}

  void line(const std::string& l) {
    if (l.find_first_not_of(" \t\r") == std::string::npos) return;
    json e;
    try {
      e = read_json(l, "history", {16, true, "", ""});
    } catch (const FileFormatError&) {
      return skip("damaged");  // a line cut by a kill, or not ours
    }
    auto v = number(e, "v");
    if (!v) return skip("damaged");
    if (*v > kHistoryVersion) return skip("newer_version");
    const std::string ev = text_of(e, "ev"), id = text_of(e, "prompt_id");
    auto t = number(e, "t");
    if (ev.empty() || id.empty() || !t) return skip("damaged");
    if (!apply(ev, id, *t, e)) skip("damaged");
  }

  void too_long() { skip("too_long"); }

  json finish() {
    std::vector<const Run*> order;
    for (const auto& r : runs_) order.push_back(&r);
    std::stable_sort(order.begin(), order.end(), [](const Run* a, const Run* b) { return a->started > b->started; });
    json out = {{"v", kHistoryVersion}, {"runs", json::array()}, {"skipped_lines", skipped_total_},
                {"skipped", skipped_}};
    for (std::size_t i = 0; i < order.size() && i < options_.limit; ++i) out["runs"].push_back(run_json(*order[i], options_));
    return out;
  }

 private:
  const Options& options_;
  std::vector<Run> runs_;
  std::map<std::string, std::size_t> latest_;  // prompt_id -> its newest run
  json skipped_ = {{"damaged", 0}, {"too_long", 0}, {"newer_version", 0}};
  std::size_t skipped_total_ = 0;

  void skip(const char* why) {
    skipped_[why] = skipped_[why].get<std::size_t>() + 1;
    ++skipped_total_;
  }

  Run& run_for(const std::string& id, double t, bool fresh) {
    auto it = latest_.find(id);
    // A start for a prompt_id seen before is a new run of it (an API client may reuse its id).
    if (it == latest_.end() || fresh) {
      runs_.push_back(Run{});
      runs_.back().prompt_id = id;
      runs_.back().started = t;
      latest_[id] = runs_.size() - 1;
      return runs_.back();
    }
    return runs_[it->second];
  }

  bool apply(const std::string& ev, const std::string& id, double t, const json& e) {
    if (ev == "start") {
      Run& r = run_for(id, t, true);
      if (e.contains("runtime") && e["runtime"].is_object()) {
        const json& rt = e["runtime"];
        r.runtime = {{"loader", text_of(rt, "loader").empty() ? json(nullptr) : json(text_of(rt, "loader"))},
                     {"device", text_of(rt, "device").empty() ? json(nullptr) : json(text_of(rt, "device"))},
                     {"vram_total_bytes", bytes_or_null(rt, "vram_total_bytes")}};
      }
      r.ram_total = bytes_or_null(e, "ram_total_bytes");
      r.last.take(e);
      return true;
    }
    Run& r = run_for(id, t, false);
    if (ev == "predict") {
      if (!e.contains("prediction") || !e["prediction"].is_object()) return false;
      r.prediction = e["prediction"];
    } else if (ev == "node_start") {
      r.current_node_id = text_of(e, "id");
      r.current_node_type = text_of(e, "type");
      r.last.take(e);
    } else if (ev == "node") {
      if (text_of(e, "id").empty()) return false;
      r.nodes.push_back(e);
      r.last.take(e);
      point(r, t, e);
    } else if (ev == "sample") {
      r.last.take(e);
      point(r, t, e);
    } else if (ev == "end") {
      const std::string outcome = text_of(e, "outcome");
      if (std::find(std::begin(kOutcomes), std::end(kOutcomes), outcome) == std::end(kOutcomes)) return false;
      r.outcome = outcome;
      r.ended = t;
      r.message = text_of(e, "message").empty() ? json(nullptr) : json(text_of(e, "message"));
    } else {
      return false;  // an event this version does not know
    }
    return true;
  }

  void point(Run& r, double t, const json& e) {
    json vram = bytes_or_null(e, "vram_bytes");
    if (vram.is_null()) vram = bytes_or_null(e, "peak_reserved_bytes");
    r.timeline.push_back({{"t", std::max(0.0, t - r.started)}, {"vram_bytes", vram}, {"ram_bytes", bytes_or_null(e, "rss_bytes")},
                          {"stage", r.current_node_id.empty() ? json(nullptr) : json(stage_of(r, r.current_node_id))}});
  }
};

}  // namespace

json parse_history(const std::string& text, const Options& options) {
  Reader reader(options);
  std::size_t begin = 0;
  while (begin < text.size()) {
    std::size_t end = text.find('\n', begin);
    if (end == std::string::npos) end = text.size();
    if (end - begin > kMaxLineBytes) reader.too_long();  // not copied: it is not read
    else reader.line(text.substr(begin, end - begin));
    begin = end + 1;
  }
  return reader.finish();
}

std::string rotated_path(const std::string& path) {
  const std::size_t slash = path.find_last_of("/\\");
  const std::size_t dot = path.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return path + ".1";
  return path.substr(0, dot) + ".1" + path.substr(dot);
}

}  // namespace headroom::runs
