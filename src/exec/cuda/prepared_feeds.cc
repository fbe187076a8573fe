#include "exec/cuda/prepared_feeds.h"

#include <algorithm>

#include "exec/cuda/kernel_launch.h"
#include "exec/cuda/storage_codec.h"
#include "exec/runtime/runner_inputs.h"
#include "exec/runtime/tensor_boxes.h"

namespace alpa {
namespace cuda {
namespace {

// Each feed starts at a multiple of this (the copy engines' favourite alignment).
constexpr size_t kAlignment = 256;

size_t Aligned(size_t bytes) { return (bytes + kAlignment - 1) / kAlignment * kAlignment; }

// The bytes of feed `in` in its buffer's storage; 0 when its buffer is never read.
size_t FeedBytes(const Instruction& in, const std::vector<DType>& storage,
                 const std::vector<char>& read) {
  const size_t b = static_cast<size_t>(in.out);
  if (b >= storage.size() || b >= read.size() || !read[b]) return 0;
  return static_cast<size_t>(ElementCountOf(in.sizes) * DTypeBytes(storage[b]));
}

}  // namespace

PreparedFeeds::~PreparedFeeds() {
  // Nothing can be reported here; the copies are waited for before the memory goes.
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
  return Status::Ok();
}

const void* PreparedFeeds::Find(size_t instruction, const HostTensor* source, size_t bytes) const {
  const Arena& arena = arenas_[ready_];
  auto it = arena.entries.find(instruction);
  if (it == arena.entries.end() || it->second.source != source || it->second.bytes != bytes) {
    return nullptr;
  }
  return static_cast<const unsigned char*>(arena.host) + it->second.offset;
}

Status PreparedFeeds::RecordCopies(cudaStream_t stream) {
  return CudaStatus(cudaEventRecord(arenas_[ready_].copied, stream),
                    "recording the copy of a prepared feed");
}

void PreparedFeeds::EndStep() {
  arenas_[ready_].entries.clear();
  ready_ = 1 - ready_;
}

void PreparedFeeds::Drop() {
  for (Arena& a : arenas_) a.entries.clear();
}

}  // namespace cuda
}  // namespace alpa
