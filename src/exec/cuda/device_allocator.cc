#include "exec/cuda/device_allocator.h"

#include <cuda_runtime.h>

#include <string>

namespace alpa {
namespace cuda {

size_t DeviceAllocator::SizeClass(size_t bytes) {
  constexpr size_t kGranule = 256;
  if (bytes <= 4096) return (bytes + kGranule - 1) / kGranule * kGranule;
  // The power of two at or below `bytes`, split into four classes.
  size_t power = 4096;
  while (power <= bytes / 2) power *= 2;
  const size_t step = power / 4;
  return (bytes + step - 1) / step * step;
}

DeviceAllocator::~DeviceAllocator() {
  // Errors here cannot be reported; the memory is the process's either way.
  for (const auto& [block, bytes] : blocks_) (void)cudaFree(block);
}

Result<void*> DeviceAllocator::Allocate(size_t bytes) {
  if (bytes == 0) return static_cast<void*>(nullptr);
  const size_t size = SizeClass(bytes);
  auto cached = free_.find(size);
  if (cached != free_.end() && !cached->second.empty()) {
    void* block = cached->second.back();
    cached->second.pop_back();
    bytes_in_use_ += size;
    return block;
  }
  void* block = nullptr;
  cudaError_t e = cudaMalloc(&block, size);
  if (e == cudaErrorMemoryAllocation && bytes_reserved_ > bytes_in_use_) {
    (void)cudaGetLastError();
    ReleaseCached();
    e = cudaMalloc(&block, size);
  }
  if (e != cudaSuccess) {
    (void)cudaGetLastError();  // an allocation failure is not sticky; clear it
    return Status(StatusCode::kOutOfMemory, std::string(cudaGetErrorString(e)) + " allocating " +
                                                std::to_string(size) +
                                                " bytes on the GPU (this runner holds " +
                                                std::to_string(bytes_in_use_) + " bytes)");
  }
  blocks_.emplace(block, size);
  bytes_in_use_ += size;
  bytes_reserved_ += size;
  return block;
}

void DeviceAllocator::Release(void* block) {
  if (block == nullptr) return;
  auto it = blocks_.find(block);
  if (it == blocks_.end()) return;  // not ours: a caller bug that must not corrupt the lists
  bytes_in_use_ -= it->second;
  free_[it->second].push_back(block);
}

void DeviceAllocator::ReleaseCached() {
  // A cached block may still be read by a launch in flight (stream-ordered reuse).
  (void)cudaDeviceSynchronize();
  for (auto& [size, list] : free_) {
    for (void* block : list) {
      (void)cudaFree(block);
      blocks_.erase(block);
      bytes_reserved_ -= size;
    }
    list.clear();
  }
}

Result<void*> AllocatorScratch::Reserve(size_t bytes) {
  if (bytes <= bytes_ && block_ != nullptr) return block_;
  if (bytes == 0) return block_;
  allocator_.Release(block_);
  block_ = nullptr;
  bytes_ = 0;
  Result<void*> block = allocator_.Allocate(bytes);
  if (!block.ok()) return Status(block.status().code(), "scratch: " + block.status().message());
  block_ = block.value();
  bytes_ = DeviceAllocator::SizeClass(bytes);
  return block_;
}

}  // namespace cuda
}  // namespace alpa
