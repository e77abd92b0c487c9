#pragma once
// The nodes that size the sampled latent: empty latents (width, height, length, batch), audio latents
// (seconds), latents that follow an input image (inpaint, Kontext, img2img).
#include "core/workflow/reader_state.hpp"

namespace headroom::workflow {

// An empty latent node (comfy_nodes.json "latent"): the largest that runs sets the job's size.
void read_latent(ReaderState& st, const Node& n, const ComfyNode& info);

// An audio latent: its size is the clip's length in seconds (a float widget) and the batch; the model's
// arch.audio turns the seconds into latent positions.
void read_audio_latent(ReaderState& st, const Node& n, const ComfyNode& info);
// A token latent: its size is a number of shape tokens (an integer widget) and the batch; width, height
// and frames do not apply.
void read_token_latent(ReaderState& st, const Node& n, const ComfyNode& info);

// A latent with the size of an image (inpaint, InstructPix2Pix, the Kontext rescale): the size is the
// image's where the workflow sets it, else unknown (a loaded image's size is not in the workflow).
void read_image_latent(ReaderState& st, const Node& n, const ComfyNode& info);

// An image-sized latent sets the size only where no latent node does: a Kontext workflow that samples
// an EmptySD3LatentImage keeps that size (and its widgets for presets) beside its rescaled reference.
void size_from_image_latent(ReaderState& st);

}  // namespace headroom::workflow
