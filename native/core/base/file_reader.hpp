#pragma once
// Bounded, read-only access to the bytes of a model file (or of a buffer in memory, for the fuzzers).
// The header parsers ask for exactly the ranges they need, so memory and time never depend on
// the size of the tensor data behind the header.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace headroom {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Name used in error messages (the file path).
  virtual const std::string& name() const = 0;
  virtual std::uint64_t size() const = 0;
  // Copies n bytes at offset into dst. Throws FileFormatError naming `what` when the range
  // goes past the end ("truncated"), or Error when the operating system fails.
  void read(std::uint64_t offset, void* dst, std::size_t n, const std::string& what);
  // Total bytes handed out so far: lets tests prove that only the header was read.
  std::uint64_t bytes_read() const { return bytes_read_; }

 protected:
  virtual void read_raw(std::uint64_t offset, void* dst, std::size_t n) = 0;

 private:
  std::uint64_t bytes_read_ = 0;
};

// Which file an open handle reads, whatever path spelling opened it: two spellings of one file ("x",
// "./x", a hard link) have the same identity, and a file replaced or rewritten gets another one. A cache
// of what a file holds is keyed by this, never by the path. POSIX: st_dev, st_ino, st_size, st_mtim;
// Windows: volume serial number, file index, size and last write time (GetFileInformationByHandle).
struct FileIdentity {
  std::uint64_t device = 0;
  std::uint64_t inode = 0;
  std::uint64_t size = 0;
  std::int64_t mtime_ns = 0;  // nanoseconds since the Unix epoch (Windows: its 100 ns ticks scaled)

  bool operator==(const FileIdentity& o) const {
    return device == o.device && inode == o.inode && size == o.size && mtime_ns == o.mtime_ns;
  }
  bool operator!=(const FileIdentity& o) const { return !(*this == o); }
  bool operator<(const FileIdentity& o) const {
    if (device != o.device) return device < o.device;
    if (inode != o.inode) return inode < o.inode;
    if (size != o.size) return size < o.size;
    return mtime_ns < o.mtime_ns;
  }
};

// A regular file opened read-only: model files are never written. It is opened without blocking and
// checked with fstat before any read, so a FIFO, device or folder is refused at once (a FIFO would
// otherwise block the open until a writer comes; /dev/zero would never end).
class FileSource : public ByteSource {
 public:
  explicit FileSource(std::string path);  // throws Error when it cannot be opened
  ~FileSource() override;
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;
  const std::string& name() const override { return path_; }
  std::uint64_t size() const override { return size_; }
  // Asked of the open handle, so it describes the very file being read (no race with a rename).
  // Throws Error when the operating system cannot say.
  FileIdentity identity() const;

 protected:
  void read_raw(std::uint64_t offset, void* dst, std::size_t n) override;

 private:
  // A file descriptor on POSIX, a HANDLE on Windows (file_reader_posix.cpp, file_reader_win32.cpp).
  static constexpr std::intptr_t kNoHandle = -1;
  std::string path_;
  std::intptr_t handle_ = kNoHandle;
  std::uint64_t size_ = 0;
};

// A buffer in memory (not owned): the fuzzers and tests parse from here.
class MemorySource : public ByteSource {
 public:
  MemorySource(std::string name, const void* data, std::size_t size)
      : name_(std::move(name)), data_(static_cast<const unsigned char*>(data)), size_(size) {}
  const std::string& name() const override { return name_; }
  std::uint64_t size() const override { return size_; }

 protected:
  void read_raw(std::uint64_t offset, void* dst, std::size_t n) override;

 private:
  std::string name_;
  const unsigned char* data_;
  std::size_t size_;
};

// The last component of a path, with either separator ("C:\\models\\x.safetensors" -> "x.safetensors"):
// Windows paths reach the core on every OS (workflows, model folder lists).
std::string path_file_name(const std::string& path);

// Whole text files (workflows, error logs) through the same checks: a regular file of at most
// `max_bytes`, else Error naming `path` and the limit. Nothing is read from an over-long file.
std::string read_text_file(const std::string& path, std::uint64_t max_bytes);

// Up to `max_bytes` from an open descriptor (stdin for "-"); throws Error naming `name` when it has more.
std::string read_text_fd(int fd, const std::string& name, std::uint64_t max_bytes);

// The identity of the regular file at `path` (opened and checked as FileSource does), or nullopt when
// it cannot be opened or is not a regular file.
std::optional<FileIdentity> file_identity(const std::string& path);

}  // namespace headroom
