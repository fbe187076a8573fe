#include "support/communicator_checks.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>

#include "exec/comm/collective_args.h"

namespace alpa::testing {

namespace {

uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A value function of (member, index).
using ValueOf = std::function<double(int32_t, int64_t)>;

int32_t PositionOf(const DeviceGroup& group, int32_t rank) {
  auto found = std::find(group.begin(), group.end(), rank);
  return found == group.end() ? -1 : static_cast<int32_t>(found - group.begin());
}

// The contract's reduction at element e, written independently of the library's: a left fold
// in group order; max keeps a NaN once one appears.
double FoldAt(ReduceOp op, const DeviceGroup& group, const ValueOf& value, int64_t e) {
  double acc = value(group[0], e);
  for (size_t i = 1; i < group.size(); ++i) {
    const double next = value(group[i], e);
    if (op == ReduceOp::kSum) {
      acc = acc + next;
    } else if (std::isnan(next) || next > acc) {
      acc = next;
    }
  }
  return acc;
}

// Bit-for-bit equality of actual[0, count) with expected(e); the error names the rank, the call
// and the first differing value. Expectations are computed per element, not stored: the large
// checks would otherwise double their memory.
Status ExpectBits(const Communicator& comm, const std::string& call, int64_t count,
                  const std::function<double(int64_t)>& expected, const double* actual) {
  for (int64_t e = 0; e < count; ++e) {
    const double want = expected(e);
    if (std::memcmp(&want, &actual[e], sizeof(double)) != 0) {
      char values[96];
      std::snprintf(values, sizeof(values), "%a, expected %a", actual[e], want);
      return InternalError("rank " + std::to_string(comm.rank()) + ": " + call + ": value " +
                           std::to_string(e) + " is " + values);
    }
  }
  return Status::Ok();
}

std::string Describe(const char* call, const DeviceGroup& group, int64_t count) {
  return std::string(call) + " over " + DescribeGroup(group) + " count " + std::to_string(count);
}

ValueOf Salted(int64_t salt) {
  return [salt](int32_t member, int64_t e) { return CommTestValue(member, e + salt); };
}

// Values cheap enough for millions of elements folded on every rank; integers times 2^-10, so
// sums are exact and the check is about moving the values whole.
double CheapValue(int32_t member, int64_t e) {
  return static_cast<double>((member + 1) * (e % 4093 + 1)) * 0x1p-10;
}

Status CheckAllReduce(Communicator& comm, ReduceOp op, const DeviceGroup& group, int64_t count,
                      const ValueOf& value) {
  std::vector<double> data(static_cast<size_t>(count));
  for (int64_t e = 0; e < count; ++e) data[static_cast<size_t>(e)] = value(comm.rank(), e);
  ALPA_RETURN_IF_ERROR(comm.AllReduce(group, op, data.data(), count));
  return ExpectBits(
      comm, Describe(op == ReduceOp::kSum ? "AllReduce(sum)" : "AllReduce(max)", group, count),
      count, [&](int64_t e) { return FoldAt(op, group, value, e); }, data.data());
}

Status CheckAllReduceEverywhere(Communicator& comm, ReduceOp op) {
  const std::vector<DeviceGroup> groups = CheckGroups(comm.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    if (PositionOf(groups[g], comm.rank()) < 0) continue;
    for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{37}}) {
      const int64_t salt = static_cast<int64_t>(g) * 1000 + count;
      ALPA_RETURN_IF_ERROR(CheckAllReduce(comm, op, groups[g], count, Salted(salt)));
    }
  }
  return Status::Ok();
}

Status CheckAllGather(Communicator& comm, const DeviceGroup& group, int64_t count) {
  const int64_t members = static_cast<int64_t>(group.size());
  std::vector<double> in(static_cast<size_t>(count));
  for (int64_t e = 0; e < count; ++e) in[static_cast<size_t>(e)] = CommTestValue(comm.rank(), e);
  std::vector<double> out(static_cast<size_t>(count * members), -1.0);
  ALPA_RETURN_IF_ERROR(comm.AllGather(group, in.data(), count, out.data()));
  return ExpectBits(
      comm, Describe("AllGather", group, count), count * members,
      [&](int64_t e) { return CommTestValue(group[static_cast<size_t>(e / count)], e % count); },
      out.data());
}

Status CheckReduceScatter(Communicator& comm, ReduceOp op, const DeviceGroup& group,
                          int64_t count) {
  const int64_t members = static_cast<int64_t>(group.size());
  const int64_t position = PositionOf(group, comm.rank());
  std::vector<double> in(static_cast<size_t>(count * members));
  for (int64_t e = 0; e < count * members; ++e) {
    in[static_cast<size_t>(e)] = CommTestValue(comm.rank(), e);
  }
  std::vector<double> out(static_cast<size_t>(count), -1.0);
  ALPA_RETURN_IF_ERROR(comm.ReduceScatter(group, op, in.data(), count, out.data()));
  const ValueOf my_chunk = [&](int32_t member, int64_t e) {
    return CommTestValue(member, position * count + e);
  };
  return ExpectBits(
      comm, Describe("ReduceScatter", group, count), count,
      [&](int64_t e) { return FoldAt(op, group, my_chunk, e); }, out.data());
}

Status CheckAllToAll(Communicator& comm, const DeviceGroup& group, int64_t count) {
  const int64_t members = static_cast<int64_t>(group.size());
  const int64_t position = PositionOf(group, comm.rank());
  std::vector<double> in(static_cast<size_t>(count * members));
  for (int64_t e = 0; e < count * members; ++e) {
    in[static_cast<size_t>(e)] = CommTestValue(comm.rank(), e);
  }
  std::vector<double> out(in.size(), -1.0);
  ALPA_RETURN_IF_ERROR(comm.AllToAll(group, in.data(), count, out.data()));
  return ExpectBits(
      comm, Describe("AllToAll", group, count), count * members,
      [&](int64_t e) {
        return CommTestValue(group[static_cast<size_t>(e / count)], position * count + e % count);
      },
      out.data());
}

Status CheckEveryGroup(Communicator& comm, const std::function<Status(const DeviceGroup&)>& check) {
  for (const DeviceGroup& group : CheckGroups(comm.size())) {
    if (PositionOf(group, comm.rank()) >= 0) ALPA_RETURN_IF_ERROR(check(group));
  }
  return Status::Ok();
}

// Pairs {2k+1, 2k} run on their own while, on three or more ranks, rank 1 alternates between
// {1, 0} and {2, 1}: a transport that matched calls across groups would mix them up or hang.
Status CheckIndependentGroups(Communicator& comm) {
  const int32_t rank = comm.rank();
  const int32_t partner = rank % 2 == 0 ? rank + 1 : rank - 1;
  const DeviceGroup pair = partner < comm.size()
                               ? DeviceGroup{std::max(rank, partner), std::min(rank, partner)}
                               : DeviceGroup{rank};
  for (int64_t call = 0; call < 3; ++call) {
    ALPA_RETURN_IF_ERROR(CheckAllReduce(comm, ReduceOp::kSum, pair, 5, Salted(50000 + call * 100)));
  }
  if (comm.size() < 3 || rank > 2) return Status::Ok();
  const DeviceGroup first{1, 0};
  const DeviceGroup second{2, 1};
  for (int64_t call = 0; call < 2; ++call) {
    if (rank <= 1) {
      ALPA_RETURN_IF_ERROR(
          CheckAllReduce(comm, ReduceOp::kSum, first, 6, Salted(60000 + call * 100)));
    }
    if (rank >= 1) {
      ALPA_RETURN_IF_ERROR(
          CheckAllReduce(comm, ReduceOp::kSum, second, 7, Salted(70000 + call * 100)));
    }
  }
  return Status::Ok();
}

std::vector<double> Values(int32_t rank, int64_t first_index, int64_t count) {
  std::vector<double> values(static_cast<size_t>(count));
  for (int64_t e = 0; e < count; ++e) {
    values[static_cast<size_t>(e)] = CommTestValue(rank, first_index + e);
  }
  return values;
}

Status SendValues(Communicator& comm, int32_t to, int64_t tag, int64_t first_index, int64_t count) {
  const std::vector<double> values = Values(comm.rank(), first_index, count);
  return comm.Send(to, tag, values.data(), count);
}

Status RecvValues(Communicator& comm, int32_t from, int64_t tag, int64_t first_index,
                  int64_t count) {
  std::vector<double> values(static_cast<size_t>(count), -1.0);
  ALPA_RETURN_IF_ERROR(comm.Recv(from, tag, values.data(), count));
  return ExpectBits(
      comm,
      "Recv(from " + std::to_string(from) + ", tag " + std::to_string(tag) + ", count " +
          std::to_string(count) + ")",
      count, [&](int64_t e) { return CommTestValue(from, first_index + e); }, values.data());
}

// Sends to the next rank in one tag order and receives from the previous one in another; two
// messages share a tag and must arrive in the order sent. Sends are buffered, so nothing waits.
Status CheckSendRecv(Communicator& comm) {
  const int32_t next = (comm.rank() + 1) % comm.size();
  const int32_t previous = (comm.rank() + comm.size() - 1) % comm.size();
  ALPA_RETURN_IF_ERROR(SendValues(comm, next, 3, 300, 3));
  ALPA_RETURN_IF_ERROR(SendValues(comm, next, 1, 100, 1));
  ALPA_RETURN_IF_ERROR(SendValues(comm, next, 2, 200, 2));
  ALPA_RETURN_IF_ERROR(SendValues(comm, next, 2, 400, 4));
  ALPA_RETURN_IF_ERROR(SendValues(comm, comm.rank(), 5, 500, 2));
  ALPA_RETURN_IF_ERROR(SendValues(comm, next, 6, 600, 0));
  ALPA_RETURN_IF_ERROR(RecvValues(comm, previous, 2, 200, 2));
  ALPA_RETURN_IF_ERROR(RecvValues(comm, previous, 6, 600, 0));
  ALPA_RETURN_IF_ERROR(RecvValues(comm, comm.rank(), 5, 500, 2));
  ALPA_RETURN_IF_ERROR(RecvValues(comm, previous, 1, 100, 1));
  ALPA_RETURN_IF_ERROR(RecvValues(comm, previous, 2, 400, 4));
  return RecvValues(comm, previous, 3, 300, 3);
}

Status CheckBarrier(Communicator& comm) {
  const int32_t next = (comm.rank() + 1) % comm.size();
  const int32_t previous = (comm.rank() + comm.size() - 1) % comm.size();
  for (int64_t round = 0; round < 3; ++round) {
    ALPA_RETURN_IF_ERROR(SendValues(comm, next, 70 + round, round, 1));
    ALPA_RETURN_IF_ERROR(comm.Barrier());
    ALPA_RETURN_IF_ERROR(RecvValues(comm, previous, 70 + round, round, 1));
  }
  return comm.Barrier();
}

// Every member's result of one AllReduce, gathered: all the same bits, and the group-order fold.
Status CheckBitIdentical(Communicator& comm) {
  DeviceGroup group(static_cast<size_t>(comm.size()));
  std::iota(group.rbegin(), group.rend(), 0);
  const int64_t count = 1001;
  const ValueOf value = [](int32_t member, int64_t e) { return CommTestValue(member, e + 7); };
  std::vector<double> data(static_cast<size_t>(count));
  for (int64_t e = 0; e < count; ++e) data[static_cast<size_t>(e)] = value(comm.rank(), e);
  ALPA_RETURN_IF_ERROR(comm.AllReduce(group, ReduceOp::kSum, data.data(), count));
  std::vector<double> everyone(static_cast<size_t>(count) * group.size());
  ALPA_RETURN_IF_ERROR(comm.AllGather(group, data.data(), count, everyone.data()));
  for (size_t i = 0; i < group.size(); ++i) {
    ALPA_RETURN_IF_ERROR(ExpectBits(
        comm, "AllReduce(sum) result of rank " + std::to_string(group[i]), count,
        [&](int64_t e) { return FoldAt(ReduceOp::kSum, group, value, e); },
        everyone.data() + i * static_cast<size_t>(count)));
  }
  return Status::Ok();
}

Status CheckLargeCounts(Communicator& comm, int64_t large_count) {
  DeviceGroup rotated(static_cast<size_t>(comm.size()));
  for (int32_t i = 0; i < comm.size(); ++i) rotated[static_cast<size_t>(i)] = (i + 1) % comm.size();
  ALPA_RETURN_IF_ERROR(CheckAllReduce(comm, ReduceOp::kSum, rotated, large_count, CheapValue));
  const int64_t per_member = large_count / comm.size();
  ALPA_RETURN_IF_ERROR(CheckAllGather(comm, rotated, per_member));
  ALPA_RETURN_IF_ERROR(CheckReduceScatter(comm, ReduceOp::kSum, rotated, per_member));
  ALPA_RETURN_IF_ERROR(CheckAllToAll(comm, rotated, per_member));
  const int32_t next = (comm.rank() + 1) % comm.size();
  const int32_t previous = (comm.rank() + comm.size() - 1) % comm.size();
  ALPA_RETURN_IF_ERROR(SendValues(comm, next, 8, 0, large_count));
  return RecvValues(comm, previous, 8, 0, large_count);
}

}  // namespace

double CommTestValue(int32_t rank, int64_t index) {
  // Powers of two from 2^-26 to 2^26, exact, without a libm call per value.
  static const std::vector<double> kScales = [] {
    std::vector<double> scales;
    for (int exponent = -26; exponent <= 26; ++exponent)
      scales.push_back(std::ldexp(1.0, exponent));
    return scales;
  }();
  const uint64_t bits =
      Mix(static_cast<uint64_t>(rank) * 0xD1B54A32D192ED03ull ^ static_cast<uint64_t>(index));
  const double unit = static_cast<double>(bits >> 11) * 0x1p-53;  // [0, 1)
  const double scale = kScales[bits % kScales.size()];
  return (bits & 1) != 0 ? -unit * scale : unit * scale;
}

std::vector<DeviceGroup> CheckGroups(int32_t size) {
  std::vector<DeviceGroup> groups;
  DeviceGroup rotated, reversed, evens_reversed, upper_half_shuffled;
  for (int32_t i = 0; i < size; ++i) rotated.push_back((i + 1) % size);
  for (int32_t i = size - 1; i >= 0; --i) reversed.push_back(i);
  for (int32_t i = size - 1; i >= 0; --i) {
    if (i % 2 == 0) evens_reversed.push_back(i);
  }
  // The upper half, its first element moved to the end: {5, 6, 7, 4} of 8.
  for (int32_t i = size / 2 + 1; i < size; ++i) upper_half_shuffled.push_back(i);
  upper_half_shuffled.push_back(size / 2);
  groups = {rotated, reversed, evens_reversed};
  if (size >= 2) groups.push_back(upper_half_shuffled);
  return groups;
}

std::vector<CommunicatorCheck> CommunicatorChecks(int64_t large_count) {
  return {
      {"AllReduceSumFoldsInGroupOrder",
       [](Communicator& comm) { return CheckAllReduceEverywhere(comm, ReduceOp::kSum); }},
      {"AllReduceMaxFoldsInGroupOrder",
       [](Communicator& comm) { return CheckAllReduceEverywhere(comm, ReduceOp::kMax); }},
      {"AllGatherPlacesChunksInGroupOrder",
       [](Communicator& comm) {
         return CheckEveryGroup(comm,
                                [&](const DeviceGroup& g) { return CheckAllGather(comm, g, 13); });
       }},
      {"ReduceScatterGivesEachMemberItsChunk",
       [](Communicator& comm) {
         return CheckEveryGroup(comm, [&](const DeviceGroup& g) {
           ALPA_RETURN_IF_ERROR(CheckReduceScatter(comm, ReduceOp::kSum, g, 11));
           return CheckReduceScatter(comm, ReduceOp::kMax, g, 11);
         });
       }},
      {"AllToAllRoutesChunks",
       [](Communicator& comm) {
         return CheckEveryGroup(comm,
                                [&](const DeviceGroup& g) { return CheckAllToAll(comm, g, 9); });
       }},
      {"IndependentGroupsProgressSeparately", CheckIndependentGroups},
      {"SendRecvMatchesByTagInSendOrder", CheckSendRecv},
      {"BarriersSeparateRounds", CheckBarrier},
      {"ReductionsAreBitIdenticalOnEveryMember", CheckBitIdentical},
      {"LargeCountsMoveWhole",
       [large_count](Communicator& comm) { return CheckLargeCounts(comm, large_count); }},
  };
}

}  // namespace alpa::testing
