// The rendezvous of rendezvous.h without a GPU: the spec, the environment, the file, tcp and
// communicator rendezvous sharing a blob among threads, their deadlines and messages, and the
// failure channel.
#include "exec/comm/rendezvous.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "exec/comm/communicator_rendezvous.h"
#include "exec/comm/thread_communicator.h"
#include "support/free_port.h"

namespace alpa {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

using testing::FreePort;

std::string FreshPath(const std::string& name) {
  const std::string path =
      ::testing::TempDir() + "/alpa_rendezvous_" + name + "_" + std::to_string(getpid());
  std::remove(path.c_str());
  std::remove((path + ".failed").c_str());
  return path;
}

RendezvousConfig ConfigFor(const std::string& spec, int32_t rank, int32_t size,
                           std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  RendezvousConfig config;
  Result<RendezvousSpec> parsed = ParseRendezvousSpec(spec);
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  config.spec = parsed.value();
  config.rank = rank;
  config.world_size = size;
  config.timeout = timeout;
  return config;
}

std::vector<uint8_t> SomeBlob() {
  // Every byte value, as NCCL's unique id may hold any.
  std::vector<uint8_t> blob(128);
  for (size_t i = 0; i < blob.size(); ++i) blob[i] = static_cast<uint8_t>(255 - 2 * i);
  return blob;
}

// Every rank of `spec` on its own thread: connects, shares the blob, and keeps its rendezvous.
struct World {
  std::vector<Status> statuses;
  std::vector<std::vector<uint8_t>> blobs;
  std::vector<std::unique_ptr<Rendezvous>> rendezvous;
};

World ShareOnThreads(const std::string& spec, int32_t size) {
  World world;
  world.statuses.resize(static_cast<size_t>(size));
  world.blobs.resize(static_cast<size_t>(size));
  world.rendezvous.resize(static_cast<size_t>(size));
  std::vector<std::thread> threads;
  for (int32_t rank = 0; rank < size; ++rank) {
    threads.emplace_back([&, rank] {
      const size_t slot = static_cast<size_t>(rank);
      Result<std::unique_ptr<Rendezvous>> met = ConnectRendezvous(ConfigFor(spec, rank, size));
      if (!met.ok()) {
        world.statuses[slot] = met.status();
        return;
      }
      world.rendezvous[slot] = std::move(met).value();
      if (rank == 0) world.blobs[slot] = SomeBlob();
      world.statuses[slot] = world.rendezvous[slot]->ShareBlob(&world.blobs[slot]);
    });
  }
  for (std::thread& thread : threads) thread.join();
  return world;
}

void ExpectEveryRankHasTheBlob(const World& world) {
  for (size_t rank = 0; rank < world.statuses.size(); ++rank) {
    ASSERT_TRUE(world.statuses[rank].ok())
        << "rank " << rank << ": " << world.statuses[rank].message();
    EXPECT_EQ(world.blobs[rank], SomeBlob()) << "rank " << rank;
  }
}

// Polls `rendezvous` until it reports a peer's failure, for at most `limit`.
Status AwaitPeerFailure(const Rendezvous& rendezvous, std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    Status failure = rendezvous.PeerFailure();
    if (!failure.ok()) return failure;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return Status::Ok();
}

TEST(RendezvousSpec, ParsesTheThreeKinds) {
  Result<RendezvousSpec> file = ParseRendezvousSpec("file:/tmp/x");
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(file.value().kind, RendezvousKind::kFile);
  EXPECT_EQ(file.value().path, "/tmp/x");
  Result<RendezvousSpec> tcp = ParseRendezvousSpec("tcp:node0:29500");
  ASSERT_TRUE(tcp.ok());
  EXPECT_EQ(tcp.value().kind, RendezvousKind::kTcp);
  EXPECT_EQ(tcp.value().host, "node0");
  EXPECT_EQ(tcp.value().port, 29500);
  Result<RendezvousSpec> v6 = ParseRendezvousSpec("tcp:[::1]:80");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6.value().host, "::1");
  ASSERT_TRUE(ParseRendezvousSpec("mpi").ok());
  EXPECT_EQ(ParseRendezvousSpec("mpi").value().kind, RendezvousKind::kMpi);
}

TEST(RendezvousSpec, BadSpecsAreInvalidArgumentsNamingTheProblem) {
  const std::map<std::string, std::string> bad = {
      {"", "ALPA_RENDEZVOUS is empty"},
      {"nfs:/x", "ALPA_RENDEZVOUS \"nfs:/x\": unknown kind \"nfs\""},
      {"file:", "the path is empty"},
      {"tcp:node0", "\"tcp:node0\": no port: expected tcp:host:port"},
      {"tcp::29500", "the host is empty"},
      {"tcp:node0:0", "port \"0\" is not a number in [1, 65535]"},
      {"tcp:node0:65536", "port \"65536\""},
      {"tcp:node0:99999999999999999999", "is not a number"},
      {"tcp:node0:-1", "port \"-1\""},
      {"MPI", "unknown kind \"MPI\""},
  };
  for (const auto& [text, message] : bad) {
    Result<RendezvousSpec> parsed = ParseRendezvousSpec(text);
    ASSERT_FALSE(parsed.ok()) << text;
    EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(parsed.status().message(), HasSubstr(message)) << text;
  }
}

Result<RendezvousConfig> FromVariables(const std::map<std::string, std::string>& variables) {
  return RendezvousConfigFromEnvironment([&](const char* name) -> const char* {
    auto found = variables.find(name);
    return found == variables.end() ? nullptr : found->second.c_str();
  });
}

TEST(RendezvousConfig, ReadsTheSpecRankSizeAndTimeoutFromTheEnvironment) {
  Result<RendezvousConfig> config = FromVariables({{"ALPA_RENDEZVOUS", "tcp:h:1234"},
                                                   {"ALPA_RANK", "2"},
                                                   {"ALPA_WORLD_SIZE", "4"},
                                                   {"ALPA_RENDEZVOUS_TIMEOUT_S", "7"}});
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config.value().spec.port, 1234);
  EXPECT_EQ(config.value().rank, 2);
  EXPECT_EQ(config.value().world_size, 4);
  EXPECT_EQ(config.value().timeout, std::chrono::seconds(7));
  Result<RendezvousConfig> defaults =
      FromVariables({{"ALPA_RENDEZVOUS", "file:/x"}, {"ALPA_RANK", "0"}, {"ALPA_WORLD_SIZE", "1"}});
  ASSERT_TRUE(defaults.ok());
  EXPECT_EQ(defaults.value().timeout, RendezvousConfig::kDefaultTimeout);
}

TEST(RendezvousConfig, UnderMpirunWithoutASpecTheRendezvousIsMpi) {
  Result<RendezvousConfig> config = FromVariables({{"OMPI_COMM_WORLD_SIZE", "4"}});
  ASSERT_TRUE(config.ok()) << config.status().message();
  EXPECT_EQ(config.value().spec.kind, RendezvousKind::kMpi);
}

TEST(RendezvousConfig, MissingOrBadVariablesAreNamed) {
  const std::vector<std::pair<std::map<std::string, std::string>, std::string>> bad = {
      {{}, "ALPA_RENDEZVOUS is not set"},
      {{{"ALPA_RENDEZVOUS", "tcp:h:1"}, {"ALPA_WORLD_SIZE", "2"}}, "ALPA_RANK is not set"},
      {{{"ALPA_RENDEZVOUS", "tcp:h:1"}, {"ALPA_RANK", "2"}, {"ALPA_WORLD_SIZE", "2"}},
       "ALPA_RANK 2 is not below ALPA_WORLD_SIZE 2"},
      {{{"ALPA_RENDEZVOUS", "tcp:h:1"}, {"ALPA_RANK", "x"}, {"ALPA_WORLD_SIZE", "2"}},
       "ALPA_RANK \"x\" is not an integer"},
      {{{"ALPA_RENDEZVOUS", "mpi"}, {"ALPA_RENDEZVOUS_TIMEOUT_S", "0"}},
       "ALPA_RENDEZVOUS_TIMEOUT_S \"0\""},
      {{{"ALPA_RENDEZVOUS", "tcp:h"}}, "port"},
  };
  for (const auto& [variables, message] : bad) {
    Result<RendezvousConfig> config = FromVariables(variables);
    ASSERT_FALSE(config.ok()) << message;
    EXPECT_EQ(config.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(config.status().message(), HasSubstr(message));
  }
}

TEST(FileRendezvous, FourRanksAgreeOnTheBlob) {
  const std::string path = FreshPath("agree");
  ExpectEveryRankHasTheBlob(ShareOnThreads("file:" + path, 4));
  std::remove(path.c_str());
}

TEST(FileRendezvous, ARankWithoutRankZeroTimesOutNamingTheFile) {
  const std::string path = FreshPath("timeout");
  Result<std::unique_ptr<Rendezvous>> met =
      ConnectRendezvous(ConfigFor("file:" + path, 1, 2, std::chrono::milliseconds(200)));
  ASSERT_TRUE(met.ok());
  std::vector<uint8_t> blob;
  const auto start = Clock::now();
  const Status shared = met.value()->ShareBlob(&blob);
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
  EXPECT_EQ(shared.code(), StatusCode::kTimeout);
  EXPECT_EQ(shared.message(), "rendezvous file:" + path + ": rank 1 waited 200 ms for rank 0 to " +
                                  "write " + path + ": it did not appear");
}

TEST(FileRendezvous, RankZeroRefusesAnExistingFile) {
  const std::string path = FreshPath("stale");
  {
    std::FILE* stale = std::fopen(path.c_str(), "w");
    std::fclose(stale);
  }
  Result<std::unique_ptr<Rendezvous>> met = ConnectRendezvous(ConfigFor("file:" + path, 0, 2));
  ASSERT_FALSE(met.ok());
  EXPECT_EQ(met.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(met.status().message(), HasSubstr(path + " already exists"));
  std::remove(path.c_str());
}

TEST(FileRendezvous, AWorldSizeMismatchIsNamed) {
  const std::string path = FreshPath("mismatch");
  Result<std::unique_ptr<Rendezvous>> zero = ConnectRendezvous(ConfigFor("file:" + path, 0, 3));
  ASSERT_TRUE(zero.ok());
  std::vector<uint8_t> blob = SomeBlob();
  ASSERT_TRUE(zero.value()->ShareBlob(&blob).ok());
  Result<std::unique_ptr<Rendezvous>> one = ConnectRendezvous(ConfigFor("file:" + path, 1, 2));
  ASSERT_TRUE(one.ok());
  std::vector<uint8_t> received;
  const Status shared = one.value()->ShareBlob(&received);
  EXPECT_EQ(shared.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(shared.message(), HasSubstr("world_size=3"));
  EXPECT_THAT(shared.message(), HasSubstr("world_size=2"));
  std::remove(path.c_str());
}

TEST(FileRendezvous, AFailureReachesEveryOtherRankWithItsMessage) {
  const std::string path = FreshPath("failure");
  World world = ShareOnThreads("file:" + path, 3);
  ExpectEveryRankHasTheBlob(world);
  world.rendezvous[1]->ReportFailure(InternalError("out of memory on GPU 1"));
  world.rendezvous[2]->ReportFailure(InternalError("a consequence"));
  for (size_t rank : {size_t{0}, size_t{2}}) {
    const Status failure = AwaitPeerFailure(*world.rendezvous[rank], std::chrono::seconds(5));
    EXPECT_EQ(failure.code(), StatusCode::kCancelled);
    EXPECT_EQ(failure.message(), "rank 1 failed: out of memory on GPU 1");
  }
  EXPECT_TRUE(world.rendezvous[1]->PeerFailure().ok());
  std::remove(path.c_str());
  std::remove((path + ".failed").c_str());
}

TEST(TcpRendezvous, FourRanksAgreeOnTheBlob) {
  ExpectEveryRankHasTheBlob(ShareOnThreads("tcp:localhost:" + std::to_string(FreePort()), 4));
}

TEST(TcpRendezvous, RankZeroNamesTheRanksThatDidNotConnect) {
  const std::string spec = "tcp:127.0.0.1:" + std::to_string(FreePort());
  Status zero_status;
  std::unique_ptr<Rendezvous> two;
  std::thread zero([&] {
    zero_status =
        ConnectRendezvous(ConfigFor(spec, 0, 4, std::chrono::milliseconds(2000))).status();
  });
  Result<std::unique_ptr<Rendezvous>> met = ConnectRendezvous(ConfigFor(spec, 2, 4));
  zero.join();
  ASSERT_TRUE(met.ok()) << met.status().message();
  EXPECT_EQ(zero_status.code(), StatusCode::kTimeout);
  EXPECT_EQ(zero_status.message(),
            "rendezvous " + spec + ": rank 0 waited 2 s; ranks {1, 3} did not connect");
  // Rank 0 told rank 2 before leaving.
  std::vector<uint8_t> blob;
  const Status shared = met.value()->ShareBlob(&blob);
  EXPECT_EQ(shared.code(), StatusCode::kCancelled);
  EXPECT_THAT(shared.message(), HasSubstr("rank 0 failed: rendezvous " + spec));
}

TEST(TcpRendezvous, ARankWithoutRankZeroGivesUpAtTheDeadline) {
  const uint16_t port = FreePort();
  const std::string spec = "tcp:127.0.0.1:" + std::to_string(port);
  const auto start = Clock::now();
  Result<std::unique_ptr<Rendezvous>> met =
      ConnectRendezvous(ConfigFor(spec, 1, 2, std::chrono::milliseconds(300)));
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
  ASSERT_FALSE(met.ok());
  EXPECT_EQ(met.status().code(), StatusCode::kTimeout);
  EXPECT_THAT(
      met.status().message(),
      HasSubstr("rendezvous " + spec + ": rank 1 could not connect to rank 0 at 127.0.0.1:" +
                std::to_string(port) + " within 300 ms (last error: connect: "));
}

TEST(TcpRendezvous, AWorldSizeMismatchEndsBothSides) {
  const std::string spec = "tcp:127.0.0.1:" + std::to_string(FreePort());
  Status zero_status;
  std::thread zero([&] { zero_status = ConnectRendezvous(ConfigFor(spec, 0, 2)).status(); });
  Result<std::unique_ptr<Rendezvous>> one = ConnectRendezvous(ConfigFor(spec, 1, 3));
  zero.join();
  EXPECT_EQ(zero_status.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(zero_status.message(),
            "rendezvous " + spec + ": rank 0: rank 1 expects a world of 3 ranks, rank 0 one of 2");
  ASSERT_TRUE(one.ok());
  std::vector<uint8_t> blob;
  EXPECT_THAT(one.value()->ShareBlob(&blob).message(), HasSubstr("expects a world of 3 ranks"));
}

TEST(TcpRendezvous, AFailureOfOneRankReachesEveryOtherThroughRankZero) {
  World world = ShareOnThreads("tcp:localhost:" + std::to_string(FreePort()), 4);
  ExpectEveryRankHasTheBlob(world);
  world.rendezvous[3]->ReportFailure(InternalError("NCCL error: unhandled cuda error"));
  for (size_t rank : {size_t{0}, size_t{1}, size_t{2}}) {
    const Status failure = AwaitPeerFailure(*world.rendezvous[rank], std::chrono::seconds(5));
    EXPECT_EQ(failure.code(), StatusCode::kCancelled);
    EXPECT_EQ(failure.message(), "rank 3 failed: NCCL error: unhandled cuda error");
  }
}

TEST(TcpRendezvous, ARankThatLeavesNormallyIsNoFailure) {
  World world = ShareOnThreads("tcp:localhost:" + std::to_string(FreePort()), 3);
  ExpectEveryRankHasTheBlob(world);
  world.rendezvous[2].reset();
  EXPECT_TRUE(AwaitPeerFailure(*world.rendezvous[0], std::chrono::milliseconds(200)).ok());
  EXPECT_TRUE(AwaitPeerFailure(*world.rendezvous[1], std::chrono::milliseconds(50)).ok());
}

TEST(CommunicatorRendezvous, ThreadRanksAgreeOnTheBlobThroughAllGathers) {
  ThreadWorld world(3);
  std::vector<std::vector<uint8_t>> blobs(3);
  std::vector<Status> statuses(3);
  std::vector<std::thread> threads;
  for (int32_t rank = 0; rank < 3; ++rank) {
    threads.emplace_back([&, rank] {
      // The rendezvous owns its communicator; a thread world's belongs to the world, so wrap it.
      struct Borrowed : Communicator {
        explicit Borrowed(Communicator& inner) : inner_(inner) {}
        int32_t rank() const override { return inner_.rank(); }
        int32_t size() const override { return inner_.size(); }
        Status AllReduce(const DeviceGroup& g, ReduceOp op, double* d, int64_t c) override {
          return inner_.AllReduce(g, op, d, c);
        }
        Status AllGather(const DeviceGroup& g, const double* i, int64_t c, double* o) override {
          return inner_.AllGather(g, i, c, o);
        }
        Status ReduceScatter(const DeviceGroup& g, ReduceOp op, const double* i, int64_t c,
                             double* o) override {
          return inner_.ReduceScatter(g, op, i, c, o);
        }
        Status AllToAll(const DeviceGroup& g, const double* i, int64_t c, double* o) override {
          return inner_.AllToAll(g, i, c, o);
        }
        Status Send(int32_t to, int64_t tag, const double* d, int64_t c) override {
          return inner_.Send(to, tag, d, c);
        }
        Status Recv(int32_t from, int64_t tag, double* d, int64_t c) override {
          return inner_.Recv(from, tag, d, c);
        }
        Status Barrier() override { return inner_.Barrier(); }
        void Abort(const Status& status) override { inner_.Abort(status); }
        Communicator& inner_;
      };
      std::unique_ptr<Rendezvous> rendezvous =
          RendezvousOverCommunicator(std::make_unique<Borrowed>(world.communicator(rank)), "mpi");
      const size_t slot = static_cast<size_t>(rank);
      if (rank == 0) blobs[slot] = SomeBlob();
      statuses[slot] = rendezvous->ShareBlob(&blobs[slot]);
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (size_t rank = 0; rank < 3; ++rank) {
    ASSERT_TRUE(statuses[rank].ok()) << statuses[rank].message();
    EXPECT_EQ(blobs[rank], SomeBlob());
  }
}

}  // namespace
}  // namespace alpa
