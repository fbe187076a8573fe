// The tcp rendezvous (ALPA_RENDEZVOUS=tcp:host:port): a star around rank 0, whose connections
// stay open after the blob has moved as the watchdog channel of rendezvous.h. A background
// thread per process watches them: a failure message reaching rank 0 is forwarded to every other
// rank; a connection that closes without a goodbye frame is that process's death, reported to
// every rank as "rank R failed: ...". A rank that ends normally says goodbye, so its leaving is
// not taken for a failure (but failures after rank 0 has left reach no one: the waits'
// deadlines still end them).
#pragma once

#include <memory>

#include "core/util/status.h"
#include "exec/comm/rendezvous.h"

namespace alpa {

// config.spec.kind is kTcp. Rank 0 listens and waits (config.timeout) until every other rank has
// connected and introduced itself; the others connect, retrying until the deadline.
Result<std::unique_ptr<Rendezvous>> ConnectTcpRendezvous(const RendezvousConfig& config);

}  // namespace alpa
