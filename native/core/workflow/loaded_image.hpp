#pragma once
// The size of the image a LoadImage-style node loads, read from the file's header in ComfyUI's input
// folder: with it a workflow whose latent follows the user's own image (an edit, an inpaint, an
// image-to-video start frame) is sized by that image instead of being left unknown.
#include <string>

#include "core/workflow/image_size.hpp"
#include "core/workflow/workflow_graph.hpp"

namespace headroom::workflow {

// `widget` holds the file name as ComfyUI stores it ("photo.png", "sub/photo.png", "photo.png [input]").
// Known when the file is an image of the input folder that holds one frame; otherwise unknown, saying why
// (not in the folder, another folder's annotation, animated, unreadable). Only reads the header.
ImageSize loaded_image_size(const Graph& g, const Node& n, const std::string& widget, const std::string& input_dir);

}  // namespace headroom::workflow
