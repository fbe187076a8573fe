// Feeds encoded ahead: while the GPU works on one step, the host encodes the next step's feeds
// (announced by the driver, ProgramRunner::AnnounceNextInput) into pinned memory, so that the
// next step's feeds are only copies, not the host's encoding while the GPU waits.
//
// Two pinned arenas take turns: the next step's feeds are written into the spare one while the
// copies of this step's may still read the other. An entry is used only for the very HostTensor
// it was encoded from (the driver keeps those alive until the step that reads them returns), and
// every entry is dropped when the step it was made for ends.
//
// Once encoded, the feeds also go ahead to the GPU: one copy of the whole arena, on a copy stream
// of their own, into a device arena, while the GPU still runs this step; the next step's feeds
// are then copies within the GPU (about 3 TB/s instead of the host link's 25-50 GB/s), after
// the compute stream waits for that upload. The upload waits (on the copy stream) for the last
// copy out of the device arena of the step before, so one device arena serves every step. It is
// allocated only while the GPU has twice its size free beyond 256 MiB (the step's own buffers
// come first: the runner's caching allocator holds the step's peak by then); without it, or with
// ALPA_CUDA_DEVICE_FEEDS=0 in the environment, feeds are copied from pinned memory when they run.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "core/ir/graph.h"
#include "core/util/status.h"
#include "exec/program/program.h"
#include "exec/runtime/device_runtime_types.h"

namespace alpa {
namespace cuda {

class PreparedFeeds {
 public:
  // At most this many bytes of feeds are prepared per step; later feeds are encoded when they
  // run, as without preparation.
  static constexpr size_t kMaxBytes = size_t{1} << 30;

  PreparedFeeds();
  ~PreparedFeeds();
  PreparedFeeds(const PreparedFeeds&) = delete;
  PreparedFeeds& operator=(const PreparedFeeds&) = delete;

  // Encodes the feeds of `program` that `next` has values for, in program order, into the spare
  // arena: each rounded to its buffer's dtype and stored as storage[buffer]; a feed of a buffer
  // nothing reads (`read`), or whose input is missing or of the wrong shape, is left to its step
  // (which reports the error). Waits for the spare arena's last copies. A CUDA error (pinned
  // memory) is returned; the step may go on without the prepared feeds.
  Status Prepare(const DeviceProgram& program, const std::vector<DType>& storage,
                 const std::vector<char>& read, const MicrobatchInput& next, const Graph& graph);
  // Queues on `stream` the copy of instruction `instruction`'s feed into `dst` when it was
  // prepared from `source` and is `bytes` long (from the device arena after its upload, else from
  // pinned memory) and sets *copied; otherwise queues nothing and leaves *copied false.
  Status CopyInto(size_t instruction, const HostTensor* source, void* dst, size_t bytes,
                  cudaStream_t stream, bool* copied);
  // The step ends: its entries are dropped, and what Prepare wrote becomes the next step's.
  void EndStep();
  // Drops every entry (the announced input was withdrawn).
  void Drop();

 private:
  struct Entry {
    const HostTensor* source = nullptr;
    size_t offset = 0;
    size_t bytes = 0;
  };
  struct Arena {
    void* host = nullptr;  // pinned, `capacity` bytes
    size_t capacity = 0;
    std::unordered_map<size_t, Entry> entries;  // by instruction index
    cudaEvent_t copied = nullptr;               // after the last copy from it
    bool uploaded = false;  // its entries are also at their offsets in the device arena
  };
  Status Reserve(Arena& arena, size_t bytes);
  // Queues the copy of the arena's first `bytes` into the device arena on the copy stream.
  // Leaves `arena.uploaded` false (and returns Ok) where there is no room on the GPU.
  Status Upload(Arena& arena, size_t bytes);
  // The device arena of at least `bytes`: false where the GPU has no room for it.
  Result<bool> ReserveDevice(size_t bytes);

  Arena arenas_[2];
  // The device arena, the stream its uploads run on, and two events: after the last upload
  // into it, and after the last copy out of it (on the compute stream).
  const bool to_device_;  // unless ALPA_CUDA_DEVICE_FEEDS=0
  void* device_ = nullptr;
  size_t device_capacity_ = 0;
  cudaStream_t copy_stream_ = nullptr;
  cudaEvent_t uploaded_ = nullptr, device_read_ = nullptr;
  int ready_ = 0;            // the arena of this step's entries; Prepare writes the other
  std::vector<double> box_;  // a feed's box when it is not the whole tensor
};

}  // namespace cuda
}  // namespace alpa
