// Recognisers for PyTorch's own allocator messages. The wording follows c10's
// CUDACachingAllocator / CUDAMallocAsyncAllocator / MPSAllocator and the real messages in
// shared/facts/oom-examples.json.
#include <cctype>

#include "core/oom/oom_recognisers.hpp"
#include "core/oom/oom_text.hpp"

namespace headroom::oom::detail {
namespace {

constexpr std::size_t kClauseWindow = 4096;  // the sentence's clauses follow within this many chars

bool starts_at(const std::string& n, std::size_t pos, const char* s) {
  return n.compare(pos, std::char_traits<char>::length(s), s) == 0;
}

// "CUDA out of memory" / "HIP out of memory" / "XPU out of memory" just before `pos`.
Backend backend_before(const std::string& n, std::size_t pos) {
  std::size_t head = rfind_str(n, "out of memory", pos);
  if (head == std::string::npos || pos - head > 200) return Backend::None;
  std::size_t w = head;
  while (w > 0 && n[w - 1] == ' ') --w;
  std::size_t b = w;
  while (b > 0 && std::isalpha(static_cast<unsigned char>(n[b - 1]))) --b;
  std::string word = n.substr(b, w - b);
  if (word == "CUDA") return Backend::Cuda;
  if (word == "HIP") return Backend::Rocm;
  if (word == "XPU") return Backend::Xpu;
  return Backend::None;
}

void set_size(std::optional<std::uint64_t>& field, const std::optional<Size>& s) {
  if (s && s->bytes) field = s->bytes;
}

// The clauses after "... is free. " in the sentence format; they come in this order but any may
// be missing (no processes listed without NVML, no "private pools" before 2.2).
void sentence_clauses(const std::string& n, std::size_t b, Report& r) {
  std::size_t e = std::min(n.size(), b + kClauseWindow);
  std::string region = n.substr(b, e - b);
  // Stop at the next OOM message so two pasted errors do not mix.
  if (auto next = region.find("Tried to allocate "); next != std::string::npos) region.resize(next);

  for (std::size_t p = region.find("Process "); p != std::string::npos; p = region.find("Process ", p + 8)) {
    std::size_t after = 0;
    auto pid = read_uint(region, p + 8, &after);
    if (!pid || !starts_at(region, after, " has ")) continue;
    auto size = read_size(region, after + 5);
    if (!size || !size->bytes || !starts_at(region, size->end, " memory in use")) continue;
    if (!r.other_processes) r.other_processes.emplace();
    r.other_processes->push_back({*pid, *size->bytes});
  }
  if (auto p = region.find("this process has "); p != std::string::npos) {
    auto size = read_size(region, p + 17);
    if (size && starts_at(region, size->end, " memory in use")) set_size(r.process_bytes, size);
  }
  if (auto p = region.find(" allowed; "); p != std::string::npos) {
    if (auto s = size_before(region, p); s && s->bytes) r.extra["allowed_bytes"] = *s->bytes;
  }
  if (auto p = region.find("Of the allocated memory "); p != std::string::npos) {
    auto size = read_size(region, p + 24);
    if (size && starts_at(region, size->end, " is allocated by PyTorch")) set_size(r.allocated_bytes, size);
  }
  if (auto p = region.find(" allocated in private pools"); p != std::string::npos) {
    if (auto s = size_before(region, p); s && s->bytes) r.extra["private_pools_bytes"] = *s->bytes;
  }
  if (auto p = region.find(" is reserved by PyTorch but unallocated"); p != std::string::npos)
    set_size(r.reserved_unallocated_bytes, size_before(region, p));
}

// "(GPU 0; 10.76 GiB total capacity; 3.22 GiB already allocated; 3.18 GiB free; 3.28 GiB reserved
// in total by PyTorch)" starting at the '('. Returns false if it is not that shape.
bool parenthesised(const std::string& n, std::size_t open, Report& r) {
  if (!starts_at(n, open, "(GPU ")) return false;
  std::size_t close = n.find(')', open);
  if (close == std::string::npos || close - open > 600) return false;
  std::string body = n.substr(open + 1, close - open - 1);
  std::size_t after = 0;
  auto gpu = read_uint(body, 4, &after);
  if (!gpu || after >= body.size() || body[after] != ';' || *gpu > 1024) return false;
  bool any = false;
  std::size_t p = after + 1;
  while (p < body.size()) {
    std::size_t semi = body.find(';', p);
    if (semi == std::string::npos) semi = body.size();
    std::string seg = body.substr(p, semi - p);
    p = semi + 1;
    auto size = read_size(seg, 0);
    if (!size) continue;
    std::string label = seg.substr(size->end);
    while (!label.empty() && label.front() == ' ') label.erase(label.begin());
    if (label == "total capacity") set_size(r.total_bytes, size), any = true;
    else if (label == "already allocated") set_size(r.allocated_bytes, size), any = true;
    else if (label == "free") set_size(r.free_bytes, size), any = true;
    else if (label.rfind("reserved in total", 0) == 0 || label == "cached") set_size(r.reserved_total_bytes, size), any = true;
    else if (label == "allowed" && size->bytes) r.extra["allowed_bytes"] = *size->bytes;
  }
  if (!any) return false;
  r.gpu_index = static_cast<int>(*gpu);
  return true;
}

}  // namespace

std::optional<Size> size_before(const std::string& n, std::size_t pos) {
  std::size_t b = pos;
  while (b > 0 && n[b - 1] == ' ') --b;
  while (b > 0 && std::isalpha(static_cast<unsigned char>(n[b - 1]))) --b;  // unit
  if (b > 0 && n[b - 1] == ' ') --b;
  std::size_t digits_end = b;
  while (b > 0 && (std::isdigit(static_cast<unsigned char>(n[b - 1])) || n[b - 1] == '.')) --b;
  if (b == digits_end) return std::nullopt;
  auto s = read_size(n, b);
  if (!s || s->end > pos) return std::nullopt;
  return s;
}

bool mps(const std::string& n, Report& r) {
  std::size_t p = rfind_str(n, "MPS backend out of memory");
  if (p == std::string::npos) return false;
  r.format = "mps";
  r.backend = Backend::Mps;
  r.origin = "pytorch";
  std::string region = n.substr(p, 1024);
  if (auto a = region.find("MPS allocated: "); a != std::string::npos) set_size(r.allocated_bytes, read_size(region, a + 15));
  if (auto a = region.find("other allocations: "); a != std::string::npos) {
    if (auto s = read_size(region, a + 19); s && s->bytes) r.extra["mps_other_allocations_bytes"] = *s->bytes;
  }
  if (auto a = region.find("max allowed: "); a != std::string::npos) {
    set_size(r.total_bytes, read_size(region, a + 13));
    if (r.total_bytes) {
      r.extra["total_is_mps_high_watermark_limit"] = true;
      r.notes.push_back("On Apple silicon the total is PyTorch's high-watermark limit (a share of unified memory), "
                        "not the size of a card.");
    }
  }
  if (auto a = region.find("Tried to allocate "); a != std::string::npos) set_size(r.requested_bytes, read_size(region, a + 18));
  return true;
}

bool pytorch_caching(const std::string& n, Report& r) {
  std::size_t t = rfind_str(n, "Tried to allocate ");
  std::optional<Size> req;
  if (t != std::string::npos) req = read_size(n, t + 18);
  if (!req) {
    // The parenthesised figures may be pasted alone (oom-077): "(GPU 0; 15.75 GiB total capacity; ...)".
    std::size_t cap = rfind_str(n, " total capacity;");
    if (cap == std::string::npos) return false;
    std::size_t open = rfind_str(n, "(GPU ", cap);
    if (open == std::string::npos || cap - open > 40 || !parenthesised(n, open, r)) return false;
    r.format = "pytorch_parenthesised";
    r.origin = "pytorch";
    r.backend = backend_before(n, open);
    return true;
  }
  r.origin = "pytorch";
  r.backend = backend_before(n, t);
  set_size(r.requested_bytes, req);
  std::size_t after = req->end;
  if (starts_at(n, after, " (GPU ") && parenthesised(n, after + 1, r)) {
    r.format = "pytorch_parenthesised";
    return true;
  }
  if (starts_at(n, after, ". GPU")) {
    std::size_t i = after + 5;
    std::size_t gpu_end = 0;
    auto gpu = i < n.size() && n[i] == ' ' ? read_uint(n, i + 1, &gpu_end) : std::nullopt;
    if (!gpu) {
      // PyTorch streams the int8 device index as a char: index 0 is a NUL that ends the C string
      // (pytorch/pytorch#123984, #168369). Everything after "GPU" is lost.
      r.format = "pytorch_sentence_truncated";
      r.extra["gpu_index_implied"] = 0;
      r.notes.push_back("The message was cut after \"GPU\": PyTorch printed the device index as a character, "
                        "and index 0 is a NUL byte. The device is most likely GPU 0; the other figures are lost.");
      return true;
    }
    r.format = "pytorch_sentence";
    if (*gpu <= 1024) r.gpu_index = static_cast<int>(*gpu);
    std::size_t p = gpu_end;
    // "capacty" is a real typo in PyTorch 2.1's message.
    if (starts_at(n, p, " has a total capacity of ")) p += 25;
    else if (starts_at(n, p, " has a total capacty of ")) p += 24;
    else return true;
    auto total = read_size(n, p);
    if (!total) return true;
    set_size(r.total_bytes, total);
    p = total->end;
    if (!starts_at(n, p, " of which ")) return true;
    auto free = read_size(n, p + 10);
    if (!free) return true;
    set_size(r.free_bytes, free);
    sentence_clauses(n, free->end, r);
    return true;
  }
  r.format = "pytorch_short";
  return true;
}

bool pytorch_async(const std::string& n, Report& r) {
  std::size_t p = rfind_str(n, "Allocation on device");
  if (p == std::string::npos) return false;
  std::size_t after = p + 20;
  std::size_t gpu_end = 0;
  auto gpu = after < n.size() && n[after] == ' ' ? read_uint(n, after + 1, &gpu_end) : std::nullopt;
  if (gpu && starts_at(n, gpu_end, " would exceed allowed memory")) {
    r.format = "pytorch_async";
    if (*gpu <= 1024) r.gpu_index = static_cast<int>(*gpu);
  } else if (!gpu && (after >= n.size() - 1 || contains(n, "OutOfMemoryError"))) {
    r.format = "pytorch_async_truncated";
    r.extra["gpu_index_implied"] = 0;
    r.notes.push_back("The message ends after \"Allocation on device\": PyTorch printed the device index as a "
                      "character and index 0 is a NUL byte that cut the text. The device is most likely GPU 0; "
                      "the figures are lost.");
  } else {
    return false;
  }
  // cudaMallocAsync is CUDA-only (ROCm builds print the caching allocator's message).
  r.backend = Backend::Cuda;
  r.origin = "pytorch";
  std::string region = n.substr(p, kClauseWindow);
  auto field = [&](const char* label) -> std::optional<Size> {
    std::size_t a = region.find(label);
    if (a == std::string::npos) return std::nullopt;
    std::size_t colon = region.find(':', a);
    if (colon == std::string::npos || colon - a > 80) return std::nullopt;
    return read_size(region, colon + 1);
  };
  set_size(r.allocated_bytes, field("Currently allocated"));
  set_size(r.requested_bytes, field("Requested"));
  set_size(r.total_bytes, field("Device limit"));
  set_size(r.free_bytes, field("Free (according to CUDA)"));
  if (auto limit = field("PyTorch limit (set by user-supplied memory fraction)")) {
    if (limit->bytes) {
      r.extra["pytorch_limit_bytes"] = *limit->bytes;
    } else {
      r.extra["pytorch_limit_exact"] = limit->display;
      r.notes.push_back("PyTorch limit " + limit->display + " is 2^64 bytes: no memory fraction is set.");
    }
  }
  return true;
}

bool directml(const std::string& n, Report& r) {
  std::size_t p = rfind_str(n, "Could not allocate tensor with ");
  if (p == std::string::npos || !contains(n, "not enough GPU video memory")) return false;
  r.format = "directml";
  r.backend = Backend::Directml;
  r.origin = "pytorch";
  set_size(r.requested_bytes, read_size(n, p + 31));
  return true;
}

bool cpu_allocator(const std::string& n, Report& r) {
  std::size_t p = rfind_str(n, "DefaultCPUAllocator");
  if (p == std::string::npos) return false;
  std::size_t t = n.find("you tried to allocate ", p);
  bool memory_words = contains(n, "not enough memory") || contains(n, "can't allocate memory");
  if (!memory_words) return false;
  r.format = "cpu_allocator";
  r.backend = Backend::Cpu;
  r.origin = "pytorch";
  if (t != std::string::npos && t - p < 200) set_size(r.requested_bytes, read_size(n, t + 22));
  r.notes.push_back("This is system RAM (PyTorch's CPU allocator), not GPU memory.");
  return true;
}

bool pytorch_generic(const std::string& n, Report& r) {
  // The exception line itself ("...OutOfMemoryError: ..." or ComfyUI's "Exception Type:** ...OutOfMemoryError"),
  // not a mention in quoted source such as "except torch.cuda.OutOfMemoryError:".
  static const char* kMarks[] = {"OutOfMemoryError: ", "Exception Type:** torch.OutOfMemoryError",
                                 "Exception Type:** torch.cuda.OutOfMemoryError", "CUDA out of memory",
                                 "HIP out of memory", "XPU out of memory"};
  for (const char* m : kMarks) {
    std::size_t p = rfind_str(n, m);
    // Skip "except torch.cuda.OutOfMemoryError:" lines of a printed traceback.
    while (p != std::string::npos) {
      std::size_t e = rfind_str(n, "except ", p);
      if (e == std::string::npos || p - e > 24) break;
      p = p == 0 ? std::string::npos : rfind_str(n, m, p - 1);
    }
    if (p == std::string::npos) continue;
    r.format = "pytorch_generic";
    r.origin = "pytorch";
    if (contains(n, "HIP out of memory")) r.backend = Backend::Rocm;
    else if (contains(n, "XPU out of memory")) r.backend = Backend::Xpu;
    else if (contains(n, "torch.cuda.") || contains(n, "CUDA")) r.backend = Backend::Cuda;
    return true;
  }
  return false;
}

}  // namespace headroom::oom::detail
