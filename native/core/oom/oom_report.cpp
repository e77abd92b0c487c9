#include "core/oom/oom_report.hpp"

namespace headroom::oom {
namespace {

template <typename T>
nlohmann::json opt(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

const char* const kBackendNames[] = {"", "cuda", "rocm", "mps", "xpu", "directml", "vulkan", "metal", "cpu", "unknown"};
const char* const kSystemNames[] = {"", "linux", "windows", "macos"};
static_assert(sizeof kBackendNames / sizeof *kBackendNames == static_cast<int>(Backend::Unknown) + 1,
              "one name per Backend, in its order");
static_assert(sizeof kSystemNames / sizeof *kSystemNames == static_cast<int>(System::Macos) + 1,
              "one name per System, in its order");

}  // namespace

const char* backend_name(Backend b) { return kBackendNames[static_cast<int>(b)]; }
const char* system_name(System s) { return kSystemNames[static_cast<int>(s)]; }

std::optional<System> system_from_name(const std::string& word) {
  for (int i = static_cast<int>(System::Linux); i <= static_cast<int>(System::Macos); ++i)
    if (word == kSystemNames[i]) return static_cast<System>(i);
  return std::nullopt;
}

nlohmann::json to_json(const Report& r) {
  nlohmann::json j;
  j["recognised"] = r.recognised;
  j["format"] = r.recognised ? nlohmann::json(r.format) : nlohmann::json(nullptr);
  j["requested_bytes"] = opt(r.requested_bytes);
  j["total_bytes"] = opt(r.total_bytes);
  j["free_bytes"] = opt(r.free_bytes);
  j["allocated_bytes"] = opt(r.allocated_bytes);
  j["reserved_unallocated_bytes"] = opt(r.reserved_unallocated_bytes);
  j["reserved_total_bytes"] = opt(r.reserved_total_bytes);
  j["process_bytes"] = opt(r.process_bytes);
  if (r.other_processes) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& p : *r.other_processes) list.push_back({{"pid", p.pid}, {"bytes", p.bytes}});
    j["other_processes"] = list;
  } else {
    j["other_processes"] = nullptr;
  }
  j["gpu_index"] = opt(r.gpu_index);
  j["backend"] = r.recognised ? nlohmann::json(backend_name(r.backend)) : nlohmann::json(nullptr);
  j["origin"] = r.recognised ? nlohmann::json(r.origin) : nlohmann::json(nullptr);
  j["app"] = r.app.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.app);
  j["os"] = r.os == System::None ? nlohmann::json(nullptr) : nlohmann::json(system_name(r.os));
  j["extra"] = r.extra;
  j["notes"] = r.notes;
  if (r.recognised) {
    j["diagnosis"] = {{"id", r.diagnosis.id}, {"text", r.diagnosis.text}};
    nlohmann::json fixes = nlohmann::json::array();
    for (const auto& f : r.diagnosis.fixes) {
      nlohmann::json fix = {{"id", f.id}, {"text", f.text}};
      if (!f.preset.empty()) fix["preset"] = f.preset;
      fixes.push_back(fix);
    }
    j["fixes"] = fixes;
  } else {
    j["diagnosis"] = nullptr;
    j["fixes"] = nlohmann::json::array();
  }
  return j;
}

}  // namespace headroom::oom
