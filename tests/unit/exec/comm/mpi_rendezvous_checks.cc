// The mpi rendezvous under mpirun: without ALPA_RENDEZVOUS, the environment says "mpi"; rank 0's
// 128-byte blob (every byte value from 255 down, as an ncclUniqueId may hold) reaches every
// process unchanged. Each process exits non-zero, with the reason on stderr, when it does not.
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "exec/comm/mpi_communicator.h"
#include "exec/comm/rendezvous.h"

namespace {

int Fail(int rank, const std::string& message) {
  std::fprintf(stderr, "rank %d: %s\n", rank, message.c_str());
  return 1;
}

}  // namespace

int main() {
  using namespace alpa;
  unsetenv("ALPA_RENDEZVOUS");
  Result<RendezvousConfig> config = RendezvousConfigFromEnvironment();
  if (!config.ok()) return Fail(-1, config.status().message());
  if (config.value().spec.kind != RendezvousKind::kMpi) return Fail(-1, "the spec is not mpi");
  Result<std::unique_ptr<Rendezvous>> met = ConnectRendezvous(config.value());
  if (!met.ok()) return Fail(-1, met.status().message());
  Rendezvous& rendezvous = *met.value();
  std::vector<uint8_t> expected(128);
  for (size_t i = 0; i < expected.size(); ++i) expected[i] = static_cast<uint8_t>(255 - 2 * i);
  std::vector<uint8_t> blob;
  if (rendezvous.rank() == 0) blob = expected;
  const Status shared = rendezvous.ShareBlob(&blob);
  if (!shared.ok()) return Fail(rendezvous.rank(), shared.message());
  if (blob != expected) return Fail(rendezvous.rank(), "the blob differs from rank 0's");
  if (!rendezvous.PeerFailure().ok()) return Fail(rendezvous.rank(), "a failure was reported");
  const int rank = rendezvous.rank();
  met = Status(StatusCode::kCancelled, "destroyed");
  const Status finalized = FinalizeMpi();
  if (!finalized.ok()) return Fail(rank, finalized.message());
  return 0;
}
