// Proves the kernels compile for every target architecture and link into a plain C++ program, on
// machines whose LibTorch has no CUDA (CI). Where a GPU is present it also checks each kernel
// against a plain CPU computation on small inputs (the same maths as the ATen paths in
// native/torch/groupnorm.cpp and tiling.cpp), and fails if they disagree.
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdio>
#include <vector>

#include "cuda/kernels.hpp"

namespace {

namespace k = headroom::cuda;

template <class T>
T* upload(const std::vector<T>& v) {
  T* d = nullptr;
  cudaMalloc(reinterpret_cast<void**>(&d), v.size() * sizeof(T));
  cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice);
  return d;
}
template <class T>
std::vector<T> download(const T* d, size_t n) {
  std::vector<T> v(n);
  cudaMemcpy(v.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost);
  return v;
}

double max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::fmax(m, std::fabs(double(a[i]) - double(b[i])));
  return m;
}

int check_on_gpu() {
  int failures = 0;
  const int B = 2, C = 8, G = 4, S = 37;
  std::vector<float> x(B * C * S);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37 * i) * 3.0f + 0.5f * (i % 7);
  float* dx = upload(x);

  // group_stats vs a two-pass CPU computation.
  float* dstats = nullptr;
  cudaMalloc(reinterpret_cast<void**>(&dstats), B * G * 3 * sizeof(float));
  k::group_stats(dx, k::DType::F32, B, C, S, G, dstats, nullptr);
  auto stats = download(dstats, B * G * 3);
  std::vector<float> want(B * G * 3);
  const int len = C / G * S;
  for (int bg = 0; bg < B * G; ++bg) {
    double mean = 0, m2 = 0;
    for (int i = 0; i < len; ++i) mean += x[bg * len + i];
    mean /= len;
    for (int i = 0; i < len; ++i) m2 += (x[bg * len + i] - mean) * (x[bg * len + i] - mean);
    want[bg * 3] = float(len);
    want[bg * 3 + 1] = float(mean);
    want[bg * 3 + 2] = float(m2);
  }
  const double ds = max_diff(stats, want);
  std::printf("group_stats max |diff| %.3g\n", ds);
  failures += ds > 1e-3;

  // groupnorm_apply (+SiLU) vs CPU.
  std::vector<float> scale(B * C), shift(B * C);
  for (int i = 0; i < B * C; ++i) {
    scale[i] = 0.5f + 0.1f * i;
    shift[i] = -0.2f + 0.05f * i;
  }
  float *dscale = upload(scale), *dshift = upload(shift), *dy = upload(x);
  k::groupnorm_apply(dx, dy, k::DType::F32, dscale, dshift, B, C, S, true, nullptr);
  auto y = download(dy, x.size());
  std::vector<float> wy(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float v = x[i] * scale[i / S] + shift[i / S];
    wy[i] = v / (1.f + std::exp(-v));
  }
  const double da = max_diff(y, wy);
  std::printf("groupnorm_apply+silu max |diff| %.3g\n", da);
  failures += da > 1e-5;

  // weighted_accumulate + normalize: two overlapping tiles of a constant image give the constant back.
  const int P = 3, H = 6, W = 9, h = 6, w = 6;
  std::vector<float> tile(P * h * w, 2.5f), ramp_lo = {1, 1, 1, 1, 1, 1}, ramp_x1 = {1, 1, 1, .75f, .5f, .25f},
                                         ramp_x2 = {.25f, .5f, .75f, 1, 1, 1};
  float *dacc = upload(std::vector<float>(P * H * W, 0.f)), *dw = upload(std::vector<float>(H * W, 0.f));
  float *dt = upload(tile), *dry = upload(ramp_lo), *drx1 = upload(ramp_x1), *drx2 = upload(ramp_x2);
  k::weighted_accumulate(dacc, dw, dt, dry, drx1, P, H, W, h, w, 0, 0, nullptr);
  k::weighted_accumulate(dacc, dw, dt, dry, drx2, P, H, W, h, w, 0, 3, nullptr);
  float* dout = upload(std::vector<float>(P * H * W, 0.f));
  k::normalize_accumulated(dout, dacc, dw, P, H * W, nullptr);
  auto out = download(dout, P * H * W);
  const double db = max_diff(out, std::vector<float>(P * H * W, 2.5f));
  std::printf("weighted_accumulate/normalize max |diff| %.3g\n", db);
  failures += db > 1e-6;
  const int e = k::last_error();
  if (e) std::printf("CUDA error: %s\n", k::error_string(e));
  return failures + (e != 0);
}

}  // namespace

int main() {
  // Taking the addresses forces the linker to resolve every entry point.
  void* entries[] = {reinterpret_cast<void*>(&k::groupnorm_apply), reinterpret_cast<void*>(&k::group_stats),
                     reinterpret_cast<void*>(&k::weighted_accumulate),
                     reinterpret_cast<void*>(&k::normalize_accumulated)};
  int linked = 0;
  for (void* e : entries) linked += e != nullptr;
  std::printf("headroom cuda kernels linked: %d/4\n", linked);
  if (linked != 4) return 1;
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device here: kernels compiled and linked, not run\n");
    return 0;
  }
  const int failures = check_on_gpu();
  std::printf(failures ? "kernel checks FAILED\n" : "kernel checks passed on the GPU\n");
  return failures ? 1 : 0;
}
