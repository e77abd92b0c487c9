#include "torch/tiling_kernels.hpp"

#ifdef HEADROOM_TORCH_CUDA
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "core/base/error.hpp"
#include "cuda/kernels.hpp"
#endif

namespace headroom::torch_ops::tiling_kernels {

#ifdef HEADROOM_TORCH_CUDA
namespace {
bool dtype_of(const at::Tensor& t, headroom::cuda::DType& d) {
  switch (t.scalar_type()) {
    case at::kFloat: d = headroom::cuda::DType::F32; return true;
    case at::kHalf: d = headroom::cuda::DType::F16; return true;
    case at::kBFloat16: d = headroom::cuda::DType::BF16; return true;
    default: return false;
  }
}
headroom::cuda::Stream stream_of(const at::Tensor& t) {
  return reinterpret_cast<headroom::cuda::Stream>(c10::cuda::getCurrentCUDAStream(t.device().index()).stream());
}
void check(const char* what) {
  const int e = headroom::cuda::last_error();
  if (e != 0) throw headroom::Error(std::string(what) + ": CUDA launch failed: " + headroom::cuda::error_string(e));
}
}  // namespace

bool available() { return true; }

bool weighted_accumulate(at::Tensor& acc, at::Tensor& wsum, const at::Tensor& tile, const at::Tensor& wy,
                         const at::Tensor& wx, int64_t y, int64_t x) {
  if (!acc.is_cuda()) return false;
  c10::cuda::CUDAGuard guard(acc.device());
  headroom::cuda::weighted_accumulate(acc.data_ptr<float>(), wsum.data_ptr<float>(), tile.data_ptr<float>(),
                                      wy.data_ptr<float>(), wx.data_ptr<float>(), acc.size(0), acc.size(1),
                                      acc.size(2), tile.size(1), tile.size(2), y, x, stream_of(acc));
  check("weighted_accumulate");
  return true;
}

at::Tensor normalize_accumulated(const at::Tensor& acc, const at::Tensor& wsum) {
  if (!acc.is_cuda()) return {};
  c10::cuda::CUDAGuard guard(acc.device());
  at::Tensor out = at::empty_like(acc);
  headroom::cuda::normalize_accumulated(out.data_ptr<float>(), acc.data_ptr<float>(), wsum.data_ptr<float>(),
                                        acc.size(0), acc.size(1) * acc.size(2), stream_of(acc));
  check("normalize_accumulated");
  return out;
}

at::Tensor groupnorm_apply(const at::Tensor& x, const at::Tensor& scale, const at::Tensor& shift, bool silu) {
  headroom::cuda::DType d;
  if (!x.is_cuda() || !x.is_contiguous() || !dtype_of(x, d)) return {};
  c10::cuda::CUDAGuard guard(x.device());
  at::Tensor out = at::empty_like(x);
  at::Tensor s = scale.to(at::kFloat).contiguous(), b = shift.to(at::kFloat).contiguous();
  headroom::cuda::groupnorm_apply(x.data_ptr(), out.data_ptr(), d, s.data_ptr<float>(), b.data_ptr<float>(), x.size(0),
                                  x.size(1), x.numel() / (x.size(0) * x.size(1)), silu, stream_of(x));
  check("groupnorm_apply");
  return out;
}

at::Tensor group_stats(const at::Tensor& x, int64_t groups) {
  headroom::cuda::DType d;
  if (!x.is_cuda() || !x.is_contiguous() || !dtype_of(x, d)) return {};
  c10::cuda::CUDAGuard guard(x.device());
  at::Tensor out = at::empty({x.size(0), groups, 3}, x.options().dtype(at::kFloat));
  headroom::cuda::group_stats(x.data_ptr(), d, x.size(0), x.size(1), x.numel() / (x.size(0) * x.size(1)), groups,
                              out.data_ptr<float>(), stream_of(x));
  check("group_stats");
  return out;
}
#else
bool available() { return false; }
bool weighted_accumulate(at::Tensor&, at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, int64_t,
                         int64_t) {
  return false;
}
at::Tensor normalize_accumulated(const at::Tensor&, const at::Tensor&) { return {}; }
at::Tensor groupnorm_apply(const at::Tensor&, const at::Tensor&, const at::Tensor&, bool) { return {}; }
at::Tensor group_stats(const at::Tensor&, int64_t) { return {}; }
#endif

}  // namespace headroom::torch_ops::tiling_kernels
