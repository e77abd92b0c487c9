// headroom-decode: decodes a ComfyUI latent file (Save Latent's .latent / .safetensors) with a VAE
// file, without ComfyUI: `headroom decode` execs this binary, so the estimator commands never load
// LibTorch.
#include <zlib.h>

#include <chrono>
#include <cstdio>
#include <iostream>

#include <torch/torch.h>

#include "cli/args.hpp"
#include "core/error.hpp"
#include "core/units.hpp"
#include "torch/decode.hpp"
#include "torch/state_dict_io.hpp"

namespace hr = headroom;
namespace ops = headroom::torch_ops;

namespace {

const char* kUsage =
    "usage: headroom decode --vae VAE.safetensors --latent FILE [--mode full|exact|fast|blend|auto]\n"
    "                       [--tile PIXELS] [--budget SIZE] [--device cpu|cuda] [--dtype fp32|bf16|fp16] --out OUT\n"
    "  FILE: a ComfyUI latent (safetensors with 'latent_tensor', as written by Save Latent)\n"
    "  OUT:  NAME.png (one PNG per image: NAME_00000.png... when there are several) or NAME.safetensors\n"
    "        (the IMAGE tensor [B, H, W, 3] float32 under 'image')\n"
    "  --tile: tile edge in output pixels as in VAE Decode (Tiled); --budget: 6GiB, 6000MB ... (bare number: GiB)\n";

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void put32(std::string& out, uint32_t v) {
  for (int i = 3; i >= 0; --i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void chunk(std::string& png, const char* type, const std::string& data) {
  put32(png, static_cast<uint32_t>(data.size()));
  std::string body = std::string(type, 4) + data;
  png += body;
  put32(png, static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()))));
}

// 8-bit RGB PNG of one [H, W, 3] float image in [0, 1] (rounded like PIL's conversion of x * 255).
void write_png(const std::string& path, const at::Tensor& img) {
  const int64_t H = img.size(0), W = img.size(1);
  at::Tensor u8 = img.mul(255.0).round_().clamp_(0, 255).to(at::kByte).contiguous();
  std::string raw;
  raw.reserve(static_cast<size_t>(H * (W * 3 + 1)));
  const char* p = static_cast<const char*>(u8.data_ptr());
  for (int64_t y = 0; y < H; ++y) {
    raw.push_back('\0');  // filter type 0 (none) per scanline
    raw.append(p + y * W * 3, static_cast<size_t>(W * 3));
  }
  uLongf zlen = compressBound(static_cast<uLong>(raw.size()));
  std::string z(zlen, '\0');
  if (compress2(reinterpret_cast<Bytef*>(z.data()), &zlen, reinterpret_cast<const Bytef*>(raw.data()),
                static_cast<uLong>(raw.size()), 6) != Z_OK)
    throw hr::Error("zlib failed compressing " + path);
  z.resize(zlen);
  std::string png("\x89PNG\r\n\x1a\n", 8);
  std::string ihdr;
  put32(ihdr, static_cast<uint32_t>(W));
  put32(ihdr, static_cast<uint32_t>(H));
  ihdr += std::string("\x08\x02\x00\x00\x00", 5);  // 8 bit, RGB, deflate, adaptive filter, no interlace
  chunk(png, "IHDR", ihdr);
  chunk(png, "IDAT", z);
  chunk(png, "IEND", "");
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) throw hr::InputError("--out", "cannot create '" + path + "' (does the folder exist and is it writable?)");
  const bool ok = std::fwrite(png.data(), 1, png.size(), f) == png.size();
  if (std::fclose(f) != 0 || !ok) throw hr::InputError("--out", "failed writing '" + path + "' (disk full?)");
}

// ComfyUI checkpoints keep the VAE under a prefix; standalone VAE files do not.
ops::TensorMap load_vae(const std::string& path) {
  auto keep = [](const std::string& k) { return k.find("encoder.") == std::string::npos && k.find("model.diffusion_model.") != 0; };
  ops::TensorMap sd = ops::load_safetensors(path, keep);
  for (const std::string prefix : {"first_stage_model.", "vae."}) {
    if (sd.count("decoder.conv_in.weight") || sd.count("decoder.middle.0.residual.0.gamma")) break;
    if (!sd.count(prefix + "decoder.conv_in.weight") && !sd.count(prefix + "decoder.middle.0.residual.0.gamma")) continue;
    ops::TensorMap stripped;
    for (auto& [k, v] : sd)
      if (k.rfind(prefix, 0) == 0) stripped.emplace(k.substr(prefix.size()), v);
    sd.swap(stripped);
  }
  return sd;
}

at::Tensor load_latent(const std::string& path) {
  ops::TensorMap t = ops::load_safetensors(path);
  auto it = t.find("latent_tensor");
  if (it == t.end())
    throw hr::FileFormatError(path, "has no 'latent_tensor' tensor: not a latent saved by ComfyUI's Save Latent");
  at::Tensor z = it->second.to(at::kFloat);
  // ComfyUI's Load Latent: files without this marker predate it and hold SD latents scaled by 0.18215.
  if (!t.count("latent_format_version_0")) z = z * (1.0 / 0.18215);
  return z;
}

int run(int argc, char** argv) {
  std::vector<std::string> a(argv + 1, argv + argc);
  for (const auto& s : a)
    if (s == "--help" || s == "-h") {
      std::cout << kUsage;
      return 0;
    }
  hr::cli::Args args(a, {"vae", "latent", "mode", "tile", "budget", "device", "dtype", "out"}, {});
  const auto vae = args.get("vae"), latent_path = args.get("latent"), out = args.get("out");
  if (!vae) throw hr::InputError("--vae", "is required (the VAE .safetensors file)");
  if (!latent_path) throw hr::InputError("--latent", "is required (a latent saved by ComfyUI's Save Latent)");
  if (!out) throw hr::InputError("--out", "is required (NAME.png or NAME.safetensors)");
  const bool png = ends_with(*out, ".png");
  if (!png && !ends_with(*out, ".safetensors"))
    throw hr::InputError("--out", "'" + *out + "' must end in .png or .safetensors");

  ops::DecodeOptions o;
  o.mode = args.get_or("mode", "auto");
  if (o.mode != "auto" && o.mode != "full" && o.mode != "exact" && o.mode != "fast" && o.mode != "blend")
    throw hr::InputError("--mode", "'" + o.mode + "' is not a mode (full, exact, fast, blend or auto)");
  o.tile_px = args.get_int("tile", 0, 0, 1 << 20);
  if (auto b = args.get("budget")) o.budget_bytes = hr::parse_size(*b, "--budget");
  const std::string device = args.get_or("device", torch::cuda::is_available() ? "cuda" : "cpu");
  if (device != "cpu" && device.rfind("cuda", 0) != 0)
    throw hr::InputError("--device", "'" + device + "' is not cpu or cuda[:N]");
  if (device.rfind("cuda", 0) == 0 && !torch::cuda::is_available())
    throw hr::InputError("--device", "cuda was asked for but this LibTorch has no usable CUDA device; use --device cpu");
  o.device = torch::Device(device);
  const std::string dtype = args.get_or("dtype", device == "cpu" ? "fp32" : "bf16");
  if (dtype == "fp32") o.dtype = torch::kFloat;
  else if (dtype == "bf16") o.dtype = torch::kBFloat16;
  else if (dtype == "fp16") o.dtype = torch::kHalf;
  else throw hr::InputError("--dtype", "'" + dtype + "' is not fp32, bf16 or fp16");
  o.progress = [](int done, int total) { std::cerr << "\rdecode: " << done << "/" << total << std::flush; };

  const ops::TensorMap sd = load_vae(*vae);
  at::Tensor z = load_latent(*latent_path);
  const auto t0 = std::chrono::steady_clock::now();
  ops::DecodeInfo info;
  at::Tensor image = ops::decode(sd, z, o, &info);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cerr << "\n";

  std::vector<std::string> written;
  if (png) {
    const std::string stem = out->substr(0, out->size() - 4);
    for (int64_t i = 0; i < image.size(0); ++i) {
      char suffix[32];
      std::snprintf(suffix, sizeof suffix, "_%05lld.png", static_cast<long long>(i));
      const std::string p = image.size(0) == 1 ? *out : stem + suffix;
      write_png(p, image[i]);
      written.push_back(p);
    }
  } else {
    ops::save_safetensors(*out, {{"image", image}});
    written.push_back(*out);
  }
  std::cout << "decoded " << ops::shape_string(z.sizes()) << " -> " << ops::shape_string(image.sizes()) << " ("
            << info.family << ", mode " << info.mode << ", " << info.tiles << " tile(s)"
            << (info.park_on_cpu ? ", parked in CPU memory" : "") << ", planned peak "
            << hr::format_bytes(info.planned_peak_bytes) << ") in " << secs << " s\n";
  for (const auto& p : written) std::cout << "wrote " << p << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const ops::Cancelled& e) {
    std::cerr << "headroom decode: cancelled\n";
    return 130;
  } catch (const hr::InputError& e) {
    std::cerr << "headroom decode: " << e.what() << "\n" << kUsage;
    return 2;
  } catch (const hr::FileFormatError& e) {
    std::cerr << "headroom decode: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "headroom decode: " << e.what() << "\n";
    return 1;
  }
}
