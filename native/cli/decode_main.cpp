// headroom-decode: decodes a ComfyUI latent file (Save Latent's .latent / .safetensors) with a VAE
// file, without ComfyUI: `headroom decode` execs this binary, so the estimator commands never load
// LibTorch.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <iostream>

#include <torch/torch.h>

#include "cli/args.hpp"
#include "core/base/error.hpp"
#include "core/base/file_reader.hpp"
#include "core/catalog/model_arch.hpp"
#include "core/estimate/decode_plan.hpp"
#include "core/inspect/safetensors_header.hpp"
#include "core/base/units.hpp"
#include "torch/decode.hpp"
#include "torch/state_dict_io.hpp"

namespace hr = headroom;
namespace ops = headroom::torch_ops;

namespace {

const char* kUsage =
    "usage: headroom decode --vae VAE.safetensors --latent FILE [--mode full|exact|fast|blend|auto]\n"
    "                       [--tile PIXELS] [--budget SIZE] [--device cpu|cuda] [--dtype fp32|bf16|fp16] --out OUT\n"
    "                       [--force]\n"
    "  VAE:  an AutoencoderKL (SD1.5/SDXL/SD3/Flux), FLUX.2 or Wan 2.1/2.2 VAE file, or a checkpoint holding one\n"
    "  FILE: a ComfyUI latent (safetensors with 'latent_tensor', as written by Save Latent)\n"
    "  OUT:  NAME.png (one PNG per image: NAME_00000.png... when there are several) or NAME.safetensors\n"
    "        (the IMAGE tensor [B, H, W, 3] float32 under 'image')\n"
    "  --tile: tile edge in output pixels as in VAE Decode (Tiled)\n"
    "  --budget: device memory the decode may use: 6GiB, 6000MB ... (bare number: GiB). Without it: the free\n"
    "        VRAM on CUDA (as ComfyUI counts it), no limit on the CPU. Every mode (exact, fast, blend) takes the\n"
    "        largest tile inside that, or --tile when given; with no limit that is the whole latent as one tile\n"
    "        (on the CPU give --tile for tiles). auto decodes whole when it fits, else in exact tiles.\n"
    "  --force: replace existing output files. Without it an existing file is never overwritten; even with it,\n"
    "        OUT is never one of the inputs and never a symbolic link.\n";

// Largest latent ComfyUI makes: 16384 px a side (nodes.MAX_RESOLUTION), i.e. 16384 / scale latent pixels
// (2048 at 8x, 1024 for FLUX.2's 16x latents); batches up to 4096 (EmptyLatentImage's batch_size); Wan
// lengths up to 16384 frames are 4096 latent frames. Larger is refused from the header, before any allocation.
constexpr int64_t kMaxImageSide = 16384;
constexpr int64_t kMaxLatentBatch = 4096;
constexpr int64_t kMaxLatentFrames = 16384 / 4;

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

// The decode cannot run on this machine (exit 1, as for "does not fit"), as opposed to bad input (2).
struct DoesNotFit : hr::Error {
  using hr::Error::Error;
};

// An input file's identity, to refuse writing over it under another name (a hard link, "./x").
struct Input {
  std::string flag, path;
  dev_t dev = 0;
  ino_t ino = 0;
  bool exists = false;
};

Input input_of(const std::string& flag, const std::string& path) {
  Input in{flag, path};
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    in.dev = st.st_dev;
    in.ino = st.st_ino;
    in.exists = true;
  }
  return in;
}

const Input* same_file(const struct stat& st, const std::vector<Input>& inputs) {
  for (const auto& in : inputs)
    if (in.exists && in.dev == st.st_dev && in.ino == st.st_ino) return &in;
  return nullptr;
}

[[noreturn]] void refuse_input(const std::string& path, const Input& in) {
  throw hr::InputError("--out", "'" + path + "' is the " + in.flag + " file ('" + in.path +
                                    "'); decode never writes over its inputs, even with --force: give another name");
}

// Checked for every output before decoding, so a run never ends in a refusal after minutes of work.
// `written`: false for --out itself when the images go to NAME_00000.png...: then only the rules
// that hold even with --force apply to it.
void check_output(const std::string& path, bool force, const std::vector<Input>& inputs, bool written = true) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    throw hr::InputError("--out", "cannot check '" + path + "': " + std::strerror(errno));
  }
  if (S_ISLNK(st.st_mode))
    throw hr::InputError("--out", "'" + path + "' is a symbolic link; decode never writes through one: give the "
                                  "real path or a new name");
  if (const Input* in = same_file(st, inputs)) refuse_input(path, *in);
  if (!S_ISREG(st.st_mode)) throw hr::InputError("--out", "'" + path + "' exists and is not a regular file");
  if (!force && written) throw hr::InputError("--out", "'" + path + "' exists; give --force to replace it, or another name");
}

// Opens an output for writing under the same rules, race-free: O_NOFOLLOW refuses a symlink put
// there since the check, O_EXCL an existing file without --force, and the inode is compared with
// the inputs' before the file is truncated.
int open_output(const std::string& path, bool force, const std::vector<Input>& inputs) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (force ? 0 : O_EXCL), 0644);
  if (fd < 0) {
    const int err = errno;
    if (err == EEXIST) throw hr::InputError("--out", "'" + path + "' exists; give --force to replace it, or another name");
    if (err == ELOOP) throw hr::InputError("--out", "'" + path + "' is a symbolic link; decode never writes through one");
    throw hr::InputError("--out", "cannot create '" + path + "': " + std::strerror(err) +
                                      " (does the folder exist and is it writable?)");
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw hr::InputError("--out", "'" + path + "' is not a regular file");
  }
  if (const Input* in = same_file(st, inputs)) {
    ::close(fd);
    refuse_input(path, *in);
  }
  if (::ftruncate(fd, 0) != 0) {
    const int err = errno;
    ::close(fd);
    throw hr::InputError("--out", "cannot truncate '" + path + "': " + std::strerror(err));
  }
  return fd;
}

void write_all(int fd, const std::string& path, const std::string& data) {
  const char* p = data.data();
  std::size_t n = data.size();
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) throw hr::InputError("--out", "failed writing '" + path + "': " + std::strerror(errno) + " (disk full?)");
    p += w;
    n -= static_cast<std::size_t>(w);
  }
}

// 8-bit RGB PNG of one [H, W, 3] float image in [0, 1] (rounded like PIL's conversion of x * 255).
void write_png(const std::string& path, const at::Tensor& img, bool force, const std::vector<Input>& inputs) {
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
  int fd = open_output(path, force, inputs);
  try {
    write_all(fd, path, png);
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0) throw hr::InputError("--out", "failed writing '" + path + "': " + std::strerror(errno));
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

// What the VAE decodes: the latent's rank and channels, from the state dict (as the decoders read them).
struct LatentSpec {
  std::string family;
  hr::DecoderKind kind = hr::DecoderKind::None;
  int64_t rank = 4;
  int64_t channels = -1;  // -1: unknown here, left to the decoder's own check
  int64_t scale = 8;      // image pixels per latent pixel
};

LatentSpec latent_spec(const ops::TensorMap& sd) {
  LatentSpec s;
  s.family = ops::detect_vae_family(sd);
  s.kind = hr::decoder_kind_from_name(s.family).value_or(hr::DecoderKind::None);
  const bool image = hr::kl_decoder(s.kind);
  s.rank = image ? 4 : 5;
  const char* key = image ? "decoder.conv_in.weight" : "conv2.weight";
  auto it = sd.find(key);
  if (it != sd.end() && it->second.dim() >= 2) s.channels = it->second.size(1);
  // FLUX.2: ComfyUI's latent holds the decoder's channels patchified 2x2 (4x the channels, half the side).
  if (s.kind == hr::DecoderKind::Flux2) {
    if (s.channels > 0) s.channels *= 4;
    s.scale = 16;
  }
  return s;
}

// The latent tensor's shape from the header (nothing is read or allocated before this passes).
void check_latent_shape(const std::string& dtype, const std::vector<int64_t>& shape, const LatentSpec& spec) {
  const bool kl = spec.rank == 4;  // an image latent (KL, FLUX.2)
  const std::string form = kl ? "[batch, channels, height, width]" : "[batch, channels, frames, height, width]";
  if (static_cast<int64_t>(shape.size()) != spec.rank)
    throw hr::InputError("--latent", "latent_tensor has " + std::to_string(shape.size()) + " axes " + ops::shape_string(shape) +
                                         "; this " + spec.family + " VAE decodes " + form + " latents");
  if (dtype != "F32" && dtype != "F16" && dtype != "BF16" && dtype != "F64")
    throw hr::InputError("--latent", "latent_tensor is " + dtype + "; expected a floating-point latent (F32, F16 or BF16)");
  if (spec.channels > 0 && shape[1] != spec.channels)
    throw hr::InputError("--latent", "latent_tensor has " + std::to_string(shape[1]) + " channels but this VAE decodes " +
                                         std::to_string(spec.channels) + "-channel latents; is it from another model family?");
  for (int64_t d : shape)
    if (d == 0) throw hr::InputError("--latent", "latent_tensor is empty " + ops::shape_string(shape));
  const int64_t h = shape[shape.size() - 2], w = shape[shape.size() - 1];
  const int64_t max_side = kMaxImageSide / spec.scale;
  if (h > max_side || w > max_side || shape[0] > kMaxLatentBatch || (!kl && shape[2] > kMaxLatentFrames))
    throw hr::InputError("--latent", "latent_tensor " + ops::shape_string(shape) + " is larger than any ComfyUI makes (at most " +
                                         std::to_string(max_side) + " latent pixels a side = 16384 px, batch " +
                                         std::to_string(kMaxLatentBatch) + ", " + std::to_string(kMaxLatentFrames) +
                                         " latent frames)");
  // The decoded IMAGE (float32 [images, scale*h, scale*w, 3]) lives in host memory: refuse what cannot.
  const double images = static_cast<double>(shape[0]) * (kl ? 1.0 : 1.0 + 4.0 * static_cast<double>(shape[2] - 1));
  const double px = static_cast<double>(spec.scale) * static_cast<double>(spec.scale);
  const double bytes = images * px * static_cast<double>(h) * static_cast<double>(w) * 3.0 * 4.0;
  const double ram = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * static_cast<double>(sysconf(_SC_PAGESIZE));
  if (ram > 0 && bytes > ram)
    throw DoesNotFit("the decoded image of latent " + ops::shape_string(shape) + " needs " +
                    hr::format_bytes(static_cast<std::uint64_t>(bytes)) + " of host memory, more than this machine's " +
                    hr::format_bytes(static_cast<std::uint64_t>(ram)) + "; decode fewer images or frames at a time");
}

// Images the decoder will return for a latent of this shape (Wan: 1 + 4 (T - 1) frames per clip).
// Clamped (the shape is not checked yet): only used to name the files to check before decoding.
int64_t images_of(const std::vector<int64_t>& shape) {
  auto axis = [&](std::size_t i) { return i < shape.size() ? std::clamp<int64_t>(shape[i], 1, 1 << 20) : 1; };
  return shape.size() == 5 ? axis(0) * (1 + 4 * (axis(2) - 1)) : axis(0);
}

// The latent's shape from its header alone (a regular file, read-only, header bounds checked).
std::vector<int64_t> latent_header_shape(const std::string& path) {
  hr::FileSource source(path);
  const hr::SafetensorsHeader h = hr::read_safetensors_header(source);
  for (const auto& t : h.tensors)
    if (t.name == "latent_tensor") {
      std::vector<int64_t> shape;
      for (std::uint64_t d : t.shape) shape.push_back(d > static_cast<std::uint64_t>(INT64_MAX) ? INT64_MAX : static_cast<int64_t>(d));
      return shape;
    }
  throw hr::FileFormatError(path, "has no 'latent_tensor' tensor: not a latent saved by ComfyUI's Save Latent");
}

at::Tensor load_latent(const std::string& path, const LatentSpec& spec) {
  auto keep = [](const std::string& k) { return k == "latent_tensor" || k == "latent_format_version_0"; };
  auto check = [&spec](const std::string& key, const std::string& dtype, const std::vector<int64_t>& shape) {
    if (key == "latent_tensor") check_latent_shape(dtype, shape, spec);
  };
  ops::TensorMap t = ops::load_safetensors(path, keep, check);
  auto it = t.find("latent_tensor");
  if (it == t.end())
    throw hr::FileFormatError(path, "has no 'latent_tensor' tensor: not a latent saved by ComfyUI's Save Latent");
  at::Tensor z = it->second.to(at::kFloat);
  // ComfyUI's Load Latent: files without this marker predate it and hold SD latents scaled by 0.18215.
  if (!t.count("latent_format_version_0")) z = z * (1.0 / 0.18215);
  return z;
}

// --mode, --tile, --budget, --device and --dtype, each checked before any file is read.
ops::DecodeOptions decode_options(const hr::cli::Args& args) {
  ops::DecodeOptions o;
  o.mode = args.get_or("mode", "auto");
  hr::decode_tiling_from_name(o.mode, "--mode");  // refused here, before the files are read
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
  return o;
}

// One PNG per image: NAME.png for one, NAME_00000.png... for a batch.
std::string png_path(const std::string& out, int64_t i, int64_t count) {
  if (count == 1) return out;
  char suffix[32];
  std::snprintf(suffix, sizeof suffix, "_%05lld.png", static_cast<long long>(i));
  return out.substr(0, out.size() - 4) + suffix;
}

// The decoded images as PNGs or one .safetensors file; returns the paths written.
std::vector<std::string> write_outputs(const std::string& out, bool png, const at::Tensor& image, bool force,
                                       const std::vector<Input>& inputs) {
  std::vector<std::string> written;
  if (png) {
    for (int64_t i = 0; i < image.size(0); ++i) {
      const std::string p = png_path(out, i, image.size(0));
      write_png(p, image[i], force, inputs);
      written.push_back(p);
    }
    return written;
  }
  int fd = open_output(out, force, inputs);
  try {
    ops::save_safetensors_fd(fd, out, {{"image", image}});
  } catch (...) {
    ::close(fd);
    throw;
  }
  if (::close(fd) != 0) throw hr::InputError("--out", "failed writing '" + out + "': " + std::strerror(errno));
  written.push_back(out);
  return written;
}

int run(int argc, char** argv) {
  std::vector<std::string> a(argv + 1, argv + argc);
  for (const auto& s : a)
    if (s == "--help" || s == "-h") {
      std::cout << kUsage;
      return 0;
    }
  hr::cli::Args args(a, {"vae", "latent", "mode", "tile", "budget", "device", "dtype", "out"}, {"force"});
  const auto vae = args.get("vae"), latent_path = args.get("latent"), out = args.get("out");
  if (!vae) throw hr::InputError("--vae", "is required (the VAE .safetensors file)");
  if (!latent_path) throw hr::InputError("--latent", "is required (a latent saved by ComfyUI's Save Latent)");
  if (!out) throw hr::InputError("--out", "is required (NAME.png or NAME.safetensors)");
  const bool png = ends_with(*out, ".png");
  if (!png && !ends_with(*out, ".safetensors"))
    throw hr::InputError("--out", "'" + *out + "' must end in .png or .safetensors");

  const ops::DecodeOptions o = decode_options(args);

  // Outputs first: every path this run will write, checked before anything is read or decoded.
  const bool force = args.has("force");
  const std::vector<Input> inputs = {input_of("--vae", *vae), input_of("--latent", *latent_path)};
  check_output(*out, force, inputs, false);  // an input or a symlink: refused before anything is read
  {
    hr::FileSource vae_file(*vae);  // the VAE's header first: a bad VAE is named before the latent
    hr::read_safetensors_header(vae_file);
  }
  const std::vector<int64_t> latent_shape = latent_header_shape(*latent_path);
  const int64_t images = images_of(latent_shape);
  if (!png || images == 1) check_output(*out, force, inputs);
  if (png && images > 1)
    // (open_output enforces the same rules again as each file is written, past this many too.)
    for (int64_t i = 0; i < std::min<int64_t>(images, 100000); ++i) check_output(png_path(*out, i, images), force, inputs);

  const ops::TensorMap sd = load_vae(*vae);
  at::Tensor z = load_latent(*latent_path, latent_spec(sd));
  const auto t0 = std::chrono::steady_clock::now();
  ops::DecodeInfo info;
  at::Tensor image = ops::decode(sd, z, o, &info);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cerr << "\n";

  const std::vector<std::string> written = write_outputs(*out, png, image, force, inputs);
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
  } catch (const DoesNotFit& e) {
    std::cerr << "headroom decode: " << e.what() << "\n";
    return 1;
  } catch (const hr::Error& e) {  // an input that is a folder, FIFO or device
    std::cerr << "headroom decode: " << e.what() << "\n";
    return 2;
  } catch (const c10::Error& e) {
    // LibTorch's messages carry a C++ stack trace after the first line: the user needs the first line, and
    // for a failed allocation what to change.
    const std::string what = e.what();
    const std::string first = what.substr(0, what.find('\n'));
    if (dynamic_cast<const c10::OutOfMemoryError*>(&e) != nullptr || first.find("can't allocate") != std::string::npos ||
        first.find("out of memory") != std::string::npos) {
      std::cerr << "headroom decode: ran out of memory while decoding (" << first
                << "); give --budget the memory that is free (the plan then tiles to fit it) or use --mode exact\n";
      return 1;
    }
    std::cerr << "headroom decode: " << first << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "headroom decode: " << e.what() << "\n";
    return 1;
  }
}
