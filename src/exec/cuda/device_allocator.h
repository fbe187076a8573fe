// A caching allocator of GPU memory for one runner: blocks come from cudaMalloc, rounded up to
// a size class, and go back to a free list of their class when released, so that the buffers
// of a step (allocated and freed by the same instructions every step) reuse the memory of the
// step before without a cudaMalloc / cudaFree, which synchronise the whole device.
//
// Reuse is stream-ordered: a block released after a launch was enqueued may be handed out for
// the next launch at once, because every launch of the runner runs in order on its one compute
// stream (the owner must not use the memory from another stream). Everything is freed at
// destruction. Not thread-safe (one runner, one thread at a time).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

#include "core/util/status.h"
#include "exec/cuda/device_tensor.h"

namespace alpa {
namespace cuda {

class DeviceAllocator {
 public:
  // Allocates on the current CUDA device (the caller selects it).
  DeviceAllocator() = default;
  ~DeviceAllocator();
  DeviceAllocator(const DeviceAllocator&) = delete;
  DeviceAllocator& operator=(const DeviceAllocator&) = delete;

  // At least `bytes` bytes, 256-byte aligned; nullptr for 0 bytes. On a cudaMalloc failure the
  // cached blocks are returned to CUDA and the allocation is tried once more; then kOutOfMemory
  // with CUDA's message and the bytes held.
  Result<void*> Allocate(size_t bytes);
  // Returns a block of Allocate (nullptr is ignored) to its free list.
  void Release(void* block);
  // Returns every cached (free) block to CUDA.
  void ReleaseCached();

  size_t bytes_in_use() const { return bytes_in_use_; }
  size_t bytes_reserved() const { return bytes_reserved_; }  // in use + cached

  // The size class of a request: 256-byte granules up to 4 KiB, above that four classes per
  // power of two (at most 25 % more than asked for).
  static size_t SizeClass(size_t bytes);

 private:
  std::map<void*, size_t> blocks_;             // every block and its class, in use or not
  std::map<size_t, std::vector<void*>> free_;  // class -> cached blocks
  size_t bytes_in_use_ = 0, bytes_reserved_ = 0;
};

// Scratch (kernels.h) over an allocator: one block that grows to the largest reservation.
// Growing releases the old block to the allocator, which is safe because a reservation lasts
// only until the next launch on the same stream.
class AllocatorScratch : public Scratch {
 public:
  explicit AllocatorScratch(DeviceAllocator& allocator) : allocator_(allocator) {}
  ~AllocatorScratch() override { allocator_.Release(block_); }
  AllocatorScratch(const AllocatorScratch&) = delete;
  AllocatorScratch& operator=(const AllocatorScratch&) = delete;

  Result<void*> Reserve(size_t bytes) override;

 private:
  DeviceAllocator& allocator_;
  void* block_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace cuda
}  // namespace alpa
