#include "core/workflow/loaded_image.hpp"

#include "core/base/error.hpp"
#include "core/base/file_reader.hpp"
#include "core/inspect/image_header.hpp"
#include "core/workflow/workflow_models_dir.hpp"

namespace headroom::workflow {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

}  // namespace

ImageSize loaded_image_size(const Graph& g, const Node& n, const std::string& widget, const std::string& input_dir) {
  const auto v = g.value(n, widget);
  if (!v || !v->is_string() || v->get<std::string>().empty())
    return unknown_image_size(n, "a loaded image whose file name is not in the workflow");
  std::string name = v->get<std::string>();
  if (ends_with(name, " [input]")) name.resize(name.size() - 8);
  else if (ends_with(name, " [output]") || ends_with(name, " [temp]"))
    return unknown_image_size(n, "a loaded image of ComfyUI's output or temp folder ('" + name + "'), which Headroom does not read");
  const auto path = path_below(input_dir, name);
  if (!path) return unknown_image_size(n, "a loaded image named '" + name + "', a path outside ComfyUI's input folder");
  try {
    FileSource file(*path);
    const ImageHeader h = read_image_header(file);
    if (h.frames > 1)
      return unknown_image_size(n, "an animated image ('" + name + "', " + std::to_string(h.frames) +
                            " frames): LoadImage makes a batch of its frames, which Headroom does not count");
    ImageSize s{static_cast<int>(h.width), static_cast<int>(h.height), n.id, n.type, "", ""};
    s.note = n.type + " #" + n.id + ": " + std::to_string(h.width) + "x" + std::to_string(h.height) +
             " px, read from the header of '" + name + "' in ComfyUI's input folder";
    return s;
  } catch (const Error& e) {
    return unknown_image_size(n, "a loaded image ('" + name + "') whose size Headroom could not read from the input folder: " +
                          std::string(e.what()));
  }
}

}  // namespace headroom::workflow
