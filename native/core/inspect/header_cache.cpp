#include "core/inspect/header_cache.hpp"

#include <chrono>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "core/base/error.hpp"
#include "core/base/file_reader.hpp"
#include "core/inspect/recognise.hpp"

namespace headroom {
namespace {

// The name is part of the key because the answer depends on it: models that share an architecture
// (Flux dev and Kontext) are told apart by the file name.
struct Key {
  FileIdentity id;
  std::string name;
  bool operator<(const Key& o) const { return id != o.id ? id < o.id : name < o.name; }
};

struct Answer {
  std::shared_ptr<const Inspection> inspection;  // null when the header is malformed
  std::string error;                             // FileFormatError's message without the path
};

bool settled(const FileIdentity& id) {
  const auto now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  return id.mtime_ns < now - kHeaderCacheSettleNs;
}

class HeaderCache {
 public:
  std::shared_ptr<const Answer> find(const Key& k) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = index_.find(k);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    ++hits_;
    return it->second->second;
  }
  void counted_read() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++reads_;
  }
  void put(const Key& k, std::shared_ptr<const Answer> a) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = index_.find(k); it != index_.end()) {  // another thread read it meanwhile
      order_.splice(order_.begin(), order_, it->second);
      return;
    }
    order_.emplace_front(k, std::move(a));
    index_.emplace(k, order_.begin());
    while (order_.size() > kHeaderCacheEntries) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
  }
  HeaderCacheCounts counts() {
    std::lock_guard<std::mutex> lock(mutex_);
    return {reads_, hits_, order_.size()};
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    index_.clear();
    order_.clear();
    reads_ = hits_ = 0;
  }

 private:
  using Entry = std::pair<Key, std::shared_ptr<const Answer>>;
  std::mutex mutex_;
  std::list<Entry> order_;  // most recently used first
  std::map<Key, std::list<Entry>::iterator> index_;
  std::uint64_t reads_ = 0, hits_ = 0;
};

HeaderCache& cache() {
  static HeaderCache c;
  return c;
}

Inspection answer_for(const Answer& a, const std::string& path) {
  if (!a.inspection) throw FileFormatError(path, a.error);
  Inspection out = *a.inspection;
  out.path = path;
  return out;
}

}  // namespace

Inspection inspect_file_cached(const std::string& path) {
  FileSource source(path);  // Error (not kept) when it cannot be opened or is no regular file
  const FileIdentity before = source.identity();
  const Key key{before, path_file_name(path)};
  if (auto hit = cache().find(key)) return answer_for(*hit, path);

  cache().counted_read();
  auto answer = std::make_shared<Answer>();
  try {
    answer->inspection = std::make_shared<const Inspection>(recognise_tensors(read_model_file(source)));
  } catch (const FileFormatError& e) {
    const std::string what = e.what();
    const std::string lead = e.path() + ": ";
    answer->error = what.compare(0, lead.size(), lead) == 0 ? what.substr(lead.size()) : what;
  }
  // Kept only when the file did not change while it was read and has not changed just before.
  if (source.identity() == before && settled(before)) cache().put(key, answer);
  return answer_for(*answer, path);
}

HeaderCacheCounts header_cache_counts() { return cache().counts(); }

void clear_header_cache() { cache().clear(); }

}  // namespace headroom
