#include "core/file_reader.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.hpp"

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

FileSource::FileSource(std::string path) : path_(std::move(path)) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw Error(path_ + ": cannot open for reading: " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    int err = errno;
    ::close(fd_);
    fd_ = -1;
    throw Error(path_ + ": cannot stat: " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    throw Error(path_ + ": expected a regular file (a directory or device cannot be inspected)");
  }
  size_ = static_cast<std::uint64_t>(st.st_size);
}

FileSource::~FileSource() {
  if (fd_ >= 0) ::close(fd_);
}

void FileSource::read_raw(std::uint64_t offset, void* dst, std::size_t n) {
  auto* out = static_cast<unsigned char*>(dst);
  while (n > 0) {
    ssize_t got = ::pread(fd_, out, n, static_cast<off_t>(offset));
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

void MemorySource::read_raw(std::uint64_t offset, void* dst, std::size_t n) {
  std::memcpy(dst, data_ + offset, n);
}

}  // namespace headroom
