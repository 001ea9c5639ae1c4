// The CPU backend's tracking allocator: every buffer a kernel allocates (N x N arrays, per-thread
// tiles, outputs) is a Buffer charged to a MemoryTracker, so peak memory is measured, not modelled.
//
// Use: tracker.reset_peak(); base = tracker.current(); run; used = tracker.peak() - base.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <string>

namespace fb::cpu {

// Thrown when a Buffer cannot be allocated (the system refused, or the tracker's limit): says how
// many bytes were asked for and how many were held already.
class OutOfMemory : public std::bad_alloc {
 public:
  OutOfMemory(std::size_t requested, std::size_t held, const char* why);
  const char* what() const noexcept override { return message_.c_str(); }
  std::size_t requested() const { return requested_; }

 private:
  std::size_t requested_;
  std::string message_;
};

// Current and peak bytes of live Buffers; thread-safe.
class MemoryTracker {
 public:
  MemoryTracker() = default;
  MemoryTracker(const MemoryTracker&) = delete;
  MemoryTracker& operator=(const MemoryTracker&) = delete;

  std::size_t current() const;
  std::size_t peak() const;
  // Peak := current, so the next peak() is the high-water mark of what follows.
  void reset_peak();
  // Allocations that would take current above `bytes` throw OutOfMemory (0 = no limit). Lets tests
  // exercise the out-of-memory path without exhausting the machine.
  void set_limit(std::size_t bytes);

  // Called by Buffer. charge() throws OutOfMemory over the limit and then changes nothing.
  void charge(std::size_t bytes);
  void release(std::size_t bytes);

 private:
  mutable std::mutex mutex_;
  std::size_t current_ = 0;
  std::size_t peak_ = 0;
  std::size_t limit_ = 0;
};

// An owned, 64-byte aligned, uninitialised block charged to a tracker. Move-only.
class Buffer {
 public:
  Buffer() = default;
  Buffer(MemoryTracker& tracker, std::size_t bytes);
  ~Buffer();
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() { return data_; }
  const void* data() const { return data_; }
  template <class T> T* as() { return static_cast<T*>(data_); }
  template <class T> const T* as() const { return static_cast<const T*>(data_); }
  std::size_t bytes() const { return bytes_; }
  bool empty() const { return data_ == nullptr; }
  void reset();  // frees now

 private:
  MemoryTracker* tracker_ = nullptr;
  void* data_ = nullptr;
  std::size_t bytes_ = 0;
};

// Buffer of `count` elements of T.
template <class T> Buffer make_buffer(MemoryTracker& tracker, std::int64_t count) {
  return Buffer(tracker, static_cast<std::size_t>(count) * sizeof(T));
}

}  // namespace fb::cpu
