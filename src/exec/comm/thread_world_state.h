// The state the ranks of a ThreadWorld share: one rendezvous ("round") per (group, call number),
// the mailboxes of point-to-point messages, and the abort. Everything is guarded by one mutex;
// each rank sleeps on its own condition variable and is woken only by changes it waits for.
// Internal to exec/comm: ThreadCommunicator is its one user.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "exec/comm/communicator.h"

namespace alpa {

enum class CollectiveKind : int32_t { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kBarrier };

const char* CollectiveKindName(CollectiveKind kind);

// One member's side of a collective call.
struct CollectiveCall {
  CollectiveKind kind = CollectiveKind::kBarrier;
  ReduceOp op = ReduceOp::kSum;
  int64_t count = 0;
  const DeviceGroup* group = nullptr;
  int32_t position = 0;  // the caller's index in *group
  const double* in = nullptr;
  double* out = nullptr;
};

// One collective call matched across the members of its group. The members' buffers are read
// in place; a member leaves only when no other member reads its buffers any more.
struct Round {
  CollectiveKind kind = CollectiveKind::kBarrier;
  ReduceOp op = ReduceOp::kSum;
  int64_t count = 0;
  int64_t sequence = 0;    // the call number over the group, from 0
  int32_t first_rank = 0;  // the member whose call the others are checked against
  std::vector<const double*> inputs;
  std::vector<double*> outputs;
  std::vector<bool> joined;
  int32_t arrived = 0;
  // AllReduce: the members that wrote their slice of `result`; others: the members done
  // reading the other members' inputs.
  int32_t finished_work = 0;
  std::unique_ptr<double[]> result;  // AllReduce's sum, shared by the members
};

class ThreadWorldState {
 public:
  ThreadWorldState(int32_t ranks, std::chrono::milliseconds watchdog_timeout);

  int32_t size() const { return ranks_; }

  // The abort status when the world has been aborted, else OK.
  Status CheckRunning();

  // Joins the caller's next round over call.group and waits until every member has joined.
  // Fails (and aborts the world) when a member's call differs in kind, op or count.
  Status JoinRound(int32_t rank, const CollectiveCall& call, std::shared_ptr<Round>* round);
  // Counts the caller's work on the round as done and waits until every member's is. Not
  // interrupted by an abort: every member that joined finishes its work without waiting.
  void FinishWork(int32_t rank, const DeviceGroup& group, Round& round);

  // Buffers a message for `to`.
  Status Deliver(int32_t from, int32_t to, int64_t tag, std::vector<double> values);
  // Waits for the oldest message from `from` to `to` with `tag` and takes it.
  Status Take(int32_t to, int32_t from, int64_t tag, int64_t count, std::vector<double>* values);

  void Abort(int32_t rank, const Status& cause);
  Status first_failure();
  void SetFinished(int32_t rank, bool finished);

 private:
  // Channels keep Barrier's call numbers apart from collectives over the full group.
  using GroupKey = std::pair<bool, DeviceGroup>;  // (is barrier, group)
  struct GroupRounds {
    std::vector<int64_t> calls_made;  // per position: how many calls that member has started
    std::map<int64_t, std::shared_ptr<Round>> open;  // rounds some but not all members joined
  };
  using MailboxKey = std::tuple<int32_t, int32_t, int64_t>;  // (from, to, tag)

  // Waits with `lock` held until ready() holds. Returns the abort status when the world aborts
  // first, fails when blocker() names a finished rank the wait depends on, and aborts the world
  // with a watchdog status when the wait outlasts the timeout. describe() names the call.
  Status WaitFor(std::unique_lock<std::mutex>& lock, int32_t rank,
                 const std::function<bool()>& ready, const std::function<int32_t()>& blocker,
                 const std::function<std::string()>& describe);
  void AbortLocked(int32_t rank, const Status& cause);
  void WakeGroup(const DeviceGroup& group);
  std::string DescribeRound(const CollectiveCall& call, int64_t sequence) const;

  const int32_t ranks_;
  const std::chrono::milliseconds watchdog_timeout_;
  std::mutex mutex_;
  std::vector<std::condition_variable> wake_;  // one per rank
  std::map<GroupKey, GroupRounds> groups_;
  std::map<MailboxKey, std::deque<std::vector<double>>> mailboxes_;
  std::vector<bool> finished_;
  bool aborted_ = false;
  int32_t failed_rank_ = -1;
  Status failure_;
};

}  // namespace alpa
