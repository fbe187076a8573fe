// CreateNcclCommunicator in a build without CUDA (ALPA_WITH_CUDA=OFF): the one answer it can
// give. The rendezvous (exec/comm) is built either way.
#include "exec/cuda/nccl_communicator.h"

namespace alpa {

Result<std::unique_ptr<NcclCommunicator>> CreateNcclCommunicator(std::unique_ptr<Rendezvous>,
                                                                 const NcclCommunicatorOptions&) {
  return Status(StatusCode::kUnsupported,
                "the NCCL communicator needs libalpa built with ALPA_WITH_CUDA=ON");
}

}  // namespace alpa
