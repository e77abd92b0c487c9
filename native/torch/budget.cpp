#include "torch/budget.hpp"

#ifdef HEADROOM_TORCH_CUDA
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAGuard.h>
#include <cuda_runtime_api.h>
#endif

namespace headroom::torch_ops {

#ifdef HEADROOM_TORCH_CUDA
namespace {
using c10::cuda::CUDACachingAllocator::getDeviceStats;
// StatType moved from CUDACachingAllocator to c10::CachingAllocator (c10/core/Allocator.h) in torch 2.x.
constexpr size_t kAggregate = static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE);
int index_of(const c10::Device& d) { return d.has_index() ? d.index() : 0; }
}  // namespace

std::optional<std::uint64_t> free_device_bytes(const c10::Device& device) {
  if (!device.is_cuda()) return std::nullopt;
  c10::cuda::CUDAGuard guard(index_of(device));
  size_t free = 0, total = 0;
  if (cudaMemGetInfo(&free, &total) != cudaSuccess) return std::nullopt;
  const auto stats = getDeviceStats(index_of(device));
  const auto reserved = stats.reserved_bytes[kAggregate].current;
  const auto active = stats.active_bytes[kAggregate].current;
  return static_cast<std::uint64_t>(free) + static_cast<std::uint64_t>(reserved > active ? reserved - active : 0);
}

std::optional<std::uint64_t> device_peak_reserved_bytes(const c10::Device& device) {
  if (!device.is_cuda()) return std::nullopt;
  return static_cast<std::uint64_t>(getDeviceStats(index_of(device)).reserved_bytes[kAggregate].peak);
}

void reset_device_peak(const c10::Device& device) {
  if (device.is_cuda()) c10::cuda::CUDACachingAllocator::resetPeakStats(index_of(device));
}
#else
std::optional<std::uint64_t> free_device_bytes(const c10::Device&) { return std::nullopt; }
std::optional<std::uint64_t> device_peak_reserved_bytes(const c10::Device&) { return std::nullopt; }
void reset_device_peak(const c10::Device&) {}
#endif

}  // namespace headroom::torch_ops
