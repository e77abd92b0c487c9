#pragma once
// Raising a registered Python exception, the same way under every pybind11 the modules meet.
#include <pybind11/pybind11.h>

// pybind11 2.12 replaced calling an exception object with py::set_error; older copies (such as the one
// a torch build bundles) have only the call.
template <typename E>
void raise_as(const pybind11::exception<E>& exc, const char* message) {
#if PYBIND11_VERSION_HEX >= 0x020C0000
  pybind11::set_error(exc, message);
#else
  exc(message);
#endif
}
