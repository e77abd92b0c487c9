#pragma once
// Nodes that run a loaded text encoder as a language model (TextGenerate, a prompt upsampler): what
// each writes, resolved once every loader has been read.
#include "core/workflow/reader_state.hpp"

namespace headroom::workflow {

// Records the node, the loader feeding its generator input and its token budget.
void read_generation(ReaderState& st, const Node& n, const ComfyNode& info);

// What each language-model node writes, now that every loader has been read: a text generation of the
// job, or a note saying why it is not counted.
void resolve_generations(ReaderState& st);

}  // namespace headroom::workflow
