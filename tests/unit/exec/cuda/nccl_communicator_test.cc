// The NCCL communicator on one GPU: a world of one rank (NCCL does not allow two ranks of one
// communicator on one GPU), with every collective through NCCL (the world communicator and a
// communicator split off by Prepare), in both reduction modes, Send/Recv to itself, a Barrier and
// an Abort. Skipped without a GPU; without CUDA the factory says how to get it.
#include "exec/cuda/nccl_communicator.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>
#include <vector>

#include "exec/cuda/cuda_backend.h"

namespace alpa {
namespace {

using ::testing::HasSubstr;

std::string FreshPath(const std::string& name) {
  const std::string path =
      ::testing::TempDir() + "/alpa_nccl_" + name + "_" + std::to_string(getpid());
  std::remove(path.c_str());
  std::remove((path + ".failed").c_str());
  return path;
}

std::unique_ptr<Rendezvous> OneRankRendezvous(const std::string& path) {
  RendezvousConfig config;
  config.spec = ParseRendezvousSpec("file:" + path).value();
  config.rank = 0;
  config.world_size = 1;
  config.timeout = std::chrono::seconds(5);
  Result<std::unique_ptr<Rendezvous>> met = ConnectRendezvous(config);
  EXPECT_TRUE(met.ok()) << met.status().message();
  return met.ok() ? std::move(met).value() : nullptr;
}

// Communicators of a world of one rank, created once per suite (NCCL's initialisation takes
// a while): one keeping the group-order reductions, one with NCCL's own.
class NcclOneRank : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string why;
    if (CudaDeviceCount(&why) == 0) return;
    for (bool ordered : {true, false}) {
      Result<std::unique_ptr<NcclCommunicator>> created = Create(ordered);
      if (!created.ok()) {
        creation_error_ = created.status().message();
        continue;
      }
      communicators_.push_back(std::move(created).value());
    }
  }

  static void TearDownTestSuite() {
    communicators_.clear();
    for (const std::string& path : paths_) {
      std::remove(path.c_str());
      std::remove((path + ".failed").c_str());
    }
  }

  static Result<std::unique_ptr<NcclCommunicator>> Create(bool ordered) {
    paths_.push_back(FreshPath("world" + std::to_string(paths_.size())));
    NcclCommunicatorOptions options;
    options.ordered_reductions = ordered;
    options.wait_timeout = std::chrono::seconds(10);
    return CreateNcclCommunicator(OneRankRendezvous(paths_.back()), options);
  }

  void SetUp() override {
    std::string why;
    if (CudaDeviceCount(&why) == 0) GTEST_SKIP() << "no GPU: " << why;
    ASSERT_EQ(communicators_.size(), 2u) << creation_error_;
  }

  static std::vector<std::unique_ptr<NcclCommunicator>> communicators_;
  static std::vector<std::string> paths_;
  static std::string creation_error_;

  // Values with every kind of double the staging must carry unchanged.
  static std::vector<double> Values(size_t count) {
    std::vector<double> values(count);
    for (size_t i = 0; i < count; ++i) {
      values[i] = std::ldexp(1.0 + 0.37 * static_cast<double>(i), static_cast<int>(i % 40) - 20);
    }
    if (count > 2) {
      values[0] = -0.0;
      values[1] = std::numeric_limits<double>::denorm_min();
      values[2] = std::numeric_limits<double>::infinity();
    }
    return values;
  }

  // Every collective over `group` (a world of one: each is the identity on the values).
  static void ExpectCollectivesAreIdentities(Communicator* comm, const DeviceGroup& group) {
    for (size_t count : {size_t{1}, size_t{7}, size_t{1} << 20}) {
      const std::vector<double> in = Values(count);
      std::vector<double> data = in;
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax}) {
        ASSERT_TRUE(comm->AllReduce(group, op, data.data(), static_cast<int64_t>(count)).ok());
        EXPECT_EQ(data, in) << "AllReduce " << ReduceOpName(op) << " of " << count;
        std::vector<double> out(count, 5.0);
        ASSERT_TRUE(
            comm->ReduceScatter(group, op, in.data(), static_cast<int64_t>(count), out.data())
                .ok());
        EXPECT_EQ(out, in) << "ReduceScatter " << ReduceOpName(op) << " of " << count;
      }
      std::vector<double> gathered(count, 5.0);
      ASSERT_TRUE(
          comm->AllGather(group, in.data(), static_cast<int64_t>(count), gathered.data()).ok());
      EXPECT_EQ(gathered, in) << "AllGather of " << count;
      std::vector<double> exchanged(count, 5.0);
      ASSERT_TRUE(
          comm->AllToAll(group, in.data(), static_cast<int64_t>(count), exchanged.data()).ok());
      EXPECT_EQ(exchanged, in) << "AllToAll of " << count;
    }
    std::vector<double> none;
    EXPECT_TRUE(comm->AllReduce(group, ReduceOp::kSum, none.data(), 0).ok());
  }
};

std::vector<std::unique_ptr<NcclCommunicator>> NcclOneRank::communicators_;
std::vector<std::string> NcclOneRank::paths_;
std::string NcclOneRank::creation_error_;

TEST_F(NcclOneRank, EveryCollectiveOverTheWorldCommunicatorKeepsTheValues) {
  for (auto& comm : communicators_) {
    EXPECT_EQ(comm->rank(), 0);
    EXPECT_EQ(comm->size(), 1);
    ExpectCollectivesAreIdentities(comm.get(), {0});
  }
}

TEST_F(NcclOneRank, APreparedGroupRunsOnItsSplitCommunicator) {
  for (auto& comm : communicators_) {
    ASSERT_TRUE(comm->Prepare({{0}, {0}}).ok());
    ExpectCollectivesAreIdentities(comm.get(), {0});
    // Preparing it again splits nothing more (every rank skips it alike).
    ASSERT_TRUE(comm->Prepare({{0}}).ok());
    EXPECT_TRUE(comm->Barrier().ok());
  }
}

TEST_F(NcclOneRank, PrepareNamesABadGroup) {
  const Status prepared = communicators_[0]->Prepare({{0}, {0, 1}});
  EXPECT_EQ(prepared.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(prepared.message(),
              HasSubstr("Prepare: groups[1]: group {0, 1} has 2 ranks, more than the world's 1"));
}

TEST_F(NcclOneRank, SendAndRecvToItselfMatchTagsAndCounts) {
  NcclCommunicator& comm = *communicators_[0];
  const std::vector<double> first = Values(5);
  const std::vector<double> second = {1.5, 2.5};
  ASSERT_TRUE(comm.Send(0, 3, first.data(), 5).ok());
  ASSERT_TRUE(comm.Send(0, 4, second.data(), 2).ok());
  std::vector<double> received(2);
  ASSERT_TRUE(comm.Recv(0, 4, received.data(), 2).ok());
  EXPECT_EQ(received, second);
  received.assign(5, 0.0);
  ASSERT_TRUE(comm.Recv(0, 3, received.data(), 5).ok());
  EXPECT_EQ(received, first);
  ASSERT_TRUE(comm.Send(0, 3, first.data(), 5).ok());
  const Status mismatch = comm.Recv(0, 3, received.data(), 4);
  EXPECT_EQ(mismatch.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(mismatch.message(),
            "Recv: rank 0 expected 4 values from rank 0 with tag 3, but the message holds 5");
  const Status nothing = comm.Recv(0, 9, received.data(), 1);
  EXPECT_EQ(nothing.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(nothing.message(), HasSubstr("it sent none"));
}

TEST_F(NcclOneRank, AfterAnAbortEveryCallSaysWhichRankFailedAndWhy) {
  Result<std::unique_ptr<NcclCommunicator>> created = Create(true);
  ASSERT_TRUE(created.ok()) << created.status().message();
  NcclCommunicator& comm = *created.value();
  comm.Abort(InternalError("injected"));
  double value = 1.0;
  const Status after = comm.AllReduce({0}, ReduceOp::kSum, &value, 1);
  EXPECT_EQ(after.code(), StatusCode::kCancelled);
  EXPECT_EQ(after.message(), "rank 0 failed: injected");
  EXPECT_EQ(comm.Barrier().message(), "rank 0 failed: injected");
  comm.Abort(InternalError("second"));
  EXPECT_EQ(comm.Send(0, 1, &value, 1).message(), "rank 0 failed: injected");
}

TEST(NcclCommunicator, WithoutAGpuCreatingOneSaysWhy) {
  std::string why;
  if (CudaDeviceCount(&why) > 0) GTEST_SKIP() << "a GPU is here: NcclOneRank covers it";
  const std::string path = FreshPath("without_gpu");
  Result<std::unique_ptr<NcclCommunicator>> created =
      CreateNcclCommunicator(OneRankRendezvous(path), NcclCommunicatorOptions());
  ASSERT_FALSE(created.ok());
  EXPECT_EQ(created.status().code(), StatusCode::kUnsupported);
  EXPECT_THAT(created.status().message(),
              ::testing::AnyOf(HasSubstr("needs libalpa built with ALPA_WITH_CUDA=ON"),
                               HasSubstr("rank 0: " + why)));
  std::remove((path + ".failed").c_str());
}

}  // namespace
}  // namespace alpa
