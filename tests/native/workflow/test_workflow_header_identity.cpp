// --models reads each model file's header once, however the workflow spells its path (issue 27, item 5:
// ten spellings of one 28.6 MB header took 49 s, one took 4.3 s), and the next prompt does not read it
// again while the file is unchanged.
#include <chrono>
#include <filesystem>
#include <string>
#include <vector>

#include "catch.hpp"
#include "core/inspect/header_cache.hpp"
#include "core/workflow/workflow.hpp"
#include "model_file_builders.hpp"

using namespace headroom;
namespace fs = std::filesystem;

namespace {

nlohmann::json unet_loaders(const std::vector<std::string>& names) {
  nlohmann::json wf = nlohmann::json::object();
  for (std::size_t i = 0; i < names.size(); ++i)
    wf[std::to_string(i + 1)] = {{"class_type", "UNETLoader"},
                                 {"inputs", {{"unet_name", names[i]}, {"weight_dtype", "default"}}}};
  return wf;
}

std::size_t notes_reading(const workflow::WorkflowInfo& info) {
  std::size_t n = 0;
  for (const auto& note : info.job.notes)
    if (note.find("the header of") != std::string::npos || note.find("read from") != std::string::npos) ++n;
  return n;
}

}  // namespace

TEST_CASE("--models: one header read for ten spellings of one file, none for the next prompt", "[workflow][models_dir][header_cache]") {
  testfiles::TempDir dir;
  const std::string models = dir.file("models");
  fs::create_directories(fs::u8path(models + "/diffusion_models"));
  const std::string file = models + "/diffusion_models/unet.safetensors";
  testfiles::write_safetensors(file, {{"w", "BF16", {16, 16}}});
  const std::vector<std::string> spellings = {
      "unet.safetensors",     "./unet.safetensors",   ".//unet.safetensors",   "././unet.safetensors",
      ".///unet.safetensors", "./././unet.safetensors", ".//.//unet.safetensors", "././/unet.safetensors",
      ".//./unet.safetensors", "./././/unet.safetensors"};
  workflow::ParseOptions options;
  options.models_dir = models;
  clear_header_cache();

  // Just written, so the process-wide cache does not keep it yet: one read per analysis, by identity.
  auto info = workflow::analyse_workflow(unet_loaders(spellings), "ten.json", options);
  CHECK(header_cache_counts().reads == 1);
  CHECK(notes_reading(info) == spellings.size());  // every loader still says where its facts came from

  fs::last_write_time(fs::u8path(file), fs::file_time_type::clock::now() - std::chrono::hours(1));
  workflow::analyse_workflow(unet_loaders(spellings), "ten.json", options);
  CHECK(header_cache_counts().reads == 2);
  // The next prompt, on another path spelling: answered from the process-wide cache.
  workflow::analyse_workflow(unet_loaders({"./unet.safetensors"}), "one.json", options);
  workflow::analyse_workflow(unet_loaders(spellings), "ten.json", options);
  CHECK(header_cache_counts().reads == 2);
}
