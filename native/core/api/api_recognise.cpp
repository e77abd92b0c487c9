// api::recognise: which catalog model and precision a state dict is, from tensor names, dtypes and
// shapes alone (what ComfyUI holds in memory after loading a file whose path we do not know). It feeds
// the same summarise() as `inspect`, so a state dict and the file it came from get the same answer.
#include <map>

#include "core/api/api.hpp"
#include "core/base/data_files.hpp"
#include "core/base/error.hpp"
#include "core/base/request_fields.hpp"
#include "core/inspect/inspector.hpp"
#include "core/base/json_reader.hpp"

namespace headroom::api {
namespace {

// Bytes per element of the dtypes a loaded state dict can hold, in the catalog's spelling.
const std::map<std::string, std::uint64_t>& element_bytes() {
  static const std::map<std::string, std::uint64_t> t = {
      {"fp64", 8}, {"fp32", 4}, {"fp16", 2}, {"bf16", 2}, {"fp8_e4m3fn", 1}, {"fp8_e5m2", 1},
      {"int64", 8}, {"int32", 4}, {"int16", 2}, {"int8", 1}, {"uint8", 1}, {"bool", 1}};
  return t;
}

// A state dict has at most a few thousand tensors; the cap keeps a hostile request from costing more.
constexpr std::size_t kMaxTensors = 200000;
constexpr std::size_t kMaxRank = 8;

}  // namespace

const request::Fields& recognise_fields() {
  static const request::Fields f = {
      {"tensors", request::Kind::Object, "{name: {dtype, shape}} of a state dict", 0, 0, {}, true}};
  return f;
}

json recognise(const json& body) {
  const request::Request request(body, "recognise", recognise_fields());
  auto it = body.find("tensors");
  if (it->empty())
    throw InputError("tensors", "expected an object {name: {dtype, shape}} with at least one tensor");
  if (it->size() > kMaxTensors)
    throw InputError("tensors", "expected at most " + std::to_string(kMaxTensors) + " tensors, got " +
                                    std::to_string(it->size()));
  ModelFile file;
  file.path = "(state dict)";
  file.format = "state_dict";
  for (const auto& kv : it->items()) {
    const std::string field = "tensors." + kv.key();
    const json& t = kv.value();
    if (!t.is_object() || !t.contains("dtype") || !t["dtype"].is_string() || !t.contains("shape") ||
        !t["shape"].is_array())
      throw InputError(field, "expected {\"dtype\": \"bf16\", \"shape\": [..]}, got " + json_preview(t));
    TensorRecord r;
    r.name = kv.key();
    r.dtype = t["dtype"].get<std::string>();
    auto eb = element_bytes().find(r.dtype);
    if (eb == element_bytes().end())
      throw InputError(field + ".dtype", "expected bf16, fp16, fp32, fp64, fp8_e4m3fn, fp8_e5m2 or an integer type, got " +
                                             json_preview(t["dtype"]));
    if (t["shape"].size() > kMaxRank) throw InputError(field + ".shape", "expected at most 8 dimensions");
    r.elements = 1;
    for (const auto& d : t["shape"]) {
      if (!d.is_number_unsigned() || d.get<std::uint64_t>() > (1ull << 40))
        throw InputError(field + ".shape", "expected sizes from 0 to 2^40, got " + json_preview(d));
      r.shape.push_back(d.get<std::uint64_t>());
      r.elements *= r.shape.back();
      if (r.elements > (1ull << 40)) throw InputError(field + ".shape", "expected at most 2^40 elements");
    }
    r.bytes = r.elements * eb->second;
    file.file_bytes += r.bytes;
    file.tensors.push_back(std::move(r));
  }
  json out = summarise(file, data_file("models.json")).to_json();
  out.erase("path");
  return out;
}

}  // namespace headroom::api
