#include "exec/comm/rendezvous.h"

#include "exec/comm/communicator_rendezvous.h"
#include "exec/comm/file_rendezvous.h"
#include "exec/comm/mpi_communicator.h"
#include "exec/comm/tcp_rendezvous.h"

namespace alpa {

std::string DescribeDuration(std::chrono::milliseconds duration) {
  const int64_t milliseconds = duration.count();
  if (milliseconds % 1000 == 0) return std::to_string(milliseconds / 1000) + " s";
  return std::to_string(milliseconds) + " ms";
}

Result<std::unique_ptr<Rendezvous>> ConnectRendezvous(const RendezvousConfig& config) {
  const std::string where = "rendezvous " + config.spec.text;
  if (config.spec.kind == RendezvousKind::kMpi) {
    Result<std::unique_ptr<Communicator>> mpi = CreateMpiCommunicator();
    if (!mpi.ok()) return Status(mpi.status().code(), where + ": " + mpi.status().message());
    return RendezvousOverCommunicator(std::move(mpi).value(), config.spec.text);
  }
  if (config.world_size < 1 || config.rank < 0 || config.rank >= config.world_size) {
    return InvalidArgument(where + ": rank " + std::to_string(config.rank) +
                           " is not in a world of " + std::to_string(config.world_size) + " ranks");
  }
  if (config.timeout.count() <= 0) {
    return InvalidArgument(where + ": the timeout " + std::to_string(config.timeout.count()) +
                           " ms is not positive");
  }
  if (config.spec.kind == RendezvousKind::kTcp) return ConnectTcpRendezvous(config);
  return ConnectFileRendezvous(config);
}

}  // namespace alpa
