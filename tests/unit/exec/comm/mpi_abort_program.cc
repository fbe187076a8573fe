// One MPI process fails while the others wait on it (two in a collective, one in a Recv): its
// Abort must end every process, with its message on stderr. mpirun_test.sh checks both.
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "exec/comm/mpi_communicator.h"

int main() {
  using namespace alpa;
  Result<std::unique_ptr<Communicator>> created = CreateMpiCommunicator();
  if (!created.ok()) {
    std::fprintf(stderr, "CreateMpiCommunicator: %s\n", created.status().message().c_str());
    return 1;
  }
  Communicator& comm = *created.value();
  std::vector<double> values(8, 1.0);
  Status status;
  if (comm.rank() == 2) {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    status = InvalidArgument("feed 'tokens' is missing");
  } else if (comm.rank() == 3) {
    status = comm.Recv(2, 1, values.data(), 8);
  } else {
    status = comm.AllReduce({0, 1, 2}, ReduceOp::kSum, values.data(), 8);
  }
  if (!status.ok()) comm.Abort(status);
  // Only a broken Abort gets here: the waiting ranks would have been ended.
  std::fprintf(stderr, "rank %d was not ended by the abort\n", comm.rank());
  return 0;
}
