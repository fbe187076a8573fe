#include "core/util/parallel.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace alpa {

int32_t ResolveThreadCount(int32_t requested) {
  if (requested > 0) return requested;
  return std::max<int32_t>(1, static_cast<int32_t>(std::thread::hardware_concurrency()));
}

Status RunParallel(int64_t count, int32_t threads, const std::function<Status(int64_t)>& fn) {
  std::atomic<int64_t> next{0};
  std::mutex mu;
  Status first_error = Status::Ok();
  std::atomic<bool> failed{false};
  auto worker = [&] {
    while (!failed.load()) {
      const int64_t task = next.fetch_add(1);
      if (task >= count) return;
      Status st = fn(task);
      if (!st.ok()) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failed.exchange(true)) first_error = st;
      }
    }
  };
  std::vector<std::thread> pool;
  const int32_t extra =
      std::max<int32_t>(0, std::min<int32_t>(threads, static_cast<int32_t>(count)) - 1);
  for (int32_t k = 0; k < extra; ++k) pool.emplace_back(worker);
  worker();
  for (std::thread& th : pool) th.join();
  return first_error;
}

}  // namespace alpa
