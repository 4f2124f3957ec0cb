/*
 * A MemoryAllocator that remembers its high-water mark.
 *
 * Why: the runtime resets the temp allocator between instructions, so its used_size() after a
 * run says little; the console's "temp_allocator_used" line reports the peak instead.
 */
#pragma once

#include <executorch/runtime/core/memory_allocator.h>

namespace hil {

class PeakAllocator final : public executorch::runtime::MemoryAllocator {
 public:
  PeakAllocator(uint32_t size, uint8_t* base) : MemoryAllocator(size, base) {}

  void* allocate(size_t size, size_t alignment = kDefaultAlignment) override {
    void* p = MemoryAllocator::allocate(size, alignment);
    note_peak();
    return p;
  }

  void reset() override {
    note_peak();
    MemoryAllocator::reset();
  }

  /* The most bytes ever in use at once (alignment padding included). */
  size_t peak_size() const {
    return peak_ > used_size() ? peak_ : used_size();
  }

 private:
  void note_peak() {
    if (used_size() > peak_) {
      peak_ = used_size();
    }
  }

  size_t peak_ = 0;
};

}  // namespace hil
