#pragma once
// CUDA kernels of the tiled decoders behind plain C++ functions: raw device pointers, sizes and a
// stream, so callers need neither CUDA headers nor a CUDA build of LibTorch to declare them.
// Every function enqueues on `stream` and returns at once; errors are reported through
// last_error() (cudaGetLastError after the launch), never by exceptions across the boundary.
#include <cstdint>

struct CUstream_st;

namespace headroom::cuda {

using Stream = CUstream_st*;  // == cudaStream_t

enum class DType : int { F32 = 0, F16 = 1, BF16 = 2 };

// y[b, c, s] = x * scale[b, c] + shift[b, c], then SiLU if `silu`. x, y contiguous [B, C, S] in
// `dtype` (may alias); scale/shift fp32 [B, C]. Arithmetic in fp32.
void groupnorm_apply(const void* x, void* y, DType dtype, const float* scale, const float* shift, std::int64_t B,
                     std::int64_t C, std::int64_t S, bool silu, Stream stream);

// Per (b, g) of x [B, C, S] (groups of C/G consecutive channels): count, mean and M2 (sum of
// squared deviations) in fp32, written to out[(b * G + g) * 3 + {0, 1, 2}].
void group_stats(const void* x, DType dtype, std::int64_t B, std::int64_t C, std::int64_t S, std::int64_t G,
                 float* out, Stream stream);

// acc[p, oy + y, ox + x] += tile[p, y, x] * wy[y] * wx[x] for p < planes, and
// wsum[oy + y, ox + x] += wy[y] * wx[x]. acc [planes, H, W], tile [planes, h, w], fp32.
void weighted_accumulate(float* acc, float* wsum, const float* tile, const float* wy, const float* wx,
                         std::int64_t planes, std::int64_t H, std::int64_t W, std::int64_t h, std::int64_t w,
                         std::int64_t oy, std::int64_t ox, Stream stream);

// out[p, i] = acc[p, i] / wsum[i] over planes x (H*W) elements.
void normalize_accumulated(float* out, const float* acc, const float* wsum, std::int64_t planes, std::int64_t HW,
                           Stream stream);

// 0 when the last launch succeeded, else the cudaError_t value; message() describes it.
int last_error();
const char* error_string(int code);

}  // namespace headroom::cuda
