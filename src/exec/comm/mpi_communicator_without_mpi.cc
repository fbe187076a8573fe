// CreateMpiCommunicator in a build without MPI (ALPA_WITH_MPI=OFF): the one answer it can give.
#include "exec/comm/mpi_communicator.h"

namespace alpa {

namespace {

Status BuiltWithoutMpi() {
  return Status(StatusCode::kUnsupported, "built without MPI: reconfigure with -DALPA_WITH_MPI=ON");
}

}  // namespace

Result<std::unique_ptr<Communicator>> CreateMpiCommunicator() { return BuiltWithoutMpi(); }

Result<std::unique_ptr<Communicator>> CreateMpiCommunicator(const MpiCommunicatorOptions&) {
  return BuiltWithoutMpi();
}

Status FinalizeMpi() { return Status::Ok(); }

bool MpiAvailable() { return false; }

}  // namespace alpa
