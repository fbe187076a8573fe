#include "exec/comm/thread_communicator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "support/communicator_checks.h"

namespace alpa {
namespace {

using ::testing::HasSubstr;

// Under ThreadSanitizer every memory access is instrumented: the large counts shrink there so
// the suite stays in seconds (the same code paths run).
#if defined(__SANITIZE_THREAD__)
constexpr int64_t kLargeCount = 100'000;
#else
constexpr int64_t kLargeCount = 2'000'000;
#endif

class EveryWorldSize : public ::testing::TestWithParam<int32_t> {};

TEST_P(EveryWorldSize, PassesEveryCommunicatorCheck) {
  for (const testing::CommunicatorCheck& check : testing::CommunicatorChecks(kLargeCount)) {
    SCOPED_TRACE(check.name);
    Status status = RunOnThreads(GetParam(), check.run);
    EXPECT_TRUE(status.ok()) << status.message();
  }
}

INSTANTIATE_TEST_SUITE_P(OneToEightRanks, EveryWorldSize, ::testing::Range(1, 9));

// The statuses each rank's body returned, kept for the assertions.
struct RankResults {
  std::mutex mutex;
  std::vector<Status> statuses;
  explicit RankResults(int32_t ranks) : statuses(static_cast<size_t>(ranks)) {}
  Status Keep(const Communicator& comm, Status status) {
    std::lock_guard<std::mutex> lock(mutex);
    statuses[static_cast<size_t>(comm.rank())] = status;
    return status;
  }
};

TEST(ThreadCommunicator, BarrierReleasesNobodyBeforeEveryoneArrives) {
  std::atomic<int32_t> arrived{0};
  Status status = RunOnThreads(6, [&](Communicator& comm) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5 * comm.rank()));
    ++arrived;
    ALPA_RETURN_IF_ERROR(comm.Barrier());
    if (arrived.load() != comm.size()) {
      return InternalError("rank " + std::to_string(comm.rank()) + " left the barrier with " +
                           std::to_string(arrived.load()) + " arrived");
    }
    return Status::Ok();
  });
  EXPECT_TRUE(status.ok()) << status.message();
}

TEST(ThreadCommunicator, AllReduceIsBitIdenticalRunToRun) {
  std::vector<std::vector<double>> runs;
  for (int run = 0; run < 2; ++run) {
    std::vector<double> result;
    std::mutex mutex;
    Status status = RunOnThreads(5, [&](Communicator& comm) {
      std::vector<double> data(257);
      for (size_t e = 0; e < data.size(); ++e) {
        data[e] = testing::CommTestValue(comm.rank(), static_cast<int64_t>(e));
      }
      ALPA_RETURN_IF_ERROR(comm.AllReduce({3, 1, 4, 0, 2}, ReduceOp::kSum, data.data(), 257));
      std::lock_guard<std::mutex> lock(mutex);
      if (comm.rank() == 0) result = data;
      return Status::Ok();
    });
    ASSERT_TRUE(status.ok()) << status.message();
    runs.push_back(result);
  }
  ASSERT_EQ(runs[0].size(), 257u);
  EXPECT_EQ(0, std::memcmp(runs[0].data(), runs[1].data(), runs[0].size() * sizeof(double)));
}

TEST(ThreadCommunicator, AFailingRankEndsBlockedCollectivesAndReceivesWithItsMessage) {
  RankResults results(4);
  const auto start = std::chrono::steady_clock::now();
  Status status = RunOnThreads(4, [&](Communicator& comm) {
    std::vector<double> data(8, 1.0);
    switch (comm.rank()) {
      case 2:
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        return results.Keep(comm, InvalidArgument("feed 'tokens' is missing"));
      case 3:
        return results.Keep(comm, comm.Recv(2, 1, data.data(), 8));
      default:
        return results.Keep(comm, comm.AllReduce({0, 1, 2}, ReduceOp::kSum, data.data(), 8));
    }
  });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 1.0);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "feed 'tokens' is missing");
  for (int32_t rank : {0, 1, 3}) {
    EXPECT_EQ(results.statuses[static_cast<size_t>(rank)].code(), StatusCode::kCancelled);
    EXPECT_EQ(results.statuses[static_cast<size_t>(rank)].message(),
              "rank 2 failed: feed 'tokens' is missing");
  }
}

TEST(ThreadCommunicator, CallsAfterAnAbortFailAndTheFirstAbortWins) {
  ThreadWorld world(2);
  world.communicator(1).Abort(InternalError("first"));
  world.communicator(0).Abort(InternalError("second"));
  double value = 1.0;
  Status send = world.communicator(0).Send(1, 0, &value, 1);
  EXPECT_EQ(send.code(), StatusCode::kCancelled);
  EXPECT_EQ(send.message(), "rank 1 failed: first");
  EXPECT_EQ(world.communicator(1).AllReduce({0, 1}, ReduceOp::kSum, &value, 1).message(),
            "rank 1 failed: first");
  EXPECT_EQ(world.first_failure().message(), "first");
}

TEST(ThreadCommunicator, WatchdogTurnsALongWaitIntoAnErrorNamingTheRankAndCall) {
  ThreadWorld world(2, std::chrono::milliseconds(50));
  RankResults results(2);
  const auto start = std::chrono::steady_clock::now();
  Status status = RunOnThreads(world, [&](Communicator& comm) {
    std::vector<double> data(4);
    if (comm.rank() == 0) return results.Keep(comm, comm.Recv(1, 9, data.data(), 4));
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    return results.Keep(comm, comm.Barrier());
  });
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2.0);
  EXPECT_EQ(status.code(), StatusCode::kTimeout);
  EXPECT_EQ(status.message(),
            "watchdog: rank 0 waited more than 0.05 s in Recv(from 1, tag 9, count 4)");
  EXPECT_EQ(results.statuses[1].code(), StatusCode::kCancelled);
  EXPECT_THAT(results.statuses[1].message(), HasSubstr("rank 0 failed: watchdog: rank 0"));
}

TEST(ThreadCommunicator, WatchdogNamesTheCollectiveAndItsCallNumber) {
  ThreadWorld world(3, std::chrono::milliseconds(50));
  Status status = RunOnThreads(world, [&](Communicator& comm) {
    std::vector<double> data(6);
    if (comm.rank() == 2) {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      return Status::Ok();
    }
    ALPA_RETURN_IF_ERROR(comm.AllReduce({1, 0}, ReduceOp::kSum, data.data(), 6));
    if (comm.rank() == 1) return Status::Ok();
    return comm.AllGather({2, 0}, data.data(), 3, data.data());
  });
  EXPECT_EQ(status.code(), StatusCode::kTimeout);
  EXPECT_EQ(status.message(),
            "watchdog: rank 0 waited more than 0.05 s in AllGather(count 3) over group {2, 0} "
            "(call #0 over that group)");
}

TEST(ThreadCommunicator, WaitingOnARankThatReturnedFailsAtOnce) {
  const auto start = std::chrono::steady_clock::now();
  Status status = RunOnThreads(2, [](Communicator& comm) {
    if (comm.rank() == 1) return Status::Ok();
    std::vector<double> data(2);
    ALPA_RETURN_IF_ERROR(comm.AllReduce({0, 1}, ReduceOp::kMax, data.data(), 2));
    return comm.Recv(1, 4, data.data(), 2);
  });
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 1.0);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("has returned without making that call"));
  EXPECT_THAT(status.message(), HasSubstr("rank 0 waits in"));
}

TEST(ThreadCommunicator, MismatchedCollectivesFailWithBothCalls) {
  Status status = RunOnThreads(2, [](Communicator& comm) {
    std::vector<double> data(5);
    if (comm.rank() == 0) return comm.AllReduce({0, 1}, ReduceOp::kSum, data.data(), 4);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return comm.AllReduce({0, 1}, ReduceOp::kSum, data.data(), 5);
  });
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "rank 1 called AllReduce(sum, count 5) over group {0, 1} (call #0 over that group), "
            "but rank 0 called AllReduce(sum, count 4) over group {0, 1} (call #0 over that "
            "group)");
}

TEST(ThreadCommunicator, MismatchedKindsFail) {
  Status status = RunOnThreads(2, [](Communicator& comm) {
    std::vector<double> data(4);
    if (comm.rank() == 0) return comm.AllReduce({0, 1}, ReduceOp::kMax, data.data(), 2);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    return comm.AllGather({0, 1}, data.data(), 2, data.data());
  });
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("rank 1 called AllGather(count 2)"));
  EXPECT_THAT(status.message(), HasSubstr("rank 0 called AllReduce(max, count 2)"));
}

TEST(ThreadCommunicator, BadArgumentsFailOnTheCallerWithClearMessages) {
  ThreadWorld world(4);
  Communicator& comm = world.communicator(1);
  std::vector<double> data(16);
  EXPECT_EQ(comm.AllReduce({0, 2}, ReduceOp::kSum, data.data(), 4).message(),
            "AllReduce: group {0, 2} does not contain the calling rank 1");
  EXPECT_EQ(comm.AllGather({1, 4}, data.data(), 2, data.data()).message(),
            "AllGather: group {1, 4}: [1] = 4 is not a rank of the world [0, 4)");
  EXPECT_EQ(comm.AllToAll({1, 0, 1}, data.data(), 2, data.data()).message(),
            "AllToAll: group {1, 0, 1}: [2] = 1 repeats [0]");
  EXPECT_EQ(comm.ReduceScatter({}, ReduceOp::kSum, data.data(), 2, data.data()).message(),
            "ReduceScatter: the group is empty");
  EXPECT_EQ(comm.AllReduce({1}, ReduceOp::kSum, data.data(), -3).message(),
            "AllReduce: count -3 is negative");
  EXPECT_EQ(comm.AllGather({1, 0}, nullptr, 2, data.data()).message(),
            "AllGather: the input buffer is null with count 2");
  EXPECT_EQ(comm.AllGather({1, 0}, data.data(), int64_t{1} << 61, data.data()).message(),
            "AllGather: count 2305843009213693952 times 2 chunks overflows a byte count");
  EXPECT_EQ(comm.Send(7, 0, data.data(), 1).message(),
            "Send: destination rank 7 is not a rank of the world [0, 4)");
  EXPECT_EQ(comm.Recv(-1, 0, data.data(), 1).message(),
            "Recv: source rank -1 is not a rank of the world [0, 4)");
  EXPECT_EQ(comm.Send(0, -2, data.data(), 1).message(), "Send: tag -2 is negative");
  for (const Status& status :
       {comm.AllReduce({0, 2}, ReduceOp::kSum, data.data(), 4), comm.Send(7, 0, data.data(), 1)}) {
    EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  }
  EXPECT_TRUE(world.first_failure().ok()) << "a bad argument fails the call, not the world";
}

TEST(ThreadCommunicator, RecvOfAnotherCountNamesBothRanksAndTheTag) {
  ThreadWorld world(2);
  std::vector<double> data(5, 2.0);
  ASSERT_TRUE(world.communicator(0).Send(1, 12, data.data(), 5).ok());
  ASSERT_TRUE(world.communicator(0).Send(1, 12, data.data(), 3).ok());
  Status status = world.communicator(1).Recv(0, 12, data.data(), 4);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(),
            "Recv: rank 1 expected 4 values from rank 0 with tag 12, but the message holds 5");
  // The mismatched message was taken whole: the next one on the channel is intact.
  EXPECT_TRUE(world.communicator(1).Recv(0, 12, data.data(), 3).ok());
}

TEST(ThreadCommunicator, SendIsBufferedSoTheCallerMayReuseItsValues) {
  ThreadWorld world(2);
  std::vector<double> data{1.0, 2.0};
  ASSERT_TRUE(world.communicator(0).Send(1, 0, data.data(), 2).ok());
  data = {9.0, 9.0};
  std::vector<double> received(2);
  ASSERT_TRUE(world.communicator(1).Recv(0, 0, received.data(), 2).ok());
  EXPECT_EQ(received, (std::vector<double>{1.0, 2.0}));
}

TEST(ThreadCommunicator, AnExceptionInABodyBecomesAnInternalError) {
  Status status = RunOnThreads(3, [](Communicator& comm) -> Status {
    if (comm.rank() == 1) throw std::runtime_error("kernel exploded");
    return comm.Barrier();
  });
  EXPECT_EQ(status.code(), StatusCode::kInternal);
  EXPECT_EQ(status.message(), "uncaught exception: kernel exploded");
}

TEST(ThreadCommunicator, RunOnThreadsRejectsAnEmptyWorld) {
  Status status = RunOnThreads(0, [](Communicator&) { return Status::Ok(); });
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(status.message(), "RunOnThreads: ranks 0 is not positive");
}

TEST(ThreadCommunicator, MaxPropagatesNan) {
  Status status = RunOnThreads(3, [](Communicator& comm) {
    double value = comm.rank() == 1 ? std::nan("") : static_cast<double>(comm.rank());
    ALPA_RETURN_IF_ERROR(comm.AllReduce({0, 1, 2}, ReduceOp::kMax, &value, 1));
    return std::isnan(value) ? Status::Ok() : InternalError("max lost the NaN");
  });
  EXPECT_TRUE(status.ok()) << status.message();
}

}  // namespace
}  // namespace alpa
