#include "backend/cpu/memory.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

namespace fb::cpu {

namespace {
// Cache-line alignment: tiles start on a line, and vector loads never split one.
constexpr std::size_t kAlignment = 64;
}  // namespace

OutOfMemory::OutOfMemory(std::size_t requested, std::size_t held, const char* why)
    : requested_(requested),
      message_(fmt::format("out of memory: could not allocate {} bytes ({:.3f} GiB) with {} bytes "
                           "already held ({})",
                           requested, double(requested) / double(1ull << 30), held, why)) {}

std::size_t MemoryTracker::current() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return current_;
}

std::size_t MemoryTracker::peak() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return peak_;
}

void MemoryTracker::reset_peak() {
  std::lock_guard<std::mutex> lock(mutex_);
  peak_ = current_;
}

void MemoryTracker::set_limit(std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  limit_ = bytes;
}

void MemoryTracker::charge(std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (limit_ != 0 && current_ + bytes > limit_)
    throw OutOfMemory(bytes, current_, "over the tracker's limit");
  current_ += bytes;
  peak_ = std::max(peak_, current_);
}

void MemoryTracker::release(std::size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  current_ -= std::min(current_, bytes);
}

Buffer::Buffer(MemoryTracker& tracker, std::size_t bytes) : tracker_(&tracker), bytes_(bytes) {
  tracker.charge(bytes);
  try {
    data_ = ::operator new(std::max<std::size_t>(bytes, 1), std::align_val_t(kAlignment));
  } catch (const std::bad_alloc&) {
    tracker.release(bytes);
    throw OutOfMemory(bytes, tracker.current(), "the system refused");
  }
}

Buffer::~Buffer() { reset(); }

Buffer::Buffer(Buffer&& other) noexcept
    : tracker_(std::exchange(other.tracker_, nullptr)),
      data_(std::exchange(other.data_, nullptr)),
      bytes_(std::exchange(other.bytes_, 0)) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    reset();
    tracker_ = std::exchange(other.tracker_, nullptr);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void Buffer::reset() {
  if (data_ != nullptr) {
    ::operator delete(data_, std::align_val_t(kAlignment));
    tracker_->release(bytes_);
  }
  data_ = nullptr;
  tracker_ = nullptr;
  bytes_ = 0;
}

}  // namespace fb::cpu
