// The acceptance check of the NCCL communicator's failure handling, on the CPU path: N processes
// meet in a tcp rendezvous and wait in the very loop the NCCL communicator waits in
// (WaitWatched), on an operation that never completes (a collective whose peer is gone). One rank
// fails, or is killed with SIGKILL, mid-run; every other rank must end well within 30 s with that
// rank's message, long before its own 20 s deadline.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "exec/comm/rendezvous.h"
#include "exec/comm/watched_wait.h"
#include "support/free_port.h"

namespace alpa {
namespace {

using ::testing::HasSubstr;
using Clock = std::chrono::steady_clock;

constexpr int32_t kRanks = 4;
constexpr std::chrono::seconds kWaitTimeout{20};
// What "ends at once" means here: far below both the wait's deadline and the 30 s asked for.
constexpr std::chrono::seconds kPromptly{8};

using testing::FreePort;

// What a rank does once the blob is shared: returns the status its wait ended with.
using RankBody = std::function<Status(int32_t rank, Rendezvous& rendezvous)>;

struct Child {
  pid_t pid = -1;
  int output = -1;   // the read end of the child's pipe
  std::string text;  // "ready\n" after the rendezvous, then "<code> <message>"
  bool closed = false;
  Clock::duration ended_after{};
};

void WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t written = write(fd, text.data() + done, text.size() - done);
    if (written <= 0) return;
    done += static_cast<size_t>(written);
  }
}

[[noreturn]] void RunChild(int32_t rank, const std::string& spec, const RankBody& body, int out) {
  RendezvousConfig config;
  config.spec = ParseRendezvousSpec(spec).value();
  config.rank = rank;
  config.world_size = kRanks;
  config.timeout = std::chrono::seconds(10);
  Result<std::unique_ptr<Rendezvous>> met = ConnectRendezvous(config);
  std::vector<uint8_t> blob(128, static_cast<uint8_t>(7));
  Status status = met.ok() ? met.value()->ShareBlob(&blob) : met.status();
  if (status.ok()) {
    WriteAll(out, "ready\n");
    status = body(rank, *met.value());
  }
  WriteAll(out, std::to_string(static_cast<int>(status.code())) + " " + status.message());
  close(out);
  // Without the destructor's goodbye: a failed rank's process ends as a crashed one would.
  std::_Exit(status.ok() ? 0 : 1);
}

class FaultInjection : public ::testing::Test {
 protected:
  void TearDown() override {
    for (Child& child : children_) {
      if (child.pid > 0) {
        kill(child.pid, SIGKILL);
        waitpid(child.pid, nullptr, 0);
      }
      if (child.output >= 0) close(child.output);
    }
  }

  void Spawn(const RankBody& body) {
    const std::string spec = "tcp:127.0.0.1:" + std::to_string(FreePort());
    children_.resize(kRanks);
    for (int32_t rank = 0; rank < kRanks; ++rank) {
      int pipe_ends[2];
      ASSERT_EQ(pipe(pipe_ends), 0);
      const pid_t pid = fork();
      ASSERT_GE(pid, 0);
      if (pid == 0) {
        close(pipe_ends[0]);
        RunChild(rank, spec, body, pipe_ends[1]);
      }
      close(pipe_ends[1]);
      children_[static_cast<size_t>(rank)].pid = pid;
      children_[static_cast<size_t>(rank)].output = pipe_ends[0];
    }
  }

  // Reads the children's pipes until `done` holds or `limit` passes; false on the limit.
  bool ReadUntil(const std::function<bool()>& done, std::chrono::seconds limit) {
    const auto deadline = Clock::now() + limit;
    while (!done()) {
      if (Clock::now() >= deadline) return false;
      std::vector<pollfd> entries;
      std::vector<Child*> owners;
      for (Child& child : children_) {
        if (child.closed) continue;
        entries.push_back(pollfd{child.output, POLLIN, 0});
        owners.push_back(&child);
      }
      if (entries.empty()) return done();
      poll(entries.data(), entries.size(), 50);
      for (size_t i = 0; i < entries.size(); ++i) {
        if (entries[i].revents == 0) continue;
        char buffer[512];
        const ssize_t got = read(entries[i].fd, buffer, sizeof(buffer));
        if (got > 0) {
          owners[i]->text.append(buffer, static_cast<size_t>(got));
        } else {
          owners[i]->closed = true;
          owners[i]->ended_after = Clock::now() - started_;
        }
      }
    }
    return true;
  }

  bool AllReady() const {
    for (const Child& child : children_) {
      if (child.text.rfind("ready\n", 0) != 0) return false;
    }
    return true;
  }

  bool AllEnded() const {
    for (const Child& child : children_) {
      if (!child.closed) return false;
    }
    return true;
  }

  // The message a rank ended with (after "ready\n" and the status code).
  std::string EndMessage(int32_t rank) const {
    const std::string& text = children_[static_cast<size_t>(rank)].text;
    const size_t space = text.find(' ', 6);
    return space == std::string::npos ? text : text.substr(space + 1);
  }

  // Every rank but `failed` ended promptly, with "rank <failed> failed: " + `message`.
  void ExpectOthersEndedWith(int32_t failed, const std::string& message) {
    for (int32_t rank = 0; rank < kRanks; ++rank) {
      if (rank == failed) continue;
      const Child& child = children_[static_cast<size_t>(rank)];
      EXPECT_TRUE(child.closed) << "rank " << rank << " still runs";
      EXPECT_LT(child.ended_after, kPromptly) << "rank " << rank;
      EXPECT_EQ(child.text.substr(0, 8),
                "ready\n" + std::to_string(static_cast<int>(StatusCode::kCancelled)) + " ")
          << "rank " << rank << ": " << child.text;
      EXPECT_THAT(EndMessage(rank),
                  HasSubstr("rank " + std::to_string(failed) + " failed: " + message))
          << "rank " << rank;
    }
  }

  std::vector<Child> children_;
  Clock::time_point started_;
};

// The wait of a collective that never completes: only the watchdog (or the deadline) ends it.
Status WaitForever(int32_t rank, Rendezvous& rendezvous) {
  return WaitWatched(
      "rank " + std::to_string(rank) + ": AllReduce over group {0, 1, 2, 3}",
      [] { return Result<bool>(false); }, rendezvous, kWaitTimeout);
}

TEST_F(FaultInjection, ARankKilledMidRunEndsEveryOtherRankWithItsFailure) {
  Spawn([](int32_t rank, Rendezvous& rendezvous) { return WaitForever(rank, rendezvous); });
  ASSERT_TRUE(ReadUntil([this] { return AllReady(); }, std::chrono::seconds(10)));
  started_ = Clock::now();
  kill(children_[2].pid, SIGKILL);
  ASSERT_TRUE(ReadUntil([this] { return AllEnded(); }, std::chrono::seconds(25)));
  ExpectOthersEndedWith(2, "its process ended or its connection to the rendezvous");
}

TEST_F(FaultInjection, RankZeroKilledMidRunEndsEveryOtherRank) {
  Spawn([](int32_t rank, Rendezvous& rendezvous) { return WaitForever(rank, rendezvous); });
  ASSERT_TRUE(ReadUntil([this] { return AllReady(); }, std::chrono::seconds(10)));
  started_ = Clock::now();
  kill(children_[0].pid, SIGKILL);
  ASSERT_TRUE(ReadUntil([this] { return AllEnded(); }, std::chrono::seconds(25)));
  ExpectOthersEndedWith(0, "its process ended or its connection to the rendezvous");
}

TEST_F(FaultInjection, ATransportErrorOnOneRankEndsEveryOtherWithItsMessage) {
  // Rank 1's operation fails after a while (NCCL's async error, say): as the NCCL communicator
  // does, it reports the error through the rendezvous and returns it.
  started_ = Clock::now();
  Spawn([](int32_t rank, Rendezvous& rendezvous) {
    const auto fails_at = Clock::now() + std::chrono::milliseconds(300);
    auto poll = [&]() -> Result<bool> {
      if (rank == 1 && Clock::now() >= fails_at) {
        return InternalError("ncclAllReduce: remote process exited or there was a network error");
      }
      return false;
    };
    Status waited =
        WaitWatched("rank " + std::to_string(rank) + ": AllReduce", poll, rendezvous, kWaitTimeout);
    if (!waited.ok() && waited.code() != StatusCode::kCancelled) {
      rendezvous.ReportFailure(waited);
    }
    return waited;
  });
  ASSERT_TRUE(ReadUntil([this] { return AllEnded(); }, std::chrono::seconds(25)));
  EXPECT_THAT(EndMessage(1), HasSubstr("remote process exited"));
  ExpectOthersEndedWith(1, "ncclAllReduce: remote process exited or there was a network error");
}

TEST_F(FaultInjection, WithoutAFailureTheWaitEndsAtItsDeadlineNamingTheOperation) {
  // The only path that takes the deadline: kept short. The first rank to time out reports it,
  // as the NCCL communicator does, so each rank ends with its own timeout or that one's.
  started_ = Clock::now();
  Spawn([](int32_t rank, Rendezvous& rendezvous) {
    Status waited = WaitWatched(
        "rank " + std::to_string(rank) + ": Recv from rank 3 tag 9",
        [] { return Result<bool>(false); }, rendezvous, std::chrono::milliseconds(300));
    if (waited.code() == StatusCode::kTimeout) rendezvous.ReportFailure(waited);
    return waited;
  });
  ASSERT_TRUE(ReadUntil([this] { return AllEnded(); }, std::chrono::seconds(15)));
  for (int32_t rank = 0; rank < kRanks; ++rank) {
    const std::string& text = children_[static_cast<size_t>(rank)].text;
    EXPECT_THAT(text, HasSubstr(": Recv from rank 3 tag 9: not done after 300 ms")) << rank;
    const bool own_timeout =
        text.find(std::to_string(static_cast<int>(StatusCode::kTimeout)) + " rank " +
                  std::to_string(rank) + ": Recv") != std::string::npos;
    const bool other_timeout = text.find(std::to_string(static_cast<int>(StatusCode::kCancelled)) +
                                         " rank ") != std::string::npos;
    EXPECT_TRUE(own_timeout || other_timeout) << text;
  }
}

}  // namespace
}  // namespace alpa
