#include "backend/cpu/parallel.h"

#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>

namespace fb::cpu {

namespace {
// True on a thread while it runs a parallel_for item: a nested parallel_for then runs serially
// instead of waiting for workers that are all busy.
thread_local bool t_inside_job = false;

struct InsideJob {
  InsideJob() { t_inside_job = true; }
  ~InsideJob() { t_inside_job = false; }
};
}  // namespace

int default_thread_count() {
  if (const char* env = std::getenv("FLASHBENCH_THREADS"); env != nullptr && *env != '\0') {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    constexpr long kMaxThreads = 4096;  // a typo guard, far above any machine we run on
    if (end == env || *end != '\0' || n < 1 || n > kMaxThreads)
      throw std::runtime_error("FLASHBENCH_THREADS must be a positive integer (1.." +
                               std::to_string(kMaxThreads) + "), got '" + env + "'");
    return static_cast<int>(n);
  }
  const unsigned hw = std::thread::hardware_concurrency();
  return hw == 0 ? 1 : static_cast<int>(hw);
}

ThreadPool::ThreadPool(int threads) {
  if (threads < 1) throw std::invalid_argument("ThreadPool: threads must be >= 1");
  workers_.reserve(threads - 1);
  for (int w = 1; w < threads; ++w) workers_.emplace_back([this, w] { worker_loop(w); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::parallel_for(std::int64_t n, const std::function<void(std::int64_t, int)>& fn) {
  if (n <= 0) return;
  if (t_inside_job || workers_.empty() || n == 1) {
    for (std::int64_t i = 0; i < n; ++i) fn(i, 0);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    fn_ = &fn;
    n_ = n;
    next_ = 0;
    error_ = nullptr;
    busy_ = static_cast<int>(workers_.size());
    ++generation_;
  }
  wake_.notify_all();
  drain(0);
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(mutex_);
    done_.wait(lock, [this] { return busy_ == 0; });
    fn_ = nullptr;
    error = std::exchange(error_, nullptr);
  }
  if (error) std::rethrow_exception(error);
}

void ThreadPool::worker_loop(int worker) {
  std::uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
    }
    drain(worker);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (--busy_ == 0) done_.notify_one();
    }
  }
}

void ThreadPool::drain(int worker) {
  InsideJob inside;
  for (;;) {
    std::int64_t i = 0;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (error_ || next_ >= n_) return;
      i = next_++;
    }
    try {
      (*fn_)(i, worker);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!error_) error_ = std::current_exception();
    }
  }
}

}  // namespace fb::cpu
