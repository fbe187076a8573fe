// The communicator for ranks that are MPI processes (one rank per process of MPI_COMM_WORLD, on
// one or many hosts): `mpirun -np 8 alpa run plan.json`. Built when ALPA_WITH_MPI is ON (the
// default where CMake finds MPI); otherwise CreateMpiCommunicator returns kUnsupported.
//
// Groups become sub-communicators (MPI_Comm_create_group, cached per group, ranks in group
// order). Reductions never use MPI_Allreduce, whose summation order MPI leaves open: each member
// receives one share of every member's values (MPI_Alltoallv), folds it in group order, and the
// folded shares are gathered back (MPI_Allgatherv), so every rank holds the same bits. Counts
// beyond what one MPI call takes (int) move in segments. Send copies the values and returns;
// the copies are freed as the sends complete. Abort prints "rank R failed: <message>" on stderr
// and calls MPI_Abort, which ends every process of the job.
#pragma once

#include <cstdint>
#include <memory>

#include "core/util/status.h"
#include "exec/comm/communicator.h"

namespace alpa {

struct MpiCommunicatorOptions {
  // The most values one MPI call moves per peer; longer collectives and messages move in
  // segments of this many. Every process of a job must use the same value.
  int64_t segment_values = int64_t{1} << 22;
};

// Initialises MPI (MPI_Init_thread, MPI_THREAD_SERIALIZED) unless the caller already has, and
// returns the communicator of this process. kUnsupported when libalpa was built without MPI.
Result<std::unique_ptr<Communicator>> CreateMpiCommunicator();
Result<std::unique_ptr<Communicator>> CreateMpiCommunicator(const MpiCommunicatorOptions& options);

// Finalizes MPI when CreateMpiCommunicator initialised it (a caller that initialised MPI itself
// finalizes it itself). Destroy every MPI communicator first.
Status FinalizeMpi();

// Whether this libalpa was built with MPI.
bool MpiAvailable();

}  // namespace alpa
