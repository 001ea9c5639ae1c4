// A small thread pool with one operation, parallel_for, for the CPU kernels.
//
// Work items are independent (each writes its own rows), so the order in which threads pick them
// does not change any result: outputs are the same for any thread count.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace fb::cpu {

// FLASHBENCH_THREADS if set (a positive integer; anything else throws std::runtime_error naming
// the variable), else std::thread::hardware_concurrency() (at least 1).
int default_thread_count();

class ThreadPool {
 public:
  // `threads` >= 1 workers in all; the calling thread is worker 0, so threads - 1 are started.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Calls fn(index, worker) for every index in [0, n), worker in [0, size()) naming the thread (for
  // per-thread scratch). Returns when all are done; rethrows the first exception a call threw
  // (the remaining indices are then skipped). A call from inside fn runs serially on that thread.
  void parallel_for(std::int64_t n, const std::function<void(std::int64_t, int)>& fn);

 private:
  void worker_loop(int worker);
  void drain(int worker);  // takes indices of the current job until none are left

  std::vector<std::thread> workers_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable done_;
  bool stopping_ = false;
  std::uint64_t generation_ = 0;  // bumped per job, so a worker joins each job once
  int busy_ = 0;                  // workers still inside the current job

  // The current job (valid while busy_ > 0 or the caller is draining).
  const std::function<void(std::int64_t, int)>* fn_ = nullptr;
  std::int64_t n_ = 0;
  std::int64_t next_ = 0;  // next index to hand out (under mutex_)
  std::exception_ptr error_;
};

}  // namespace fb::cpu
