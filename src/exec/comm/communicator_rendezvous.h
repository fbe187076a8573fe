// A rendezvous over a Communicator that already connects the ranks (the MPI communicator under
// mpirun: ALPA_RENDEZVOUS=mpi): the blob travels by two AllGathers over the whole world, four
// bytes per double (integers below 2^32, exact in a double, so no bit pattern is at risk).
// A failure is the communicator's Abort (for MPI: MPI_Abort ends every process of the job), so
// PeerFailure has nothing to report.
#pragma once

#include <memory>

#include "core/util/status.h"
#include "exec/comm/communicator.h"
#include "exec/comm/rendezvous.h"

namespace alpa {

// `communicator` carries the blob (and the failures) for as long as the rendezvous lives.
std::unique_ptr<Rendezvous> RendezvousOverCommunicator(std::unique_ptr<Communicator> communicator,
                                                       std::string description);

}  // namespace alpa
