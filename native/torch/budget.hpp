#pragma once
// How much device memory a decode may use when the caller gave no budget.
#include <cstdint>
#include <optional>

#include <c10/core/Device.h>

namespace headroom::torch_ops {

// Free memory as ComfyUI's model_management.get_free_memory defines it for CUDA:
// cudaMemGetInfo().free + (bytes the caching allocator reserved - bytes active in it), because
// reserved-but-inactive blocks are reusable by us. nullopt on the CPU (no budget there) and in
// builds whose LibTorch has no CUDA.
std::optional<std::uint64_t> free_device_bytes(const c10::Device& device);

// Bytes the caching allocator currently holds as active / its peak since the last reset, on CUDA;
// nullopt elsewhere. Used to report measured peaks next to planned ones.
std::optional<std::uint64_t> device_peak_reserved_bytes(const c10::Device& device);
void reset_device_peak(const c10::Device& device);

}  // namespace headroom::torch_ops
