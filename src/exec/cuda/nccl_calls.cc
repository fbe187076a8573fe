#include "exec/cuda/nccl_calls.h"

#include <utility>

namespace alpa {
namespace cuda {

Status CudaStatus(cudaError_t error, const std::string& what) {
  if (error == cudaSuccess) return Status::Ok();
  return InternalError(what + ": " + cudaGetErrorName(error) + ": " + cudaGetErrorString(error));
}

Status NcclStatus(const NcclApi& nccl, ncclResult_t result, ncclComm_t comm,
                  const std::string& what) {
  if (result == ncclSuccess || result == ncclInProgress) return Status::Ok();
  std::string text = what + ": " + nccl.GetErrorString(result);
  const char* last = nccl.GetLastError(comm);
  if (last != nullptr && last[0] != '\0') text += std::string(" (") + last + ")";
  return InternalError(text);
}

DeviceBuffer::~DeviceBuffer() {
  if (data_ != nullptr) cudaFree(data_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_ != nullptr) cudaFree(data_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

Status DeviceBuffer::Reserve(size_t bytes, const std::string& what) {
  if (bytes <= bytes_) return Status::Ok();
  if (data_ != nullptr) cudaFree(data_);
  data_ = nullptr;
  bytes_ = 0;
  const cudaError_t allocated = cudaMalloc(&data_, bytes);
  if (allocated == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    return Status(StatusCode::kOutOfMemory, what + ": cannot allocate " + std::to_string(bytes) +
                                                " bytes of GPU memory for staging");
  }
  ALPA_RETURN_IF_ERROR(CudaStatus(allocated, what + ": cudaMalloc"));
  bytes_ = bytes;
  return Status::Ok();
}

Result<bool> PollCommsReady(const NcclApi& nccl, const std::vector<ncclComm_t>& comms,
                            const std::string& what) {
  bool ready = true;
  for (ncclComm_t comm : comms) {
    if (comm == nullptr) continue;
    ncclResult_t state = ncclSuccess;
    ALPA_RETURN_IF_ERROR(NcclStatus(nccl, nccl.CommGetAsyncError(comm, &state), comm,
                                    what + ": ncclCommGetAsyncError"));
    if (state == ncclInProgress) {
      ready = false;
      continue;
    }
    ALPA_RETURN_IF_ERROR(NcclStatus(nccl, state, comm, what));
  }
  return ready;
}

Result<bool> PollStreamAndComms(const NcclApi& nccl, cudaStream_t stream,
                                const std::vector<ncclComm_t>& comms, const std::string& what) {
  for (ncclComm_t comm : comms) {
    if (comm == nullptr) continue;
    ncclResult_t state = ncclSuccess;
    ALPA_RETURN_IF_ERROR(NcclStatus(nccl, nccl.CommGetAsyncError(comm, &state), comm,
                                    what + ": ncclCommGetAsyncError"));
    ALPA_RETURN_IF_ERROR(NcclStatus(nccl, state, comm, what));
  }
  const cudaError_t queried = cudaStreamQuery(stream);
  if (queried == cudaErrorNotReady) return false;
  ALPA_RETURN_IF_ERROR(CudaStatus(queried, what + ": cudaStreamQuery"));
  return true;
}

}  // namespace cuda
}  // namespace alpa
