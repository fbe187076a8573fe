// Checks of the Communicator contract that run on every rank of any world size, shared by the
// thread communicator's unit test and the MPI test program (run under mpirun): the same code
// proves both transports. Each check returns OK or an error naming the rank, the call and the
// first wrong value; each rank computes its expectation from the inputs of every rank, which
// are a formula of (rank, index).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "exec/comm/communicator.h"

namespace alpa::testing {

// The value rank `rank` contributes at `index`: magnitudes from 2^-26 to 2^26 of both signs, so
// a sum depends on the order it is folded in.
double CommTestValue(int32_t rank, int64_t index);

// The groups the checks use on a world of `size` ranks: the full world rotated and reversed, and
// subsets in non-sorted order.
std::vector<DeviceGroup> CheckGroups(int32_t size);

struct CommunicatorCheck {
  std::string name;
  std::function<Status(Communicator&)> run;
};

// Every collective against its expectation (group-order folds compared bit for bit),
// independent and overlapping groups, point-to-point with out-of-order tags, barriers, and
// counts of `large_count` values.
std::vector<CommunicatorCheck> CommunicatorChecks(int64_t large_count);

}  // namespace alpa::testing
