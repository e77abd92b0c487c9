#pragma once
// The text encoders one sampler's conditioning reads (issue 19: each sampler is its own job). ComfyUI
// loads a CLIP object when a CLIPTextEncode that reads it runs, before the sampler that takes the
// conditioning (nodes.py CLIPTextEncode.encode -> comfy/sd.py CLIP.encode_from_tokens -> CLIP.load_model ->
// model_management.load_models_gpu); so a sampler's text-encode stage holds its own encoders, not every
// CLIP loader of the workflow.
#include "core/workflow/reader_state.hpp"

namespace headroom::workflow {

// Fills job.text_encoders, text_encoder_loads and encoders_traced: every node behind the sampler's
// inputs (its guider's included) but its model and its latent, through the text-encode nodes to the CLIP
// loaders (st.encoder_loads); a MODEL input is never followed, nor an earlier sampler (its conditioning
// is its own job's).
void trace_encoders(const ReaderState& st, const Node& sampler, SamplerJob& job);

}  // namespace headroom::workflow
