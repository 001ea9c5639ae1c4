// RAII for the CUDA backend's resources: a tracking allocator and its device buffers, a stream, events,
// a cuBLAS handle and the L2 flush. Copies are deleted; moves hand ownership over. Releases never throw,
// and are silent once a kernel fault has lost the CUDA context (FB_CUDA_CHECK_NOTHROW).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <utility>

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include "attention.h"  // read_all
#include "common/check.h"

namespace fb::cuda {

class TrackingAllocator;

// Device memory obtained through a TrackingAllocator; freed (and un-counted) when destroyed.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept { swap(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    DeviceBuffer tmp(std::move(o));
    swap(tmp);
    return *this;
  }
  ~DeviceBuffer() { reset(); }

  void* get() const { return ptr_; }
  template <typename T> T* as() const { return static_cast<T*>(ptr_); }
  std::size_t bytes() const { return bytes_; }
  explicit operator bool() const { return ptr_ != nullptr; }
  inline void reset();

 private:
  friend class TrackingAllocator;
  DeviceBuffer(void* p, std::size_t bytes, TrackingAllocator* owner) : ptr_(p), bytes_(bytes), owner_(owner) {}
  void swap(DeviceBuffer& o) noexcept {
    std::swap(ptr_, o.ptr_);
    std::swap(bytes_, o.bytes_);
    std::swap(owner_, o.owner_);
  }
  void* ptr_ = nullptr;
  std::size_t bytes_ = 0;
  TrackingAllocator* owner_ = nullptr;
};

// Every device allocation of a case (inputs, outputs, workspace) goes through here, so the backend
// can report what a kernel run needed. Counts requested bytes (not the driver's page rounding).
class TrackingAllocator {
 public:
  TrackingAllocator() = default;
  TrackingAllocator(const TrackingAllocator&) = delete;
  TrackingAllocator& operator=(const TrackingAllocator&) = delete;

  // A failed cudaMalloc is an expected outcome (a case too large for the device), so it gets its own
  // type, with the bytes asked for and held in the message; nothing is left allocated.
  class OutOfMemory : public std::runtime_error {
   public:
    using std::runtime_error::runtime_error;
  };

  // `what` names the buffer in the error message ("workspace", "O"...). 0 bytes -> an empty buffer.
  DeviceBuffer allocate(std::size_t bytes, const std::string& what) {
    if (bytes == 0) return DeviceBuffer();
    void* p = nullptr;
    const cudaError_t err = cudaMalloc(&p, bytes);
    if (err != cudaSuccess) {
      (void)cudaGetLastError();  // an allocation failure is not sticky: clear it for the next case
      throw OutOfMemory("cannot allocate " + what + ": " + std::to_string(bytes) + " bytes (" +
                        gib(bytes) + ") on top of " + std::to_string(current_) +
                        " bytes held: " + cudaGetErrorString(err));
    }
    current_ += bytes;
    if (current_ > peak_) peak_ = current_;
    return DeviceBuffer(p, bytes, this);
  }

  std::uint64_t current() const { return current_; }
  std::uint64_t peak() const { return peak_; }
  // Starts a new peak measurement from what is held now.
  void reset_peak() { peak_ = current_; }

  static std::string gib(std::uint64_t bytes) {
    constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.2f GiB", double(bytes) / kGiB);
    return buf;
  }

 private:
  friend class DeviceBuffer;
  void release(void* p, std::size_t bytes) {
    FB_CUDA_CHECK_NOTHROW(cudaFree(p));
    current_ -= bytes;
  }
  std::uint64_t current_ = 0;
  std::uint64_t peak_ = 0;
};

inline void DeviceBuffer::reset() {
  if (ptr_) owner_->release(ptr_, bytes_);
  ptr_ = nullptr;
  bytes_ = 0;
  owner_ = nullptr;
}

class Stream {
 public:
  Stream() { FB_CUDA_CHECK(cudaStreamCreateWithFlags(&s_, cudaStreamNonBlocking)); }
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream() { FB_CUDA_CHECK_NOTHROW(cudaStreamDestroy(s_)); }
  cudaStream_t get() const { return s_; }
  void sync() const { FB_CUDA_CHECK(cudaStreamSynchronize(s_)); }

 private:
  cudaStream_t s_ = nullptr;
};

class Event {
 public:
  Event() { FB_CUDA_CHECK(cudaEventCreate(&e_)); }
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  Event(Event&& o) noexcept : e_(std::exchange(o.e_, nullptr)) {}
  Event& operator=(Event&&) = delete;
  ~Event() {
    if (e_) FB_CUDA_CHECK_NOTHROW(cudaEventDestroy(e_));
  }
  void record(cudaStream_t s) { FB_CUDA_CHECK(cudaEventRecord(e_, s)); }
  // Milliseconds from `start` to this event; both must have completed.
  float since(const Event& start) const {
    float ms = 0;
    FB_CUDA_CHECK(cudaEventElapsedTime(&ms, start.e_, e_));
    return ms;
  }

 private:
  cudaEvent_t e_ = nullptr;
};

// A cuBLAS handle bound to one stream, default math mode (the naive path picks exact compute types
// per call, so no TF32 creeps in through the handle).
class CublasHandle {
 public:
  explicit CublasHandle(cudaStream_t s) {
    FB_CUBLAS_CHECK(cublasCreate(&h_));
    FB_CUBLAS_CHECK(cublasSetStream(h_, s));
    FB_CUBLAS_CHECK(cublasSetMathMode(h_, CUBLAS_DEFAULT_MATH));
  }
  CublasHandle(const CublasHandle&) = delete;
  CublasHandle& operator=(const CublasHandle&) = delete;
  ~CublasHandle() {
    if (h_) {
      const cublasStatus_t st = cublasDestroy(h_);
      // After a kernel fault it fails like every other release (common/check.h): nothing more to say.
      if (st != CUBLAS_STATUS_SUCCESS && !cuda_context_lost())
        std::fprintf(stderr, "flashbench: cublasDestroy: %s\n", cublasGetStatusString(st));
    }
  }
  cublasHandle_t get() const { return h_; }

 private:
  cublasHandle_t h_ = nullptr;
};

// Writes a buffer larger than the L2 cache so that a timed kernel starts with nothing of its inputs
// cached (as in a real model, where other layers ran in between). Its memory is the harness's, not
// a case's: allocated once, outside the tracking allocator.
//
// Two modes (FB_L2_FLUSH, read once per process; the results' settings.l2_flush_mode names it):
//   write  (the default) the write alone: the L2 is then full of the buffer's dirty lines, and the timed kernel's first
//          loads write them back to memory inside its window
//   clean  the write, then a read of a second buffer as large (read_all): the dirty lines are written back before the
//          timed window, which opens on an L2 of clean lines. Session 54's calls R-R3 (docs/perf-notes.md) timed one
//          short kernel (PyTorch's cuDNN forward, 32 x 8 heads N = 1024 d = 128) in two modes 5-10% apart under the
//          write alone, and nearly level with the read after it.
class L2Flush {
 public:
  // Twice the L2 size: a write of that much evicts every line whatever the replacement policy keeps.
  static constexpr int kL2Multiple = 2;
  enum class Mode { write, clean };

  // FB_L2_FLUSH's mode: unset or empty = write; anything but write / clean throws, naming the variable.
  static Mode mode_from_env() {
    const char* e = std::getenv("FB_L2_FLUSH");
    if (e == nullptr || *e == '\0' || std::string(e) == "write") return Mode::write;
    if (std::string(e) == "clean") return Mode::clean;
    throw std::runtime_error("FB_L2_FLUSH=" + std::string(e) + ": the L2 flush is 'write' (the default) or 'clean'");
  }

  explicit L2Flush(int device, Mode mode = mode_from_env()) : mode_(mode) {
    int l2 = 0;
    FB_CUDA_CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
    bytes_ = std::size_t(l2) * kL2Multiple;
    if (bytes_) FB_CUDA_CHECK(cudaMalloc(&buf_, bytes_));
    if (bytes_ && mode_ == Mode::clean) {
      FB_CUDA_CHECK(cudaMalloc(&clean_, bytes_ + sizeof(unsigned)));  // the read's buffer, then its sink
      FB_CUDA_CHECK(cudaMemset(clean_, 0, bytes_ + sizeof(unsigned)));
    }
  }
  L2Flush(const L2Flush&) = delete;
  L2Flush& operator=(const L2Flush&) = delete;
  ~L2Flush() {
    if (buf_) FB_CUDA_CHECK_NOTHROW(cudaFree(buf_));
    if (clean_) FB_CUDA_CHECK_NOTHROW(cudaFree(clean_));
  }
  void flush(cudaStream_t s) const {
    if (!bytes_) return;
    FB_CUDA_CHECK(cudaMemsetAsync(buf_, 0, bytes_, s));
    if (clean_) read_all(clean_, bytes_, reinterpret_cast<unsigned*>(static_cast<char*>(clean_) + bytes_), s);
  }
  std::size_t bytes() const { return bytes_; }
  const char* mode_name() const { return mode_ == Mode::clean ? "clean" : "write"; }

 private:
  Mode mode_ = Mode::write;
  void* buf_ = nullptr;
  void* clean_ = nullptr;
  std::size_t bytes_ = 0;
};

// All-ones bytes are NaN in fp64, fp32, fp16 and bf16 alike: an output element a kernel fails to write
// stays NaN and is counted as non-finite by the comparison.
constexpr int kPoisonByte = 0xFF;
inline void poison(const DeviceBuffer& b, cudaStream_t s) {
  if (b) FB_CUDA_CHECK(cudaMemsetAsync(b.get(), kPoisonByte, b.bytes(), s));
}

}  // namespace fb::cuda
