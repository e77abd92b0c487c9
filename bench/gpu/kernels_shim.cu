// C entry points over native/cuda/kernels.hpp for bench/gpu/kernels.py (ctypes), so the GPU run can time
// each CUDA kernel against its ATen twin without a Python binding in the pack. Built by bench/gpu/build.sh:
//   nvcc -O3 -shared -Xcompiler -fPIC -arch=sm_90 -I native bench/gpu/kernels_shim.cu native/cuda/kernels.cu
// Pointers arrive as integers (torch's data_ptr()), the stream as torch.cuda.current_stream().cuda_stream.
#include <cstdint>

#include "cuda/kernels.hpp"

using headroom::cuda::DType;
using headroom::cuda::Stream;

extern "C" {

int hr_groupnorm_apply(std::uintptr_t x, std::uintptr_t y, int dtype, std::uintptr_t scale, std::uintptr_t shift,
                       std::int64_t B, std::int64_t C, std::int64_t S, int silu, std::uintptr_t stream) {
  headroom::cuda::groupnorm_apply(reinterpret_cast<const void*>(x), reinterpret_cast<void*>(y), static_cast<DType>(dtype),
                                  reinterpret_cast<const float*>(scale), reinterpret_cast<const float*>(shift), B, C, S,
                                  silu != 0, reinterpret_cast<Stream>(stream));
  return headroom::cuda::last_error();
}

int hr_group_stats(std::uintptr_t x, int dtype, std::int64_t B, std::int64_t C, std::int64_t S, std::int64_t G,
                   std::uintptr_t out, std::uintptr_t stream) {
  headroom::cuda::group_stats(reinterpret_cast<const void*>(x), static_cast<DType>(dtype), B, C, S, G,
                              reinterpret_cast<float*>(out), reinterpret_cast<Stream>(stream));
  return headroom::cuda::last_error();
}

int hr_weighted_accumulate(std::uintptr_t acc, std::uintptr_t wsum, std::uintptr_t tile, std::uintptr_t wy,
                           std::uintptr_t wx, std::int64_t planes, std::int64_t H, std::int64_t W, std::int64_t h,
                           std::int64_t w, std::int64_t oy, std::int64_t ox, std::uintptr_t stream) {
  headroom::cuda::weighted_accumulate(reinterpret_cast<float*>(acc), reinterpret_cast<float*>(wsum),
                                      reinterpret_cast<const float*>(tile), reinterpret_cast<const float*>(wy),
                                      reinterpret_cast<const float*>(wx), planes, H, W, h, w, oy, ox,
                                      reinterpret_cast<Stream>(stream));
  return headroom::cuda::last_error();
}

int hr_normalize_accumulated(std::uintptr_t out, std::uintptr_t acc, std::uintptr_t wsum, std::int64_t planes,
                             std::int64_t HW, std::uintptr_t stream) {
  headroom::cuda::normalize_accumulated(reinterpret_cast<float*>(out), reinterpret_cast<const float*>(acc),
                                        reinterpret_cast<const float*>(wsum), planes, HW, reinterpret_cast<Stream>(stream));
  return headroom::cuda::last_error();
}

const char* hr_error_string(int code) { return headroom::cuda::error_string(code); }

}  // extern "C"
