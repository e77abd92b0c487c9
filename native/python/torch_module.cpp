// _headroom_torch: the native decoders for Python (ComfyUI nodes). The only TU with torch/extension.h.
// Long decodes release the GIL; progress/cancel callbacks take it back for their call.
#include <torch/extension.h>

#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "core/estimate/decode_plan.hpp"
#include "core/base/error.hpp"
#include "torch/decode.hpp"
#include "torch/tiling.hpp"
#include "python/pybind_errors.hpp"

#ifndef HEADROOM_BUILT_TORCH_VERSION
#define HEADROOM_BUILT_TORCH_VERSION "unknown"
#endif

namespace py = pybind11;
using namespace headroom;
using namespace headroom::torch_ops;

namespace {

std::optional<torch::ScalarType> dtype_from(const py::object& o) {
  if (o.is_none()) return std::nullopt;
  if (THPDtype_Check(o.ptr())) return reinterpret_cast<THPDtype*>(o.ptr())->scalar_type;
  const std::string s = py::str(o);
  if (s == "fp32" || s == "float32") return torch::kFloat;
  if (s == "bf16" || s == "bfloat16") return torch::kBFloat16;
  if (s == "fp16" || s == "float16") return torch::kHalf;
  throw InputError("dtype", "'" + s + "' is not a decode dtype (use fp32, bf16, fp16 or a torch.dtype)");
}

std::optional<torch::Device> device_from(const py::object& o) {
  if (o.is_none()) return std::nullopt;
  if (THPDevice_Check(o.ptr())) return reinterpret_cast<THPDevice*>(o.ptr())->device;
  const std::string s = py::str(o);
  try {
    return torch::Device(s);
  } catch (const std::exception&) {
    throw InputError("device", "'" + s + "' is not a device (use cpu, cuda or cuda:N)");
  }
}

std::function<void(int, int)> progress_from(const py::object& cb) {
  if (cb.is_none()) return nullptr;
  return [cb](int done, int total) {
    py::gil_scoped_acquire gil;
    cb(done, total);
  };
}

std::function<bool()> cancel_from(const py::object& cb) {
  if (cb.is_none()) return nullptr;
  return [cb]() {
    py::gil_scoped_acquire gil;
    return py::bool_(cb()).cast<bool>();
  };
}

py::dict info_dict(const DecodeInfo& i) {
  py::dict d;
  d["family"] = i.family;
  d["mode"] = i.mode;
  d["tile_latent"] = i.tile_latent;
  d["halo_latent"] = i.halo_latent;
  d["tiles"] = i.tiles;
  d["planned_peak_bytes"] = i.planned_peak_bytes;
  d["full_peak_bytes"] = i.full_peak_bytes;
  d["budget_bytes"] = i.budget_bytes;
  d["park_on_cpu"] = i.park_on_cpu;
  d["parked_bytes_peak"] = i.parked_bytes_peak;
  return d;
}

py::tuple py_decode(const StateDict& sd, const torch::Tensor& latent, const std::string& mode, int tile_px,
                    std::optional<std::uint64_t> budget_bytes, const py::object& device, const py::object& dtype,
                    const py::object& progress, const py::object& cancel) {
  DecodeOptions o;
  o.mode = mode;
  o.tile_px = tile_px;
  o.budget_bytes = budget_bytes;
  o.device = device_from(device);
  o.dtype = dtype_from(dtype);
  o.progress = progress_from(progress);
  o.cancelled = cancel_from(cancel);
  DecodeInfo info;
  torch::Tensor image;
  {
    py::gil_scoped_release nogil;
    image = decode(sd, latent, o, &info);
  }
  return py::make_tuple(image, info_dict(info));
}

torch::Tensor py_decode_blend(const py::object& fn, const torch::Tensor& latent, int64_t tile_latent,
                              int64_t overlap_latent, const std::vector<int64_t>& upscale, const py::object& progress,
                              const py::object& cancel) {
  if (upscale.size() != 2 && upscale.size() != 3)
    throw InputError("upscale", "expected (h, w) or (t, h, w) factors, got " + std::to_string(upscale.size()) + " values");
  const int64_t s = upscale[upscale.size() - 1];
  if (upscale[upscale.size() - 2] != s) throw InputError("upscale", "height and width factors must be equal");
  if (static_cast<int64_t>(upscale.size()) != latent.dim() - 2)
    throw InputError("latent", "has " + std::to_string(latent.dim()) + " axes but upscale gives " +
                                   std::to_string(upscale.size()) + " factors ([B, C, h, w] needs 2, [B, C, T, h, w] 3)");
  // Time is never tiled; (4, s, s) means Wan's frame count 4T - 3 (ComfyUI's upscale_ratio lambda).
  const int64_t frames_out = upscale.size() == 3 ? std::max<int64_t>(0, latent.size(2) * upscale[0] - (upscale[0] - 1)) : 0;
  auto cancel_fn = cancel_from(cancel);
  std::function<void()> check;
  if (cancel_fn) check = [cancel_fn] {
    if (cancel_fn()) throw Cancelled();
  };
  auto call = [&fn, frames_out](const torch::Tensor& t) {
    py::gil_scoped_acquire gil;
    torch::Tensor out = fn(t).cast<torch::Tensor>();
    if (frames_out && (out.dim() != 5 || out.size(2) != frames_out))
      throw InputError("fn", "returned " + std::to_string(out.dim()) + " axes / " + (out.dim() == 5 ? std::to_string(out.size(2)) : std::string("?")) +
                                 " frames for a video tile; expected [B, C, " + std::to_string(frames_out) + ", H, W]");
    return out;
  };
  py::gil_scoped_release nogil;
  return blend_tiles(latent, tile_latent, overlap_latent, s, call, progress_from(progress), check);
}

py::dict py_plan(const std::string& family, const std::vector<int64_t>& latent_shape, const std::string& mode,
                 int tile_px, std::uint64_t budget_bytes, int dtype_bytes, int base_channels,
                 const std::vector<int>& level_widths, int blocks_per_level) {
  if (latent_shape.size() != 4 && latent_shape.size() != 5)
    throw InputError("latent_shape", "expected [B, C, h, w] or [B, C, T, h, w]");
  DecodeRequest r;
  r.family = family;
  r.batch = static_cast<int>(latent_shape[0]);
  r.latent_channels = static_cast<int>(latent_shape[1]);
  r.latent_frames = latent_shape.size() == 5 ? static_cast<int>(latent_shape[2]) : 1;
  r.latent_height = static_cast<int>(latent_shape[latent_shape.size() - 2]);
  r.latent_width = static_cast<int>(latent_shape[latent_shape.size() - 1]);
  r.mode = mode;
  r.tile_px = tile_px;
  r.budget_bytes = budget_bytes;
  r.dtype_bytes = dtype_bytes;
  r.base_channels = base_channels;
  r.level_widths = level_widths;
  r.blocks_per_level = blocks_per_level;
  const DecodePlan p = plan_decode(r);
  py::dict d;
  d["mode"] = p.mode;
  d["tile_latent"] = p.tile_latent;
  d["halo_latent"] = p.halo_latent;
  d["tiles"] = p.tiles;
  d["park_on_cpu"] = p.park_on_cpu;
  d["peak_bytes"] = p.peak_bytes;
  d["full_peak_bytes"] = p.full_peak_bytes;
  d["weights_bytes"] = p.weights_bytes;
  return d;
}

}  // namespace

PYBIND11_MODULE(_headroom_torch, m) {
  m.doc() = "Headroom's native VAE decoders (LibTorch)";
  static py::exception<Cancelled> cancelled_exc(m, "DecodeCancelled", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Cancelled& e) {
      raise_as(cancelled_exc, e.what());
    } catch (const InputError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const FileFormatError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });

  m.def("decode", &py_decode, py::arg("state_dict"), py::arg("latent"), py::arg("mode") = "auto",
        py::arg("tile_px") = 0, py::arg("budget_bytes") = py::none(), py::arg("device") = py::none(),
        py::arg("dtype") = py::none(), py::arg("progress") = py::none(), py::arg("cancel") = py::none(),
        "Decode a latent with the VAE state dict. Returns (IMAGE float32 [B, H, W, 3] on the CPU, info dict).\n"
        "latent: [B, C, h, w] (FLUX.2: ComfyUI's [B, 128, H/16, W/16]) or [B, C, T, h, w] for Wan;\n"
        "mode: auto | full | exact | fast | blend; tile_px: tile edge in output pixels (0 = largest that fits);\n"
        "budget_bytes: device-memory budget (None: free VRAM as ComfyUI defines it on CUDA, no limit on CPU);\n"
        "progress(done, total) after each tile; cancel() -> bool polled between tiles (True raises DecodeCancelled).");
  m.def("decode_blend", &py_decode_blend, py::arg("fn"), py::arg("latent"), py::arg("tile_latent"),
        py::arg("overlap_latent"), py::arg("upscale") = std::vector<int64_t>{8, 8}, py::arg("progress") = py::none(),
        py::arg("cancel") = py::none(),
        "One feathered pass of fn(latent_tile) -> decoded tile over spatial tiles; returns the blended float32\n"
        "CPU tensor (raw decoder output, no clamping). upscale (8, 8) for images, (4, 8, 8) for Wan video\n"
        "(frames 4T-3; time is never tiled).");
  m.def("detect_vae_family", &detect_vae_family, py::arg("state_dict"), "'kl', 'flux2' (KL decoder + latent BatchNorm and 2x2 patches), 'wan2.1' or 'wan2.2'.");
  m.def("built_torch_version", [] { return std::string(HEADROOM_BUILT_TORCH_VERSION); },
        "The torch version this module was compiled against (a mismatch with the running torch breaks the ABI).");
  m.def("plan", &py_plan, py::arg("family"), py::arg("latent_shape"), py::arg("mode") = "auto", py::arg("tile_px") = 0,
        py::arg("budget_bytes") = 0, py::arg("dtype_bytes") = 2, py::arg("base_channels") = 0,
        py::arg("level_widths") = std::vector<int>{}, py::arg("blocks_per_level") = 0,
        "The decode plan of the core's memory model (mode, tile, parking, peak bytes) without running anything.");
}
