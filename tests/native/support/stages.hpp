#pragma once
// What the runtime tests share: a stage found by name in an estimate, and a sampling stage of 10 GiB of
// weights with 1 GiB of activations whose largest layer is `layer` bytes cast (`stored` as stored; 0 =
// the same), at 1e14 FLOPs per pass.
#include <string>

#include "catch.hpp"
#include "core/base/units.hpp"
#include "core/estimate/estimator.hpp"
#include "core/estimate/memory_model.hpp"

namespace support {

inline const headroom::Stage& stage_named(const headroom::Estimate& e, const std::string& name) {
  for (const auto& s : e.stages)
    if (s.name == name) return s;
  FAIL("no stage " << name);
  return e.stages.front();
}

inline headroom::StageDemand sampling_demand(std::uint64_t layer, std::uint64_t stored = 0) {
  headroom::StageDemand d;
  d.name = "sample";
  d.weights = {{"dit", 10 * headroom::GiB}};
  d.transient = {{"activations", 1 * headroom::GiB}};
  d.partial_loadable = true;
  d.stream_layer_bytes = layer;
  d.stored_layer_bytes = stored;
  d.flops_per_pass = 1e14;
  d.passes = 1;
  return d;
}

}  // namespace support
