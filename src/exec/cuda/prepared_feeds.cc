#include "exec/cuda/prepared_feeds.h"

#include <algorithm>
#include <string>

#include "exec/cuda/env_switch.h"
#include "exec/cuda/kernel_launch.h"
#include "exec/cuda/storage_codec.h"
#include "exec/runtime/runner_inputs.h"
#include "exec/runtime/tensor_boxes.h"

namespace alpa {
namespace cuda {
namespace {

// Each feed starts at a multiple of this (the copy engines' favourite alignment).
constexpr size_t kAlignment = 256;

// The device arena is made only while the GPU has twice its size free beyond this.
constexpr size_t kDeviceHeadroom = size_t{256} << 20;

size_t Aligned(size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

// The bytes of feed `in` in its buffer's storage; 0 when its buffer is never read.
size_t FeedBytes(const Instruction& in, const std::vector<DType>& storage,
                 const std::vector<char>& read) {
  const size_t b = static_cast<size_t>(in.out);
  if (b >= storage.size() || b >= read.size() || !read[b]) return 0;
  return static_cast<size_t>(ElementCountOf(in.sizes) * DTypeBytes(storage[b]));
}

}  // namespace

PreparedFeeds::PreparedFeeds() : to_device_(SwitchedOnByDefault("ALPA_CUDA_DEVICE_FEEDS")) {}

PreparedFeeds::~PreparedFeeds() {
  // Nothing can be reported here; the copies are waited for before the memory goes.
  if (copy_stream_ != nullptr) (void)cudaStreamSynchronize(copy_stream_);
  if (device_read_ != nullptr) {
    (void)cudaEventSynchronize(device_read_);
    (void)cudaEventDestroy(device_read_);
  }
  if (uploaded_ != nullptr) (void)cudaEventDestroy(uploaded_);
  if (device_ != nullptr) (void)cudaFree(device_);
  if (copy_stream_ != nullptr) (void)cudaStreamDestroy(copy_stream_);
  for (Arena& a : arenas_) {
    if (a.copied != nullptr) {
      (void)cudaEventSynchronize(a.copied);
      (void)cudaEventDestroy(a.copied);
    }
    if (a.host != nullptr) (void)cudaFreeHost(a.host);
  }
}

Status PreparedFeeds::Reserve(Arena& arena, size_t bytes) {
  if (arena.copied == nullptr) {
    ALPA_RETURN_IF_ERROR(CudaStatus(cudaEventCreateWithFlags(&arena.copied, cudaEventDisableTiming),
                                    "creating the prepared feeds' event"));
  }
  ALPA_RETURN_IF_ERROR(CudaStatus(cudaEventSynchronize(arena.copied),
                                  "waiting for the copies of the prepared feeds"));
  if (bytes <= arena.capacity) return Status::Ok();
  if (arena.host != nullptr) {
    ALPA_RETURN_IF_ERROR(CudaStatus(cudaFreeHost(arena.host), "freeing prepared feeds"));
    arena.host = nullptr;
    arena.capacity = 0;
  }
  ALPA_RETURN_IF_ERROR(CudaStatus(
      cudaHostAlloc(&arena.host, bytes, cudaHostAllocDefault),
      "allocating " + std::to_string(bytes) + " bytes of pinned host memory for prepared feeds"));
  arena.capacity = bytes;
  return Status::Ok();
}

Status PreparedFeeds::Prepare(const DeviceProgram& program, const std::vector<DType>& storage,
                              const std::vector<char>& read, const MicrobatchInput& next,
                              const Graph& graph) {
  Arena& arena = arenas_[1 - ready_];
  arena.entries.clear();
  arena.uploaded = false;
  if (!next) return Status::Ok();
  size_t total = 0;
  for (const Instruction& in : program.code) {
    if (in.kind != InstructionKind::kFeed) continue;
    const size_t bytes = FeedBytes(in, storage, read);
    if (bytes == 0 || total + Aligned(bytes) > kMaxBytes) continue;
    total += Aligned(bytes);
  }
  if (total == 0) return Status::Ok();
  ALPA_RETURN_IF_ERROR(Reserve(arena, total));
  size_t offset = 0;
  for (size_t i = 0; i < program.code.size(); ++i) {
    const Instruction& in = program.code[i];
    if (in.kind != InstructionKind::kFeed) continue;
    const size_t bytes = FeedBytes(in, storage, read);
    if (bytes == 0 || offset + Aligned(bytes) > arena.capacity) continue;
    Result<const HostTensor*> source =
        CheckedMicrobatchInput(next, graph, in.tensor, in.microbatch, in.offsets, in.sizes);
    if (!source.ok()) continue;  // the step reports it
    const HostTensor* full = source.value();
    const double* values = BoxValues(full->data.data(), full->shape, in.offsets, in.sizes, box_);
    const size_t b = static_cast<size_t>(in.out);
    EncodeStorageInto(values, ElementCountOf(in.sizes), program.buffers[b].dtype, storage[b],
                      static_cast<unsigned char*>(arena.host) + offset);
    arena.entries[i] = Entry{full, offset, bytes};
    offset += Aligned(bytes);
  }
  return offset == 0 ? Status::Ok() : Upload(arena, offset);
}

Result<bool> PreparedFeeds::ReserveDevice(size_t bytes) {
  if (bytes <= device_capacity_) return true;
  if (device_ != nullptr) {  // the last upload, and this step's copies out of it, may be queued
    ALPA_RETURN_IF_ERROR(
        CudaStatus(cudaEventSynchronize(uploaded_), "waiting for the upload of the feeds"));
    ALPA_RETURN_IF_ERROR(CudaStatus(cudaEventSynchronize(device_read_),
                                    "waiting for the copies of the feeds on the GPU"));
    ALPA_RETURN_IF_ERROR(CudaStatus(cudaFree(device_), "freeing the feeds' device arena"));
    device_ = nullptr;
    device_capacity_ = 0;
  }
  size_t free = 0, total = 0;
  ALPA_RETURN_IF_ERROR(CudaStatus(cudaMemGetInfo(&free, &total), "asking for free GPU memory"));
  if (free < 2 * bytes + kDeviceHeadroom) return false;
  if (cudaMalloc(&device_, bytes) != cudaSuccess) {
    (void)cudaGetLastError();  // out of memory is not sticky: the feeds stay in pinned memory
    device_ = nullptr;
    return false;
  }
  device_capacity_ = bytes;
  return true;
}

Status PreparedFeeds::Upload(Arena& arena, size_t bytes) {
  if (!to_device_) return Status::Ok();
  if (copy_stream_ == nullptr) {
    ALPA_RETURN_IF_ERROR(CudaStatus(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking),
                                    "creating the feeds' copy stream"));
    ALPA_RETURN_IF_ERROR(CudaStatus(cudaEventCreateWithFlags(&uploaded_, cudaEventDisableTiming),
                                    "creating the feeds' upload event"));
    ALPA_RETURN_IF_ERROR(CudaStatus(cudaEventCreateWithFlags(&device_read_, cudaEventDisableTiming),
                                    "creating the feeds' device event"));
  }
  Result<bool> room = ReserveDevice(bytes);
  if (!room.ok()) return room.status();
  if (!room.value()) return Status::Ok();
  // After this step's copies out of the device arena (queued on the compute stream).
  ALPA_RETURN_IF_ERROR(CudaStatus(cudaStreamWaitEvent(copy_stream_, device_read_, 0),
                                  "ordering the feeds' upload after their last reader"));
  ALPA_RETURN_IF_ERROR(
      CudaStatus(cudaMemcpyAsync(device_, arena.host, bytes, cudaMemcpyHostToDevice, copy_stream_),
                 "uploading the next step's feeds"));
  ALPA_RETURN_IF_ERROR(CudaStatus(cudaEventRecord(arena.copied, copy_stream_),
                                  "recording the upload of the prepared feeds"));
  ALPA_RETURN_IF_ERROR(CudaStatus(cudaEventRecord(uploaded_, copy_stream_),
                                  "recording the upload of the prepared feeds"));
  arena.uploaded = true;
  return Status::Ok();
}

Status PreparedFeeds::CopyInto(size_t instruction, const HostTensor* source, void* dst,
                               size_t bytes, cudaStream_t stream, bool* copied) {
  *copied = false;
  Arena& arena = arenas_[ready_];
  auto it = arena.entries.find(instruction);
  if (it == arena.entries.end() || it->second.source != source || it->second.bytes != bytes) {
    return Status::Ok();
  }
  const size_t offset = it->second.offset;
  if (arena.uploaded) {
    ALPA_RETURN_IF_ERROR(CudaStatus(cudaStreamWaitEvent(stream, uploaded_, 0),
                                    "waiting for the upload of the prepared feeds"));
    ALPA_RETURN_IF_ERROR(
        CudaStatus(cudaMemcpyAsync(dst, static_cast<const unsigned char*>(device_) + offset, bytes,
                                   cudaMemcpyDeviceToDevice, stream),
                   "copying a prepared feed on the GPU"));
    ALPA_RETURN_IF_ERROR(
        CudaStatus(cudaEventRecord(device_read_, stream), "recording the copy of a prepared feed"));
  } else {
    ALPA_RETURN_IF_ERROR(
        CudaStatus(cudaMemcpyAsync(dst, static_cast<const unsigned char*>(arena.host) + offset,
                                   bytes, cudaMemcpyHostToDevice, stream),
                   "copying a prepared feed to the GPU"));
    ALPA_RETURN_IF_ERROR(
        CudaStatus(cudaEventRecord(arena.copied, stream), "recording the copy of a prepared feed"));
  }
  *copied = true;
  return Status::Ok();
}

void PreparedFeeds::EndStep() {
  arenas_[ready_].entries.clear();
  arenas_[ready_].uploaded = false;
  ready_ = 1 - ready_;
}

void PreparedFeeds::Drop() {
  for (Arena& a : arenas_) {
    a.entries.clear();
    a.uploaded = false;
  }
}

}  // namespace cuda
}  // namespace alpa
