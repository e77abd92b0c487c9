// Calibration from measured runs (docs/calibration.md): api::calibrate learns bounded per-stage
// corrections from history runs, estimate applies them and says so, bad input names its field.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "catch.hpp"
#include "support/input_errors.hpp"
#include "core/api/api.hpp"
#include "core/calibrate/calibration.hpp"

using namespace headroom;
using nlohmann::json;

namespace {

const std::string kCard = "NVIDIA test card";
const std::string kFile = "diffusion-under-test.safetensors";

// The estimate the recorder would have stored as the prediction: the same request, uncalibrated.
json base_request() {
  return {{"model", "flux1-dev"}, {"vram_bytes", 80ull << 30}, {"width", 1024}, {"height", 1024}};
}

const json& stage(const json& r, const std::string& name) {
  for (const auto& s : r["stages"])
    if (s["name"] == name) return s;
  FAIL("no stage " << name << " in " << r.dump().substr(0, 400));
  static json none;
  return none;
}

// One recorded run (the shared history contract) with the sample stage measured at `ratio` x predicted.
json run_with(std::uint64_t predicted, double ratio, const std::string& outcome = "ok", const std::string& card = kCard) {
  json sample = {{"name", "sample"}, {"model", kFile}, {"nodes", json::array()}, {"wall_s", 3.5},
                 {"predicted_bytes", predicted},
                 {"measured_bytes", static_cast<std::uint64_t>(std::llround(static_cast<double>(predicted) * ratio))}};
  json decode = {{"name", "vae_decode"}, {"model", "vae.safetensors"}, {"wall_s", 0.5}, {"predicted_bytes", 1u << 30},
                 {"measured_bytes", nullptr}};
  return {{"prompt_id", "p"}, {"started", 1764633600}, {"ended", 1764633610}, {"outcome", outcome}, {"message", nullptr},
          {"runtime", {{"loader", "legacy"}, {"device", card}, {"vram_total_bytes", 80ull << 30}}},
          {"stages", {sample, decode}}, {"timeline", json::array()}};
}

json learn(const json& runs) { return api::calibrate({{"runs", runs}, {"card", kCard}}); }

// The corrections against the diffusion model's catalog name, as a plan with file names would match kFile.
json as_catalog_name(json calibration) {
  for (auto& c : calibration) c["model"] = "flux1-dev";
  return calibration;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

TEST_CASE("after runs measured 1.25x the prediction, the estimate moves to the measurements and says so", "[calibrate]") {
  const json before = api::estimate(base_request());
  const std::uint64_t predicted = stage(before, "sample")["peak_bytes"];
  const std::vector<double> ratios = {1.20, 1.25, 1.30, 1.24, 1.26, 1.25};
  json runs = json::array();
  for (double r : ratios) runs.push_back(run_with(predicted, r));

  const json learned = learn(runs);
  REQUIRE(learned["calibration"].size() == 1);  // the decode stage has no measurement (CPU-like null)
  const json& c = learned["calibration"][0];
  CHECK(c["stage"] == "sample");
  CHECK(c["model"] == kFile);
  CHECK(c["card"] == kCard);
  CHECK(c["runs"] == 6);
  std::vector<double> measured_ratios;
  for (const auto& run : runs)
    measured_ratios.push_back(run["stages"][0]["measured_bytes"].get<double>() / static_cast<double>(predicted));
  CHECK(c["factor"].get<double>() == Approx(median(measured_ratios)).epsilon(1e-9));

  json request = base_request();
  request["calibration"] = as_catalog_name(learned["calibration"]);
  const json after = api::estimate(request);
  const json& s = stage(after, "sample");
  const double factor = c["factor"];
  CHECK(s["peak_bytes"].get<double>() == Approx(predicted * factor).margin(1));
  CHECK(s["uncalibrated_peak_bytes"] == predicted);
  CHECK(s["breakdown"]["calibration"].get<double>() == Approx(predicted * (factor - 1)).margin(1));
  CHECK(s["calibration"]["runs"] == 6);
  CHECK(after["calibrated"].size() == 1);
  CHECK(after["peak_bytes"].get<std::uint64_t>() >= s["peak_bytes"].get<std::uint64_t>());
  const auto& notes = after["notes"];
  CHECK(std::any_of(notes.begin(), notes.end(), [](const json& n) {
    return n.get<std::string>().find("calibrated from 6 runs on this card") != std::string::npos;
  }));
  // Stages no correction names keep the model's figure.
  CHECK(stage(after, "vae_decode")["peak_bytes"] == stage(before, "vae_decode")["peak_bytes"]);
  CHECK_FALSE(stage(after, "vae_decode").contains("calibration"));
}

TEST_CASE("the rule: too few runs give nothing, a wild median is clamped, only ok runs on the card count", "[calibrate]") {
  const calibrate::Rule& rule = calibrate::rule();
  const std::uint64_t predicted = 10ull << 30;
  json few = json::array();
  for (int i = 0; i + 1 < rule.min_runs; ++i) few.push_back(run_with(predicted, 1.5));
  CHECK(learn(few)["calibration"].empty());

  json wild = json::array();
  for (int i = 0; i < rule.min_runs; ++i) wild.push_back(run_with(predicted, rule.factor_max * 3));
  CHECK(learn(wild)["calibration"][0]["factor"] == rule.factor_max);
  json tiny = json::array();
  for (int i = 0; i < rule.min_runs; ++i) tiny.push_back(run_with(predicted, rule.factor_min / 3));
  CHECK(learn(tiny)["calibration"][0]["factor"] == rule.factor_min);

  json mixed = json::array();
  for (int i = 0; i < rule.min_runs; ++i) {
    mixed.push_back(run_with(predicted, 1.5, "oom"));
    mixed.push_back(run_with(predicted, 1.5, "ok", "another card"));
    mixed.push_back(run_with(predicted, 1.5, "interrupted"));
  }
  CHECK(learn(mixed)["calibration"].empty());
  mixed.push_back(run_with(predicted, 1.1));
  CHECK(learn(mixed)["calibration"].empty());  // one ok run on the card is below min_runs

  // Only the newest max_runs count: newer runs at 1.1 outvote any number of older ones at 1.9.
  json history = json::array();
  for (int i = 0; i < rule.max_runs; ++i) history.push_back(run_with(predicted, 1.1));
  for (int i = 0; i < rule.max_runs * 2; ++i) history.push_back(run_with(predicted, 1.9));
  const json learned = learn(history);
  CHECK(learned["calibration"][0]["runs"] == rule.max_runs);
  CHECK(learned["calibration"][0]["factor"].get<double>() == Approx(1.1).epsilon(1e-6));

  // A reset's time: runs started before it no longer count.
  json reset = json::array();
  for (int i = 0; i < rule.min_runs; ++i) reset.push_back(run_with(predicted, 1.5));
  CHECK(api::calibrate({{"runs", reset}, {"since", 1764633600}})["calibration"].size() == 1);
  CHECK(api::calibrate({{"runs", reset}, {"since", 1764633601}})["calibration"].empty());
}

TEST_CASE("a lower measured peak takes from the stage's working memory, never its weights", "[calibrate]") {
  const calibrate::Rule& rule = calibrate::rule();
  const json before = api::estimate(base_request());
  json request = base_request();
  request["calibration"] = {{{"model", "flux1-dev"}, {"stage", "sample"}, {"factor", 0.9}, {"runs", rule.min_runs}}};
  const json after = api::estimate(request);
  const json &b = stage(before, "sample"), &a = stage(after, "sample");
  CHECK(a["peak_bytes"].get<std::uint64_t>() < b["peak_bytes"].get<std::uint64_t>());
  std::uint64_t sum = 0;
  for (auto it = a["breakdown"].begin(); it != a["breakdown"].end(); ++it) {
    sum += it.value().get<std::uint64_t>();
    if (it.key().rfind("weights:", 0) == 0) CHECK(it.value() == b["breakdown"][it.key()]);
  }
  CHECK(sum == a["peak_bytes"]);
}

TEST_CASE("a calibrated peak never goes past the card: it never turns a run that runs into 'does not fit'", "[calibrate]") {
  json small = base_request();
  small["vram_bytes"] = 40ull << 30;
  const json before = api::estimate(small);
  REQUIRE(before["verdict"] != "does not fit");
  small["calibration"] = {{{"model", "flux1-dev"}, {"stage", "sample"}, {"factor", calibrate::rule().factor_max},
                           {"runs", calibrate::rule().min_runs}}};
  const json after = api::estimate(small);
  CHECK(stage(after, "sample")["peak_bytes"].get<std::uint64_t>() <= (40ull << 30));
  CHECK(after["verdict"] != "does not fit");
}

TEST_CASE("bad calibration input is refused naming the field", "[calibrate]") {
  const calibrate::Rule& rule = calibrate::rule();
  auto field = [](json calibration) {
    json r = base_request();
    r["calibration"] = std::move(calibration);
    return support::input_error_field([&] { api::estimate(r); });
  };
  const json ok = {{"model", "flux1-dev"}, {"stage", "sample"}, {"factor", 1.2}, {"runs", rule.min_runs}};
  CHECK(field(json::array({ok})) == "(no InputError)");
  CHECK(field(json::object()) == "calibration");
  CHECK(field(json::array({1})) == "calibration[0]");
  auto with = [&](const char* key, json value) {
    json e = ok;
    if (value.is_discarded()) e.erase(key);
    else e[key] = std::move(value);
    return json::array({e});
  };
  CHECK(field(with("model", json::value_t::discarded)) == "calibration[0].model");
  CHECK(field(with("stage", "")) == "calibration[0].stage");
  CHECK(field(with("stage", "upscale")) == "calibration[0].stage");
  CHECK(field(with("factor", rule.factor_max * 2)) == "calibration[0].factor");
  CHECK(field(with("factor", "1.2")) == "calibration[0].factor");
  CHECK(field(with("runs", rule.min_runs - 1)) == "calibration[0].runs");
  CHECK(field(with("runs", 2.5)) == "calibration[0].runs");
  CHECK(field(with("card", 7)) == "calibration[0].card");
  CHECK(field(with("why", "x")) == "calibration[0].why");
  CHECK(field(json::array({ok, ok})) == "calibration[1]");
  // The plan request takes the same field by the same rules.
  CHECK(support::input_error_field([&] {
          api::plan({{"workflow", json::object()}, {"calibration", with("factor", -1)}});
        }) == "calibration[0].factor");

  // The learner names the path of a figure the recorder never writes.
  json runs = json::array({run_with(1u << 30, 1.2)});
  runs[0]["stages"][0]["measured_bytes"] = "lots";
  CHECK(support::input_error_field([&] { learn(runs); }) == "runs[0].stages[0].measured_bytes");
  CHECK(support::input_error_field([&] { api::calibrate({{"runs", json::array({"x"})}}); }) == "runs[0]");
  CHECK(support::input_error_field([&] { api::calibrate(json::object()); }) == "runs");
}
