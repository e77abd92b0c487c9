// libFuzzer target: the OOM message parser and diagnosis (api::explain, texts from the embedded oom_fixes.json).
#include <cstdlib>
#include <string>

#include "core/oom/oom_diagnose.hpp"
#include "core/oom/oom_parse.hpp"

extern "C" int LLVMFuzzerTestOneInput(const unsigned char* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  headroom::oom::Report r = headroom::oom::parse(text);
  if (r.recognised) r.diagnosis = headroom::oom::diagnose(r);
  if (headroom::oom::to_json(r).dump().empty()) std::abort();
  return 0;
}
