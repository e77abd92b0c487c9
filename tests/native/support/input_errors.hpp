#pragma once
// What the tests ask of an InputError: which field it names (the contract every entry point keeps).
#include <functional>
#include <string>

#include "core/base/error.hpp"

namespace support {

// The field of the InputError `f` throws, or "(no InputError)" when it throws none.
inline std::string input_error_field(const std::function<void()>& f) {
  try {
    f();
  } catch (const headroom::InputError& e) {
    return e.field();
  }
  return "(no InputError)";
}

}  // namespace support
