#pragma once
// A value built on first use by a loader that may throw: the data files under HEADROOM_DATA_DIR are the
// user's, and a broken one must answer with an error, whatever the toolchain.
//
// Not std::call_once: with libstdc++ linked statically (the source-built C library), an exception
// leaving call_once unwinds through glibc's pthread_once, which has no unwind tables, and ends in
// abort() inside ComfyUI. Here the loader runs under a plain mutex, so its exception reaches the
// caller like any other, and a failed load stores nothing: the next call tries again and fails with
// the same words (or succeeds, once the file is fixed and nothing cached the broken parse).
#include <atomic>
#include <memory>
#include <mutex>

namespace headroom {

template <typename T>
class LoadOnce {
 public:
  template <typename Loader>
  const T& get(Loader&& load) {
    if (const T* ready = ready_.load(std::memory_order_acquire)) return *ready;
    std::lock_guard<std::mutex> lock(mutex_);
    if (!value_) {
      auto value = std::make_unique<T>(load());
      value_ = std::move(value);
      ready_.store(value_.get(), std::memory_order_release);
    }
    return *value_;
  }

 private:
  std::mutex mutex_;
  std::unique_ptr<T> value_;
  std::atomic<const T*> ready_{nullptr};
};

}  // namespace headroom
