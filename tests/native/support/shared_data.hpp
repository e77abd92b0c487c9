#pragma once
// Where the reference data beside the clone lives (CI lays ../shared next to the repository).
#include <string>

namespace support {

// The real ComfyUI templates (shared/real-workflows, with its INDEX.md).
inline std::string templates_dir() { return std::string(HEADROOM_SHARED_DIR) + "/real-workflows"; }

}  // namespace support
