#pragma once
// Each sampler that runs, as its own job (issue 19): followed back through its MODEL input (LoRA
// loaders, model patches, a guider's model) to its diffusion loader, through its latent input (latent
// upsamplers, earlier sampling passes, nodes that keep a latent's size) to the node that sizes it, and
// to its cfg (its own widget, or its guider's).
#include "core/workflow/reader_state.hpp"

namespace headroom::workflow {

// A sampler: a sample-stage node that denoises a latent input (not a one-pass segmenter).
bool is_sampler(const Node& n);

// Fills st.info.job.samplers, one per sampler node that runs, in the order ComfyUI runs them.
void trace_samplers(ReaderState& st);

}  // namespace headroom::workflow
