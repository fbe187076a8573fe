#include "exec/comm/thread_world_state.h"

#include <cstdio>

#include "exec/comm/collective_args.h"

namespace alpa {

namespace {

std::string SecondsText(std::chrono::milliseconds duration) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.3g", static_cast<double>(duration.count()) / 1000.0);
  return text;
}

}  // namespace

const char* CollectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "AllReduce";
    case CollectiveKind::kAllGather:
      return "AllGather";
    case CollectiveKind::kReduceScatter:
      return "ReduceScatter";
    case CollectiveKind::kAllToAll:
      return "AllToAll";
    case CollectiveKind::kBarrier:
      return "Barrier";
  }
  return "unknown";
}

ThreadWorldState::ThreadWorldState(int32_t ranks, std::chrono::milliseconds watchdog_timeout)
    : ranks_(ranks),
      watchdog_timeout_(watchdog_timeout),
      wake_(static_cast<size_t>(ranks)),
      finished_(static_cast<size_t>(ranks), false) {}

Status ThreadWorldState::CheckRunning() {
  std::lock_guard<std::mutex> lock(mutex_);
  return aborted_ ? AbortedStatus(failed_rank_, failure_) : Status::Ok();
}

std::string ThreadWorldState::DescribeRound(const CollectiveCall& call, int64_t sequence) const {
  std::string text = CollectiveKindName(call.kind);
  if (call.kind != CollectiveKind::kBarrier) {
    text += "(";
    if (call.kind == CollectiveKind::kAllReduce || call.kind == CollectiveKind::kReduceScatter) {
      text += std::string(ReduceOpName(call.op)) + ", ";
    }
    text += "count " + std::to_string(call.count) + ") over group " + DescribeGroup(*call.group);
  }
  return text + " (call #" + std::to_string(sequence) +
         (call.kind == CollectiveKind::kBarrier ? ")" : " over that group)");
}

void ThreadWorldState::WakeGroup(const DeviceGroup& group) {
  for (int32_t member : group) wake_[static_cast<size_t>(member)].notify_all();
}

Status ThreadWorldState::WaitFor(std::unique_lock<std::mutex>& lock, int32_t rank,
                                 const std::function<bool()>& ready,
                                 const std::function<int32_t()>& blocker,
                                 const std::function<std::string()>& describe) {
  const auto deadline = std::chrono::steady_clock::now() + watchdog_timeout_;
  std::condition_variable& wake = wake_[static_cast<size_t>(rank)];
  while (true) {
    if (ready()) return Status::Ok();
    if (aborted_) return AbortedStatus(failed_rank_, failure_);
    const int32_t finished_peer = blocker();
    if (finished_peer >= 0) {
      Status stuck = InvalidArgument("rank " + std::to_string(rank) + " waits in " + describe() +
                                     ", but rank " + std::to_string(finished_peer) +
                                     " has returned without making that call");
      AbortLocked(rank, stuck);
      return stuck;
    }
    if (wake.wait_until(lock, deadline) == std::cv_status::timeout && !ready() && !aborted_) {
      Status timeout(StatusCode::kTimeout,
                     "watchdog: rank " + std::to_string(rank) + " waited more than " +
                         SecondsText(watchdog_timeout_) + " s in " + describe());
      AbortLocked(rank, timeout);
      return timeout;
    }
  }
}

Status ThreadWorldState::JoinRound(int32_t rank, const CollectiveCall& call,
                                   std::shared_ptr<Round>* round_out) {
  const DeviceGroup& group = *call.group;
  const int32_t members = static_cast<int32_t>(group.size());
  std::unique_lock<std::mutex> lock(mutex_);
  if (aborted_) return AbortedStatus(failed_rank_, failure_);
  GroupRounds& rounds = groups_[GroupKey(call.kind == CollectiveKind::kBarrier, group)];
  if (rounds.calls_made.empty()) rounds.calls_made.assign(static_cast<size_t>(members), 0);
  const int64_t sequence = rounds.calls_made[static_cast<size_t>(call.position)]++;
  std::shared_ptr<Round>& slot = rounds.open[sequence];
  if (!slot) {
    slot = std::make_shared<Round>();
    slot->kind = call.kind;
    slot->op = call.op;
    slot->count = call.count;
    slot->sequence = sequence;
    slot->first_rank = rank;
    slot->inputs.assign(static_cast<size_t>(members), nullptr);
    slot->outputs.assign(static_cast<size_t>(members), nullptr);
    slot->joined.assign(static_cast<size_t>(members), false);
  } else if (slot->kind != call.kind || slot->count != call.count ||
             (call.kind == CollectiveKind::kAllReduce || call.kind == CollectiveKind::kReduceScatter
                  ? slot->op != call.op
                  : false)) {
    CollectiveCall first = call;
    first.kind = slot->kind;
    first.op = slot->op;
    first.count = slot->count;
    Status mismatch = InvalidArgument("rank " + std::to_string(rank) + " called " +
                                      DescribeRound(call, sequence) + ", but rank " +
                                      std::to_string(slot->first_rank) + " called " +
                                      DescribeRound(first, sequence));
    AbortLocked(rank, mismatch);
    return mismatch;
  }
  std::shared_ptr<Round> round = slot;
  round->inputs[static_cast<size_t>(call.position)] = call.in;
  round->outputs[static_cast<size_t>(call.position)] = call.out;
  round->joined[static_cast<size_t>(call.position)] = true;
  if (++round->arrived == members) {
    // Every member has its pointer to the round: nobody looks it up again.
    rounds.open.erase(sequence);
    if (call.kind == CollectiveKind::kAllReduce && call.count > 0) {
      round->result.reset(new double[static_cast<size_t>(call.count)]);
    }
    WakeGroup(group);
  }
  Status joined = WaitFor(
      lock, rank, [&] { return round->arrived == members; },
      [&] {
        for (int32_t i = 0; i < members; ++i) {
          if (!round->joined[static_cast<size_t>(i)] &&
              finished_[static_cast<size_t>(group[static_cast<size_t>(i)])]) {
            return group[static_cast<size_t>(i)];
          }
        }
        return -1;
      },
      [&] { return DescribeRound(call, sequence); });
  if (!joined.ok()) return joined;
  *round_out = std::move(round);
  return Status::Ok();
}

void ThreadWorldState::FinishWork(int32_t rank, const DeviceGroup& group, Round& round) {
  const int32_t members = static_cast<int32_t>(group.size());
  std::unique_lock<std::mutex> lock(mutex_);
  if (++round.finished_work == members) WakeGroup(group);
  // Every member's remaining work is a bounded local loop, so this wait needs no watchdog, and
  // it ignores aborts: leaving early would let the caller free a buffer another member reads.
  wake_[static_cast<size_t>(rank)].wait(lock, [&] { return round.finished_work == members; });
}

Status ThreadWorldState::Deliver(int32_t from, int32_t to, int64_t tag,
                                 std::vector<double> values) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (aborted_) return AbortedStatus(failed_rank_, failure_);
  mailboxes_[MailboxKey(from, to, tag)].push_back(std::move(values));
  wake_[static_cast<size_t>(to)].notify_all();
  return Status::Ok();
}

Status ThreadWorldState::Take(int32_t to, int32_t from, int64_t tag, int64_t count,
                              std::vector<double>* values) {
  const MailboxKey key(from, to, tag);
  std::unique_lock<std::mutex> lock(mutex_);
  if (aborted_) return AbortedStatus(failed_rank_, failure_);
  auto has_message = [&] {
    auto box = mailboxes_.find(key);
    return box != mailboxes_.end() && !box->second.empty();
  };
  Status arrived = WaitFor(
      lock, to, has_message, [&] { return finished_[static_cast<size_t>(from)] ? from : -1; },
      [&] {
        return "Recv(from " + std::to_string(from) + ", tag " + std::to_string(tag) + ", count " +
               std::to_string(count) + ")";
      });
  if (!arrived.ok()) return arrived;
  auto box = mailboxes_.find(key);
  *values = std::move(box->second.front());
  box->second.pop_front();
  if (box->second.empty()) mailboxes_.erase(box);
  return Status::Ok();
}

void ThreadWorldState::AbortLocked(int32_t rank, const Status& cause) {
  if (aborted_) return;
  aborted_ = true;
  failed_rank_ = rank;
  failure_ = cause;
  for (std::condition_variable& wake : wake_) wake.notify_all();
}

void ThreadWorldState::Abort(int32_t rank, const Status& cause) {
  std::lock_guard<std::mutex> lock(mutex_);
  AbortLocked(rank, cause);
}

Status ThreadWorldState::first_failure() {
  std::lock_guard<std::mutex> lock(mutex_);
  return aborted_ ? failure_ : Status::Ok();
}

void ThreadWorldState::SetFinished(int32_t rank, bool finished) {
  std::lock_guard<std::mutex> lock(mutex_);
  finished_[static_cast<size_t>(rank)] = finished;
  for (std::condition_variable& wake : wake_) wake.notify_all();
}

}  // namespace alpa
