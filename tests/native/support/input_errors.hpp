#pragma once
// What the tests ask of an error: which field an InputError names (the contract every entry point keeps), and
// the text any error of the core gives.
#include <functional>
#include <string>

#include "core/base/error.hpp"

namespace support {

// read(e) of the E that `f` throws, or `none` when it throws none.
template <class E, class Read>
std::string caught(const std::function<void()>& f, Read read, std::string none) {
  try {
    f();
  } catch (const E& e) {
    return read(e);
  }
  return none;
}

// The field of the InputError `f` throws, or "(no InputError)" when it throws none.
inline std::string input_error_field(const std::function<void()>& f) {
  return caught<headroom::InputError>(f, [](const headroom::InputError& e) { return e.field(); }, "(no InputError)");
}

// The message of the headroom::Error `f` throws (what the user reads), or "" when it throws none.
inline std::string error_text(const std::function<void()>& f) {
  return caught<headroom::Error>(f, [](const headroom::Error& e) { return std::string(e.what()); }, "");
}

}  // namespace support
