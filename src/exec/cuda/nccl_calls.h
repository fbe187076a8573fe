// What the NCCL communicator needs around the raw CUDA and NCCL calls: their results as
// Status, device buffers that free themselves, and the poll of a stream and its communicators
// that a watched wait (exec/comm/watched_wait.h) runs. NCCL is reached through the table of the
// library opened at run time (nccl_loader.h).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <string>
#include <vector>

#include "core/util/status.h"
#include "exec/cuda/nccl_loader.h"

namespace alpa {
namespace cuda {

// OK for cudaSuccess; otherwise kInternal "<what>: <CUDA's error name>: <its text>".
Status CudaStatus(cudaError_t error, const std::string& what);

// OK for ncclSuccess and ncclInProgress (a non-blocking communicator's call still running:
// the wait polls it); otherwise kInternal "<what>: <NCCL's text> (<its last error>)".
Status NcclStatus(const NcclApi& nccl, ncclResult_t result, ncclComm_t comm,
                  const std::string& what);

// Device memory that only grows (realloc on demand); freed with the object.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;

  // At least `bytes` bytes (the contents are not kept when it grows).
  Status Reserve(size_t bytes, const std::string& what);
  void* data() const { return data_; }
  double* values() const { return static_cast<double*>(data_); }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// The poll of a watched wait: done when `stream` has finished its work; an error when a
// communicator reports an asynchronous error or the stream fails. Null communicators are
// skipped.
Result<bool> PollStreamAndComms(const NcclApi& nccl, cudaStream_t stream,
                                const std::vector<ncclComm_t>& comms, const std::string& what);

// The poll of a non-blocking communicator's own call (init, split, finalize, an enqueue):
// done when no communicator is ncclInProgress any more.
Result<bool> PollCommsReady(const NcclApi& nccl, const std::vector<ncclComm_t>& comms,
                            const std::string& what);

}  // namespace cuda
}  // namespace alpa
