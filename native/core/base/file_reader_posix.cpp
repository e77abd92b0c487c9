// FileSource and the text readers on POSIX systems (Linux, macOS): see file_reader_win32.cpp for Windows.
#ifndef _WIN32
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/base/error.hpp"
#include "core/base/file_reader.hpp"
#include "core/base/file_reader_common.hpp"

namespace headroom {

namespace {

// Opens `path` for reading without blocking and refuses anything but a regular file; returns the fd.
int open_regular(const std::string& path, std::uint64_t* size) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) throw Error(path + ": cannot open for reading: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    throw Error(path + ": cannot stat: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(path + (S_ISDIR(st.st_mode) ? ": expected a regular file, found a folder"
                                             : ": expected a regular file, found a pipe, device or socket"));
  }
  // Back to blocking reads (a no-op for regular files, but reads must never return EAGAIN).
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
  *size = static_cast<std::uint64_t>(st.st_size);
  return fd;
}

}  // namespace

FileSource::FileSource(std::string path) : path_(std::move(path)) { handle_ = open_regular(path_, &size_); }

FileSource::~FileSource() {
  if (handle_ != kNoHandle) ::close(static_cast<int>(handle_));
}

FileIdentity FileSource::identity() const {
  struct stat st {};
  if (::fstat(static_cast<int>(handle_), &st) != 0) throw Error(path_ + ": cannot stat: " + std::strerror(errno));
#ifdef __APPLE__
  const struct timespec mtime = st.st_mtimespec;
#else
  const struct timespec mtime = st.st_mtim;
#endif
  FileIdentity id;
  id.device = static_cast<std::uint64_t>(st.st_dev);
  id.inode = static_cast<std::uint64_t>(st.st_ino);
  id.size = static_cast<std::uint64_t>(st.st_size);
  id.mtime_ns = static_cast<std::int64_t>(mtime.tv_sec) * 1000000000 + static_cast<std::int64_t>(mtime.tv_nsec);
  return id;
}

void FileSource::read_raw(std::uint64_t offset, void* dst, std::size_t n) {
  auto* out = static_cast<unsigned char*>(dst);
  while (n > 0) {
    ssize_t got = ::pread(static_cast<int>(handle_), out, n, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw Error(path_ + ": read failed at offset " + std::to_string(offset) + ": " + std::strerror(errno));
    // The file shrank under us after fstat: report it like any other truncation.
    if (got == 0)
      throw FileFormatError(path_, "truncated: the file ended at byte " + std::to_string(offset) +
                                       " while reading (was it being written?)");
    out += got;
    n -= static_cast<std::size_t>(got);
    offset += static_cast<std::uint64_t>(got);
  }
}

std::string read_text_file(const std::string& path, std::uint64_t max_bytes) {
  std::uint64_t size = 0;
  int fd = open_regular(path, &size);
  if (size > max_bytes) {
    ::close(fd);
    throw Error(too_long(path, max_bytes) + " (the file has " + std::to_string(size) + ")");
  }
  try {
    std::string text = read_text_fd(fd, path, max_bytes);
    ::close(fd);
    return text;
  } catch (...) {
    ::close(fd);
    throw;
  }
}

}  // namespace headroom
#endif
