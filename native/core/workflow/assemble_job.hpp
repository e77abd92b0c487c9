#pragma once
// The Job, assembled once every node that runs has been read: which diffusion model it samples, the
// companions a checkpoint bundles, the size (and the node it follows when unknown), the cfg, the decode.
#include "core/workflow/reader_state.hpp"

namespace headroom::workflow {

void assemble_job(ReaderState& st);

}  // namespace headroom::workflow
