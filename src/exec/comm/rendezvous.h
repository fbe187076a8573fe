// The rendezvous of the processes of one run before they can talk over a fast transport (NCCL):
// rank 0's opaque blob (NCCL's ncclUniqueId) reaches every rank, and afterwards the rendezvous
// stays as a failure channel, so that a rank that fails, or dies, ends every other rank with its
// message instead of leaving it blocked in a collective.
//
// Where the ranks meet, ALPA_RENDEZVOUS:
//   file:/path      rank 0 writes the blob to /path atomically (a temporary file renamed into
//                   place); the others poll for it. The path must be fresh for every run (rank 0
//                   refuses an existing file: another run's blob would pair unrelated processes).
//                   Failures travel through /path.failed; a rank that dies without a word is
//                   noticed only by the waits' deadlines.
//   tcp:host:port   rank 0 listens on port (all interfaces), the others connect to host:port with
//                   retries. The connections stay open as a watchdog: a failing rank sends its
//                   message to rank 0, which forwards it to every rank; a connection that closes
//                   without a goodbye means its process died, and every rank is told at once.
//   mpi             under mpirun, through the MPI communicator (the blob is broadcast); a
//                   failure ends the whole job through MPI_Abort, as the MPI communicator does.
//                   Chosen by default when ALPA_RENDEZVOUS is unset and the process runs under
//                   mpirun (Open MPI's, MPICH's or PMIx's rank variables are set). MPI is
//                   initialised by the rendezvous; FinalizeMpi (mpi_communicator.h) after it
//                   is destroyed.
// Every wait has a deadline (RendezvousConfig::timeout, default 30 s) and ends with an error
// naming the rendezvous and what was missing.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/util/status.h"

namespace alpa {

enum class RendezvousKind : int32_t { kFile = 0, kTcp = 1, kMpi = 2 };

struct RendezvousSpec {
  RendezvousKind kind = RendezvousKind::kFile;
  std::string path;   // kFile
  std::string host;   // kTcp
  uint16_t port = 0;  // kTcp, 1..65535
  std::string text;   // as written ("tcp:node0:29500"): messages name it
};

struct RendezvousConfig {
  static constexpr std::chrono::milliseconds kDefaultTimeout{30 * 1000};
  RendezvousSpec spec;
  int32_t rank = 0;        // for kMpi, MPI's rank replaces it
  int32_t world_size = 1;  // for kMpi, MPI's size replaces it
  std::chrono::milliseconds timeout = kDefaultTimeout;
};

// "file:/path", "tcp:host:port" or "mpi"; kInvalidArgument naming the text and what is wrong.
Result<RendezvousSpec> ParseRendezvousSpec(const std::string& text);

// The configuration from the environment: ALPA_RENDEZVOUS (the spec; unset under mpirun means
// "mpi"), ALPA_RANK and ALPA_WORLD_SIZE (not needed for mpi), ALPA_RENDEZVOUS_TIMEOUT_S (seconds,
// optional). `lookup` returns the variable's value or null (getenv in production).
Result<RendezvousConfig> RendezvousConfigFromEnvironment(
    const std::function<const char*(const char*)>& lookup);
Result<RendezvousConfig> RendezvousConfigFromEnvironment();

class Rendezvous {
 public:
  virtual ~Rendezvous() = default;
  virtual int32_t rank() const = 0;
  virtual int32_t size() const = 0;
  // The "file:/path" / "tcp:host:port" / "mpi" the messages name.
  virtual const std::string& description() const = 0;
  // Rank 0 passes its blob (non-empty); every other rank receives it into *blob. Called once,
  // by every rank.
  virtual Status ShareBlob(std::vector<uint8_t>* blob) = 0;
  // Tells every other rank that this one failed with `cause`: they see PeerFailure() become
  // "rank R failed: <cause's message>" (kCancelled). Idempotent: the first failure wins.
  virtual void ReportFailure(const Status& cause) = 0;
  // OK while no other rank is known to have failed; otherwise kCancelled "rank R failed: ...".
  // Cheap: meant to be polled in every wait.
  virtual Status PeerFailure() const = 0;
};

// "30 s", "250 ms": how messages name a deadline.
std::string DescribeDuration(std::chrono::milliseconds duration);

// Meets the other ranks of `config` (connects; for tcp, rank 0 waits until every rank has
// connected). The blob moves in ShareBlob.
Result<std::unique_ptr<Rendezvous>> ConnectRendezvous(const RendezvousConfig& config);

}  // namespace alpa
