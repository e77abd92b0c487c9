#include "core/workflow/loaded_image.hpp"

#include "core/base/error.hpp"
#include "core/base/file_reader.hpp"
#include "core/inspect/image_header.hpp"

namespace headroom::workflow {
namespace {

ImageSize unknown(const Node& n, std::string why) { return {std::nullopt, std::nullopt, n.id, n.type, std::move(why), ""}; }

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// ComfyUI refuses names that leave their folder; so does Headroom, which reads only inside it.
bool stays_inside(const std::string& name) {
  if (name.empty() || name[0] == '/' || name[0] == '\\' || (name.size() > 1 && name[1] == ':')) return false;
  std::size_t start = 0;
  while (start <= name.size()) {
    const std::size_t end = name.find_first_of("/\\", start);
    const std::string part = name.substr(start, end == std::string::npos ? std::string::npos : end - start);
    if (part == "..") return false;
    if (end == std::string::npos) break;
    start = end + 1;
  }
  return true;
}

}  // namespace

ImageSize loaded_image_size(const Graph& g, const Node& n, const std::string& widget, const std::string& input_dir) {
  const auto v = g.value(n, widget);
  if (!v || !v->is_string() || v->get<std::string>().empty())
    return unknown(n, "a loaded image whose file name is not in the workflow");
  std::string name = v->get<std::string>();
  if (ends_with(name, " [input]")) name.resize(name.size() - 8);
  else if (ends_with(name, " [output]") || ends_with(name, " [temp]"))
    return unknown(n, "a loaded image of ComfyUI's output or temp folder ('" + name + "'), which Headroom does not read");
  if (!stays_inside(name)) return unknown(n, "a loaded image named '" + name + "', a path outside ComfyUI's input folder");
  const std::string path = input_dir + "/" + name;
  try {
    FileSource file(path);
    const ImageHeader h = read_image_header(file);
    if (h.frames > 1)
      return unknown(n, "an animated image ('" + name + "', " + std::to_string(h.frames) +
                            " frames): LoadImage makes a batch of its frames, which Headroom does not count");
    ImageSize s{static_cast<int>(h.width), static_cast<int>(h.height), n.id, n.type, "", ""};
    s.note = n.type + " #" + n.id + ": " + std::to_string(h.width) + "x" + std::to_string(h.height) +
             " px, read from the header of '" + name + "' in ComfyUI's input folder";
    return s;
  } catch (const Error& e) {
    return unknown(n, "a loaded image ('" + name + "') whose size Headroom could not read from the input folder: " +
                          std::string(e.what()));
  }
}

}  // namespace headroom::workflow
