#pragma once
// Error types of the core. Every message names the input, what was expected and what came instead.
#include <stdexcept>
#include <string>

namespace headroom {

// Base of every error the core throws on purpose; anything else is a bug.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// A value the user gave (CLI flag, JSON field, node input) is wrong. `field` names it.
class InputError : public Error {
 public:
  InputError(std::string field, const std::string& message)
      : Error(field + ": " + message), field_(std::move(field)) {}
  const std::string& field() const { return field_; }

 private:
  std::string field_;
};

// A file (model header, workflow, latent) is malformed. `path` names it.
class FileFormatError : public Error {
 public:
  FileFormatError(std::string path, const std::string& message)
      : Error(path + ": " + message), path_(std::move(path)) {}
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace headroom
