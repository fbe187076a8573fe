// The communicator checks on MPI processes: run by ctest as `mpirun -np 4` (mpirun_test.sh).
// Every process runs the same checks in the same order; a failed check aborts the job with the
// failing rank's message (Communicator::Abort), so no process waits on one that gave up.
#include <cstdio>
#include <vector>

#include "exec/comm/mpi_communicator.h"
#include "support/communicator_checks.h"

namespace alpa {
namespace {

constexpr int64_t kLargeCount = 2'000'000;

// A message of another count than the receiver asks for fails the Recv with both ranks and the
// tag, and is taken whole: the next message on the channel arrives intact.
Status CheckRecvCountMismatch(Communicator& comm) {
  const int32_t next = (comm.rank() + 1) % comm.size();
  const int32_t previous = (comm.rank() + comm.size() - 1) % comm.size();
  std::vector<double> values(5, 1.5);
  ALPA_RETURN_IF_ERROR(comm.Send(next, 30, values.data(), 5));
  ALPA_RETURN_IF_ERROR(comm.Send(next, 30, values.data(), 2));
  Status mismatch = comm.Recv(previous, 30, values.data(), 4);
  const std::string expected = "Recv: rank " + std::to_string(comm.rank()) +
                               " expected 4 values from rank " + std::to_string(previous) +
                               " with tag 30, but the message holds 5";
  if (mismatch.code() != StatusCode::kInvalidArgument || mismatch.message() != expected) {
    return InternalError("rank " + std::to_string(comm.rank()) +
                         ": a Recv of the wrong count returned '" + mismatch.message() + "'");
  }
  return comm.Recv(previous, 30, values.data(), 2);
}

Status CheckBadArguments(Communicator& comm) {
  std::vector<double> values(4);
  Status outside = comm.AllReduce({comm.size()}, ReduceOp::kSum, values.data(), 4);
  if (outside.code() != StatusCode::kInvalidArgument) {
    return InternalError("a group with rank " + std::to_string(comm.size()) + " gave '" +
                         outside.message() + "'");
  }
  Status tag = comm.Send(0, int64_t{1} << 40, values.data(), 1);
  if (tag.code() != StatusCode::kInvalidArgument) {
    return InternalError("a tag above MPI_TAG_UB gave '" + tag.message() + "'");
  }
  return Status::Ok();
}

Status RunChecks(Communicator& comm, const char* label) {
  std::vector<testing::CommunicatorCheck> checks = testing::CommunicatorChecks(kLargeCount);
  checks.push_back({"RecvOfAnotherCountFailsAndIsTakenWhole", CheckRecvCountMismatch});
  checks.push_back({"BadArgumentsFailOnTheCaller", CheckBadArguments});
  for (const testing::CommunicatorCheck& check : checks) {
    Status status = check.run(comm);
    if (!status.ok()) {
      comm.Abort(
          Status(status.code(), std::string(label) + ": " + check.name + ": " + status.message()));
    }
    if (comm.rank() == 0) std::printf("%s: %s passed\n", label, check.name.c_str());
  }
  return comm.Barrier();
}

int Main() {
  Result<std::unique_ptr<Communicator>> created = CreateMpiCommunicator();
  if (!created.ok()) {
    std::fprintf(stderr, "CreateMpiCommunicator: %s\n", created.status().message().c_str());
    return 1;
  }
  std::unique_ptr<Communicator> comm = std::move(created).value();
  if (comm->size() < 2) {
    comm->Abort(InvalidArgument("run with at least 2 processes, got 1"));
  }
  Status status = RunChecks(*comm, "default segments");
  if (!status.ok()) comm->Abort(status);
  // Tiny segments take every collective and message through the path that splits counts MPI
  // cannot take in one call.
  MpiCommunicatorOptions options;
  options.segment_values = 1000;
  Result<std::unique_ptr<Communicator>> segmented = CreateMpiCommunicator(options);
  if (!segmented.ok()) comm->Abort(segmented.status());
  status = RunChecks(*segmented.value(), "1000-value segments");
  if (!status.ok()) comm->Abort(status);
  if (comm->rank() == 0) std::printf("mpi communicator checks passed on %d ranks\n", comm->size());
  segmented.value().reset();
  comm.reset();
  status = FinalizeMpi();
  if (!status.ok()) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace alpa

int main() { return alpa::Main(); }
