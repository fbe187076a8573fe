// Feeds encoded ahead: while the GPU works on one step, the host encodes the next step's feeds
// (announced by the driver, ProgramRunner::AnnounceNextInput) into pinned memory, so that the
// next step's feeds are only copies, not the host's encoding while the GPU waits.
//
// Two pinned arenas take turns: the next step's feeds are written into the spare one while the
// copies of this step's may still read the other. An entry is used only for the very HostTensor
// it was encoded from (the driver keeps those alive until the step that reads them returns), and
// every entry is dropped when the step it was made for ends.
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

  PreparedFeeds() = default;
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
  // The encoded bytes of instruction `instruction` of this step when they were encoded from
  // `source` and are `bytes` long; null otherwise.
  const void* Find(size_t instruction, const HostTensor* source, size_t bytes) const;
  // After the copies from Find's bytes have been queued on `stream`.
  Status RecordCopies(cudaStream_t stream);
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
  };
  Status Reserve(Arena& arena, size_t bytes);

  Arena arenas_[2];
  int ready_ = 0;            // the arena of this step's entries; Prepare writes the other
  std::vector<double> box_;  // a feed's box when it is not the whole tensor
};

}  // namespace cuda
}  // namespace alpa
