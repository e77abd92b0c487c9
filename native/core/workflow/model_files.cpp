#include "core/workflow/model_files.hpp"

#include <filesystem>
#include <system_error>
#include <utility>

#include "core/base/units.hpp"
#include "core/catalog/catalog.hpp"
#include "core/workflow/workflow_names.hpp"

namespace headroom::workflow {

LoaderKind loader_kind(const std::string& role) {
  static const std::pair<const char*, LoaderKind> kKinds[] = {
      {"diffusion", LoaderKind::Diffusion}, {"checkpoint", LoaderKind::Checkpoint},
      {"text_encoder", LoaderKind::TextEncoder}, {"vae", LoaderKind::Vae}, {"clip_vision", LoaderKind::ClipVision},
      {"lora", LoaderKind::Lora}, {"style_model", LoaderKind::StyleModel}, {"audio_encoder", LoaderKind::AudioEncoder},
      {"model_patch", LoaderKind::ModelPatch}};
  for (const auto& [name, kind] : kKinds)
    if (role == name) return kind;
  return LoaderKind::Other;
}

const HeaderFacts& header_facts(ReaderState& st, const std::string& path, const std::string& role) {
  const std::optional<FileIdentity> id = file_identity(path);
  ReaderState::FactsKey key{id, id ? path_file_name(path) : path, role};
  auto it = st.facts.find(key);
  if (it == st.facts.end()) it = st.facts.emplace(std::move(key), read_header_facts(path, role)).first;
  return it->second;
}

std::optional<std::string> find_file(ReaderState& st, const std::string& file, const std::string& role) {
  if (auto path = find_in_model_folders(st.opt.model_folders, file, role)) return path;
  if (st.opt.models_dir.empty()) return std::nullopt;
  return find_model_file(st.opt.models_dir, file, role, &st.models_index);
}

namespace {

std::string searched(const ReaderState& st) {
  if (st.opt.model_folders.empty()) return st.opt.models_dir;
  return "ComfyUI's model folders" + (st.opt.models_dir.empty() ? std::string() : " or " + st.opt.models_dir);
}

void read_header(ReaderState& st, const Node& n, Component& c, const std::string& role, Loader& rec) {
  auto path = find_file(st, c.file, role);
  if (!path) {
    st.notes().push_back("'" + c.file + "' not found under " + searched(st) + "; estimated from its name");
    return;
  }
  const HeaderFacts& facts = header_facts(st, *path, role);
  if (!facts.error.empty()) {
    rec.file_problem = facts.file_problem;
    if (!facts.file_problem.empty()) {
      const std::string what = facts.file_problem == "empty"       ? "is empty (0 bytes)"
                               : facts.file_problem == "truncated" ? "is shorter than its header says (truncated)"
                               : facts.file_problem == "bad_header" ? "has a header that does not parse"
                                                                    : "cannot be read";
      rec.file_problem_text = n.type + " #" + n.id + " loads '" + c.file + "' (" + *path + "), which " + what +
                              (rec.broken() ? ": a broken download? Its size is unknown, and no verdict rests on it"
                                            : "; estimated from its name");
      st.notes().push_back(rec.file_problem_text + " (" + facts.error + ")");
      return;
    }
    st.notes().push_back("could not read the header of " + *path + " (" + facts.error + "); estimated from its name");
    return;
  }
  rec.size_source = "header";
  if (facts.model.empty()) {
    // What ComfyUI loads is the file, so the header decides over a name that may only share a word
    // with a catalog model (a latent upscaler named after the family it upscales for). The header's
    // byte count may cover tensors other than weights, so the file's size is stated only as the
    // least the unknown model holds.
    std::error_code ec;
    const std::uintmax_t size = std::filesystem::file_size(*path, ec);
    const std::string holds = ec ? std::string() : " (the file holds " + format_bytes(size) + ", the least it takes in memory)";
    if (const LoaderKind kind = loader_kind(role); kind == LoaderKind::Diffusion || kind == LoaderKind::Checkpoint) {
      // Nothing estimates an unknown model; its weight_bytes carries the file's size to the answer
      // that says what is not covered.
      if (!ec) c.weight_bytes = static_cast<std::uint64_t>(size);
      st.notes().push_back("the header of " + *path + " matches no catalog model" + holds + ": '" + c.file +
                           "' is an unknown model" + (c.model.empty() ? "" : ", not " + c.model + " as its name suggests"));
      c.model.clear();
      c.precision.clear();
      return;
    }
    // Text encoders, CLIP vision and VAEs keep the name's guess: they ship in layouts the inspector
    // does not read (GGUF text encoders keep llama.cpp's tensor names), and an encoder dropped from
    // the count would lower the peak it belongs to.
    rec.size_source = c.model.empty() ? "unknown" : "file_name";
    st.notes().push_back("the header of " + *path + " matches no catalog model" + holds + "; " +
                         (c.model.empty() ? "not recognised" : "estimated from its name as " + c.model));
    return;
  }
  c.model = facts.model;
  if (!facts.precision.empty()) c.precision = facts.precision;
  // A checkpoint's bytes include its text encoders and VAE, which are counted separately.
  if (facts.gpu_bytes && loader_kind(role) != LoaderKind::Checkpoint) c.weight_bytes = facts.gpu_bytes;
  st.notes().push_back("'" + c.file + "': model, precision and size read from " + *path);
}

}  // namespace

Component component(ReaderState& st, const Node& n, const std::string& file, const std::string& role, Loader& rec) {
  Component c;
  c.file = file;
  NameGuess guess = resolve_file(file, role);
  c.model = guess.model;
  c.precision = guess.precision;
  for (auto& s : guess.notes) st.notes().push_back(s);
  if (!c.model.empty()) rec.size_source = "file_name";
  if (st.opt.reads_files()) read_header(st, n, c, role, rec);
  rec.model = c.model;
  rec.precision = c.precision;
  // The one lookup of the name the file gave: the reader and the estimator use this entry from here on.
  c.info = c.model.empty() ? nullptr : find_model(c.model);
  if (c.model.empty() && !c.weight_bytes) rec.size_source = "unknown";
  return c;
}

}  // namespace headroom::workflow
