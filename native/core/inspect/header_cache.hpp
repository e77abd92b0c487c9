#pragma once
// What a model file's header says, remembered for the life of the process by the file's identity
// (device, inode, size, modification time; file_reader.hpp FileIdentity) and name, never by the spelling
// of its path: "x", "./x", a hard link under the same name and a second prompt that names the file again
// read it once. ComfyUI's queue-time check asks for the same headers on every prompt, from several
// threads, so the cache is process-wide, bounded and locked.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/inspect/inspector.hpp"

namespace headroom {

// Entries kept: far more model files than a ComfyUI install names in one workflow. The least recently
// used goes first. Each entry is a summary (a few kB; metadata trimmed), never a tensor list.
constexpr std::size_t kHeaderCacheEntries = 256;
// A file modified this recently may still be written within the time stamp's granularity without its
// identity changing, so its answer is not kept (git's "racily clean" rule).
constexpr std::int64_t kHeaderCacheSettleNs = 2'000'000'000;

// inspect_file(path) with the built-in catalog, through the cache. A malformed header is remembered too
// (FileFormatError, thrown again naming `path`); a file that cannot be opened or read is not.
Inspection inspect_file_cached(const std::string& path);

struct HeaderCacheCounts {
  std::uint64_t reads = 0;  // headers parsed
  std::uint64_t hits = 0;   // answers given from the cache
  std::size_t entries = 0;
};
HeaderCacheCounts header_cache_counts();
void clear_header_cache();

}  // namespace headroom
