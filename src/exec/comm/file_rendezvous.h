// The file rendezvous (ALPA_RENDEZVOUS=file:/path) on a file system every rank sees: rank 0
// writes "/path" atomically (a temporary file renamed into place), the others poll for it until
// the deadline. Failures travel through "/path.failed", created once (the first failure wins)
// and polled by PeerFailure. A rank that dies without a word leaves no trace there: the waits'
// deadlines end the others (the tcp rendezvous notices deaths at once).
#pragma once

#include <memory>

#include "core/util/status.h"
#include "exec/comm/rendezvous.h"

namespace alpa {

// config.spec.kind is kFile. Rank 0 refuses a path (or its ".failed" companion) that already
// exists: it would be another run's.
Result<std::unique_ptr<Rendezvous>> ConnectFileRendezvous(const RendezvousConfig& config);

}  // namespace alpa
