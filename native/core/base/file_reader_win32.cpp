// FileSource and the text readers on Windows: UTF-8 paths through wide Win32 calls (a narrow path is
// read in the ANSI code page there, so "C:\Users\José\..." would not open), read-only sharing that lets
// ComfyUI keep its files open, and only disk files: a pipe, console or device is refused before any read.
#ifdef _WIN32
#ifndef NOMINMAX
#define NOMINMAX
#endif
#ifndef WIN32_LEAN_AND_MEAN
#define WIN32_LEAN_AND_MEAN
#endif
#include <windows.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "core/base/error.hpp"
#include "core/base/file_reader.hpp"
#include "core/base/file_reader_common.hpp"

namespace headroom {
namespace {

std::string system_message(DWORD code) {
  char* text = nullptr;
  DWORD n = FormatMessageA(FORMAT_MESSAGE_ALLOCATE_BUFFER | FORMAT_MESSAGE_FROM_SYSTEM | FORMAT_MESSAGE_IGNORE_INSERTS,
                           nullptr, code, 0, reinterpret_cast<char*>(&text), 0, nullptr);
  std::string out = n && text ? std::string(text, n) : "error " + std::to_string(code);
  if (text) LocalFree(text);
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r' || out.back() == '.')) out.pop_back();
  return out;
}

std::wstring widen(const std::string& path) {
  if (path.empty()) return std::wstring();
  int n = MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path.data(), static_cast<int>(path.size()), nullptr, 0);
  if (n <= 0) throw Error(path + ": cannot open for reading: the path is not valid UTF-8");
  std::wstring w(static_cast<std::size_t>(n), L'\0');
  MultiByteToWideChar(CP_UTF8, MB_ERR_INVALID_CHARS, path.data(), static_cast<int>(path.size()), &w[0], n);
  return w;
}

HANDLE open_regular(const std::string& path, std::uint64_t* size) {
  const std::wstring wide = widen(path);
  const DWORD attributes = GetFileAttributesW(wide.c_str());
  if (attributes != INVALID_FILE_ATTRIBUTES && (attributes & FILE_ATTRIBUTE_DIRECTORY))
    throw Error(path + ": expected a regular file, found a folder");
  HANDLE h = CreateFileW(wide.c_str(), GENERIC_READ, FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE, nullptr,
                         OPEN_EXISTING, FILE_ATTRIBUTE_NORMAL, nullptr);
  if (h == INVALID_HANDLE_VALUE) throw Error(path + ": cannot open for reading: " + system_message(GetLastError()));
  if (GetFileType(h) != FILE_TYPE_DISK) {
    CloseHandle(h);
    throw Error(path + ": expected a regular file, found a pipe, device or console");
  }
  LARGE_INTEGER li{};
  if (!GetFileSizeEx(h, &li)) {
    const DWORD err = GetLastError();
    CloseHandle(h);
    throw Error(path + ": cannot stat: " + system_message(err));
  }
  *size = static_cast<std::uint64_t>(li.QuadPart);
  return h;
}

// ReadFile at an offset (the pread of Win32): 0 bytes at or past the end.
DWORD read_at(HANDLE h, const std::string& path, std::uint64_t offset, void* dst, std::size_t n) {
  OVERLAPPED at{};
  at.Offset = static_cast<DWORD>(offset & 0xffffffffu);
  at.OffsetHigh = static_cast<DWORD>(offset >> 32);
  DWORD got = 0;
  const DWORD chunk = static_cast<DWORD>(std::min<std::size_t>(n, 1u << 30));
  if (!ReadFile(h, dst, chunk, &got, &at)) {
    const DWORD err = GetLastError();
    if (err == ERROR_HANDLE_EOF) return 0;
    throw Error(path + ": read failed at offset " + std::to_string(offset) + ": " + system_message(err));
  }
  return got;
}

}  // namespace

FileSource::FileSource(std::string path) : path_(std::move(path)) {
  handle_ = reinterpret_cast<std::intptr_t>(open_regular(path_, &size_));
}

FileSource::~FileSource() {
  if (handle_ != kNoHandle) CloseHandle(reinterpret_cast<HANDLE>(handle_));
}

FileIdentity FileSource::identity() const {
  BY_HANDLE_FILE_INFORMATION info{};
  if (!GetFileInformationByHandle(reinterpret_cast<HANDLE>(handle_), &info))
    throw Error(path_ + ": cannot stat: " + system_message(GetLastError()));
  // FILETIME counts 100 ns ticks since 1601-01-01; 11644473600 s separate that from the Unix epoch.
  const std::uint64_t ticks = (static_cast<std::uint64_t>(info.ftLastWriteTime.dwHighDateTime) << 32) |
                              info.ftLastWriteTime.dwLowDateTime;
  FileIdentity id;
  id.device = info.dwVolumeSerialNumber;
  id.inode = (static_cast<std::uint64_t>(info.nFileIndexHigh) << 32) | info.nFileIndexLow;
  id.size = (static_cast<std::uint64_t>(info.nFileSizeHigh) << 32) | info.nFileSizeLow;
  id.mtime_ns = (static_cast<std::int64_t>(ticks) - 116444736000000000LL) * 100;
  return id;
}

void FileSource::read_raw(std::uint64_t offset, void* dst, std::size_t n) {
  auto* out = static_cast<unsigned char*>(dst);
  while (n > 0) {
    const DWORD got = read_at(reinterpret_cast<HANDLE>(handle_), path_, offset, out, n);
    if (got == 0)
      throw FileFormatError(path_, "truncated: the file ended at byte " + std::to_string(offset) +
                                       " while reading (was it being written?)");
    out += got;
    n -= got;
    offset += got;
  }
}

std::string read_text_file(const std::string& path, std::uint64_t max_bytes) {
  std::uint64_t size = 0;
  HANDLE h = open_regular(path, &size);
  try {
    if (size > max_bytes) throw Error(too_long(path, max_bytes) + " (the file has " + std::to_string(size) + ")");
    std::string text;
    char buf[65536];
    for (std::uint64_t offset = 0;;) {
      const DWORD got = read_at(h, path, offset, buf, sizeof buf);
      if (got == 0) break;
      if (text.size() + got > max_bytes) throw Error(too_long(path, max_bytes));
      text.append(buf, got);
      offset += got;
    }
    CloseHandle(h);
    return text;
  } catch (...) {
    CloseHandle(h);
    throw;
  }
}

}  // namespace headroom
#endif
