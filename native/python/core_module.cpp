// _headroom_core: the estimator core for Python. JSON strings in and out, so the binding stays
// one thin file and never links torch (a torch upgrade in ComfyUI cannot break the estimator).
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "core/api/api.hpp"
#include "core/base/error.hpp"
#include "core/base/json_reader.hpp"
#include "python/pybind_errors.hpp"

namespace py = pybind11;
using nlohmann::json;

namespace {

// Through the core's one JSON reader: nesting capped, 1e400 refused, never a raw nlohmann exception.
json parse_request(const std::string& text) {
  try {
    return headroom::read_json(text, "request");
  } catch (const headroom::FileFormatError& e) {
    throw headroom::InputError("request", std::string(e.what()).substr(e.path().size() + 2));
  }
}

template <typename F>
std::string call_json(F&& f, const std::string& request) {
  json in = parse_request(request);
  json out;
  {
    py::gil_scoped_release release;
    out = f(in);
  }
  return out.dump();
}

}  // namespace

PYBIND11_MODULE(_headroom_core, m) {
  m.doc() = "Headroom estimator core: every function takes and returns JSON text.";
  static py::exception<headroom::InputError> input_error(m, "InputError", PyExc_ValueError);
  static py::exception<headroom::FileFormatError> file_error(m, "FileFormatError", PyExc_ValueError);
  static py::exception<headroom::Error> error(m, "HeadroomError", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const headroom::InputError& e) {
      raise_as(input_error, e.what());
    } catch (const headroom::FileFormatError& e) {
      raise_as(file_error, e.what());
    } catch (const headroom::Error& e) {
      raise_as(error, e.what());
    }
  });

  m.def("catalog", [] { return headroom::api::catalog().dump(); },
        "Models, precisions, GPUs and presets as JSON.");
  m.def("estimate", [](const std::string& r) { return call_json(headroom::api::estimate, r); },
        py::arg("request_json"), "Per-stage peak VRAM of one job (see api.hpp).");
  m.def("plan", [](const std::string& r) { return call_json(headroom::api::plan, r); },
        py::arg("request_json"), "Estimate a ComfyUI workflow and list the changes that make it fit.");
  m.def("apply_preset", [](const std::string& r) { return call_json(headroom::api::apply_preset, r); },
        py::arg("request_json"), "Rewrite a workflow with a named preset; returns before/after peaks.");
  m.def("inspect",
        [](const std::vector<std::string>& paths) {
          json out;
          {
            py::gil_scoped_release release;
            out = headroom::api::inspect(paths);
          }
          return out.dump();
        },
        py::arg("paths"), "Read .safetensors/.gguf headers without reading tensor data.");
  m.def("explain",
        [](const std::string& text) {
          json out;
          {
            py::gil_scoped_release release;
            out = headroom::api::explain(text);
          }
          return out.dump();
        },
        py::arg("text"), "Diagnose an out-of-memory error message.");
  m.def("recognise", [](const std::string& r) { return call_json(headroom::api::recognise, r); },
        py::arg("request_json"), "Which catalog model a state dict is, from tensor names, dtypes and shapes.");
  m.def("llm", [](const std::string& r) { return call_json(headroom::api::llm, r); }, py::arg("request_json"));
  m.def("train", [](const std::string& r) { return call_json(headroom::api::train, r); }, py::arg("request_json"));
  m.attr("__version__") = "0.1.0";
}
