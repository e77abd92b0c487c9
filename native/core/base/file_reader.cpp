#include "core/base/file_reader.hpp"

#ifdef _WIN32
#include <io.h>
#else
#include <unistd.h>
#endif

#include <cerrno>
#include <cstring>

#include "core/base/error.hpp"
#include "core/base/file_reader_common.hpp"

// The operating-system side (FileSource, read_text_file) is in file_reader_posix.cpp and
// file_reader_win32.cpp; this file holds what is the same everywhere.
namespace headroom {

void ByteSource::read(std::uint64_t offset, void* dst, std::size_t n, const std::string& what) {
  const std::uint64_t total = size();
  if (offset > total || n > total - offset) {
    throw FileFormatError(name(), "truncated: expected " + std::to_string(n) + " bytes of " + what +
                                      " at offset " + std::to_string(offset) + ", but the file ends at byte " +
                                      std::to_string(total));
  }
  if (n == 0) return;
  read_raw(offset, dst, n);
  bytes_read_ += n;
}

std::string too_long(const std::string& name, std::uint64_t max_bytes) {
  return name + ": longer than " + std::to_string(max_bytes) + " bytes, the limit for this input";
}

void MemorySource::read_raw(std::uint64_t offset, void* dst, std::size_t n) {
  std::memcpy(dst, data_ + offset, n);
}

namespace {

long read_some(int fd, char* buf, unsigned n) {
#ifdef _WIN32
  return _read(fd, buf, n);
#else
  return static_cast<long>(::read(fd, buf, n));
#endif
}

}  // namespace

std::string read_text_fd(int fd, const std::string& name, std::uint64_t max_bytes) {
  std::string text;
  char buf[65536];
  for (;;) {
    const long got = read_some(fd, buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw Error(name + ": read failed: " + std::strerror(errno));
    if (got == 0) return text;
    if (text.size() + static_cast<std::size_t>(got) > max_bytes) throw Error(too_long(name, max_bytes));
    text.append(buf, static_cast<std::size_t>(got));
  }
}

std::optional<FileIdentity> file_identity(const std::string& path) {
  try {
    return FileSource(path).identity();
  } catch (const Error&) {
    return std::nullopt;
  }
}

std::string path_file_name(const std::string& path) {
  const std::size_t slash = path.find_last_of("/\\");
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace headroom
