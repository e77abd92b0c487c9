// Paths that are not ASCII (a Windows user "José", a Chinese model folder): the core takes UTF-8 paths
// everywhere, and each reader must open them, on Linux and, through the wide Win32 calls, on Windows
// (this file is part of the MinGW test binary that runs under Wine).
#include <filesystem>

#include "catch.hpp"
#include "core/base/error.hpp"
#include "core/base/file_reader.hpp"
#include "core/inspect/inspector.hpp"
#include "core/workflow/workflow.hpp"
#include "model_file_builders.hpp"

using namespace headroom;

namespace {
// "modèles/日本語 ü" and "flux1-dev-fp8-é.safetensors", spelled as UTF-8 bytes so the source encoding
// cannot change them.
const std::string kFolder = "mod\xC3\xA8les-\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E \xC3\xBC";
const std::string kFile = "flux1-schnell-\xC3\xA9.safetensors";
}  // namespace

TEST_CASE("a model file under a non-ASCII folder and name is read and recognised", "[inspect][unicode]") {
  testfiles::TempDir dir;
  const std::string folder = dir.file(kFolder);
  std::filesystem::create_directory(std::filesystem::u8path(folder));
  const std::string path = folder + "/" + kFile;
  testfiles::write_safetensors(path, {{"model.diffusion_model.img_in.weight", "BF16", {3072, 64}}});
  FileSource source(path);
  CHECK(source.size() > 0);
  Inspection i = inspect_file(path);
  CHECK(i.format == "safetensors");
  CHECK(i.path == path);
  CHECK(i.whole.tensors == 1);
  CHECK(i.whole.parameters == 3072u * 64u);
}

TEST_CASE("a workflow whose path is not ASCII is read", "[workflow][unicode]") {
  testfiles::TempDir dir;
  const std::string path = dir.file("workflow-" + kFolder + ".json");
  testfiles::write_file(path, R"({"1": {"class_type": "EmptyLatentImage",
                                  "inputs": {"width": 512, "height": 768, "batch_size": 2}}})");
  CHECK(read_text_file(path, 1 << 20).find("EmptyLatentImage") != std::string::npos);
  workflow::WorkflowInfo info = workflow::analyse_workflow_file(path);
  CHECK(info.api_format);
  CHECK(info.latent_node == "EmptyLatentImage");
  CHECK(info.size_known);
  CHECK(info.job.width == 512);
  CHECK(info.job.height == 768);
}

TEST_CASE("a folder or a missing file under a non-ASCII name is refused by name", "[inspect][unicode]") {
  testfiles::TempDir dir;
  const std::string folder = dir.file(kFolder);
  std::filesystem::create_directory(std::filesystem::u8path(folder));
  try {
    FileSource s(folder);
    FAIL("a folder was opened as a model file");
  } catch (const Error& e) {
    CHECK(std::string(e.what()).find(kFolder) != std::string::npos);
    CHECK(std::string(e.what()).find("folder") != std::string::npos);
  }
  CHECK_THROWS_AS(FileSource(folder + "/" + kFile), Error);
}
