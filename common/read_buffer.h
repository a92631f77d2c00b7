// read_buffer.h: where to put the bytes a read(2) copies out of the page cache.
//
// The kernel copies a file's bytes from its page-cache pages into the caller's buffer with
// `rep movsb`. On AMD Zen (the bench machine's EPYC) that copy runs five to six times slower
// when (destination - source) mod 4096 is 1..31: 10.2 us instead of 1.7 us for 16 KiB, measured
// (bench/RESULTS.md, "Reading files"). malloc and mimalloc hand out 16-byte aligned blocks, and a
// large block starts 16 bytes into a page, so a plain buffer read from a page-aligned file
// offset lands in exactly that window. Two rules avoid it:
//   - read into a page-aligned buffer (PageBuffer);
//   - put a read from file offset `off` at a buffer position p with p % 4096 == off % 4096
//     (ReadAlignment), so the copy runs page onto page.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <utility>

namespace bounced {

constexpr size_t kPageBytes = 4096;

// Where in a page-aligned buffer a read from file offset `offset` should start: the same offset
// within a page as the source bytes.
constexpr size_t ReadAlignment(uint64_t offset) { return static_cast<size_t>(offset % kPageBytes); }

// A page-aligned byte buffer that, unlike std::vector or std::string, is not zero-filled when it
// grows. Move-only.
class PageBuffer {
 public:
  PageBuffer() = default;
  explicit PageBuffer(size_t capacity) { Reserve(capacity); }
  PageBuffer(PageBuffer&& other) noexcept
      : data_(std::move(other.data_)), capacity_(std::exchange(other.capacity_, 0)) {}
  PageBuffer& operator=(PageBuffer&& other) noexcept {
    data_ = std::move(other.data_);
    capacity_ = std::exchange(other.capacity_, 0);
    return *this;
  }

  char* data() { return data_.get(); }
  const char* data() const { return data_.get(); }
  size_t capacity() const { return capacity_; }

  // Grows to at least `n` bytes, keeping the first `keep` bytes (at most the old capacity).
  // Throws std::bad_alloc when memory runs out, as operator new does.
  void Reserve(size_t n, size_t keep = 0) {
    if (n <= capacity_) return;
    size_t rounded = (n + kPageBytes - 1) / kPageBytes * kPageBytes;
    std::unique_ptr<char[], Free> bigger(
        static_cast<char*>(std::aligned_alloc(kPageBytes, rounded)));
    if (bigger == nullptr) throw std::bad_alloc();
    if (keep > capacity_) keep = capacity_;
    if (keep > 0) std::memcpy(bigger.get(), data_.get(), keep);
    data_ = std::move(bigger);
    capacity_ = rounded;
  }

 private:
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::unique_ptr<char[], Free> data_;
  size_t capacity_ = 0;
};

// Reads `fd` from where it stands to its end, or to `max` bytes, into `buffer` from its start,
// and sets *size to the bytes read. The buffer grows (doubling, from `first` bytes) only when a
// file does not fit, and is kept for the next file, so a file that fits is read in one call and
// one more call sees its end (read(2) returning 0): the file's real end, whatever a stat would
// report (pipes, procfs, a file that grew). Returns 0, or the errno of a failed read (EINTR is
// retried); *size then holds what was read before it.
inline int ReadToEnd(int fd, PageBuffer* buffer, size_t max, size_t* size,
                     size_t first = size_t{1} << 16) {
  *size = 0;
  while (*size < max) {
    if (*size == buffer->capacity()) {
      buffer->Reserve(std::max<size_t>(buffer->capacity() * 2, first), *size);
    }
    ssize_t n = ::read(fd, buffer->data() + *size, std::min(buffer->capacity(), max) - *size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return errno;
    if (n == 0) return 0;
    *size += static_cast<size_t>(n);
  }
  return 0;
}

}  // namespace bounced
