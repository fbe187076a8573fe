#include "exec/comm/thread_communicator.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <numeric>
#include <thread>

#include "exec/comm/collective_args.h"
#include "exec/comm/reduction.h"
#include "exec/comm/thread_world_state.h"

namespace alpa {

namespace {

// The slice [begin, end) of `count` values that member `position` of `members` reduces: even
// shares, the first count % members members one value more.
std::pair<int64_t, int64_t> ShareOf(int64_t count, int32_t members, int32_t position) {
  const int64_t base = count / members;
  const int64_t extra = count % members;
  const int64_t begin = base * position + std::min<int64_t>(position, extra);
  return {begin, begin + base + (position < extra ? 1 : 0)};
}

void CopyValues(double* to, const double* from, int64_t count) {
  if (count > 0 && to != from) std::memcpy(to, from, static_cast<size_t>(count) * sizeof(double));
}

}  // namespace

class ThreadCommunicator : public Communicator {
 public:
  ThreadCommunicator(ThreadWorldState* state, int32_t rank) : state_(state), rank_(rank) {
    everyone_.resize(static_cast<size_t>(state->size()));
    std::iota(everyone_.begin(), everyone_.end(), 0);
  }

  int32_t rank() const override { return rank_; }
  int32_t size() const override { return state_->size(); }

  Status AllReduce(const DeviceGroup& group, ReduceOp op, double* data, int64_t count) override {
    CollectiveCall call;
    ALPA_RETURN_IF_ERROR(
        Prepare("AllReduce", CollectiveKind::kAllReduce, group, op, count, 1, data, data, &call));
    std::shared_ptr<Round> round;
    ALPA_RETURN_IF_ERROR(state_->JoinRound(rank_, call, &round));
    // Each member folds its share of the elements into the shared result, then everyone copies
    // the whole result: the work is spread and every element is folded once, in group order.
    const int32_t members = static_cast<int32_t>(group.size());
    const auto [begin, end] = ShareOf(count, members, call.position);
    std::vector<const double*> inputs(static_cast<size_t>(members));
    for (int32_t i = 0; i < members; ++i) inputs[static_cast<size_t>(i)] = round->inputs[i] + begin;
    if (end > begin)
      ReduceInOrder(op, inputs.data(), members, end - begin, round->result.get() + begin);
    state_->FinishWork(rank_, group, *round);
    CopyValues(data, round->result.get(), count);
    return Status::Ok();
  }

  Status AllGather(const DeviceGroup& group, const double* in, int64_t count,
                   double* out) override {
    CollectiveCall call;
    ALPA_RETURN_IF_ERROR(Prepare("AllGather", CollectiveKind::kAllGather, group, ReduceOp::kSum,
                                 count, static_cast<int64_t>(group.size()), in, out, &call));
    std::shared_ptr<Round> round;
    ALPA_RETURN_IF_ERROR(state_->JoinRound(rank_, call, &round));
    for (size_t i = 0; i < group.size(); ++i) {
      CopyValues(out + static_cast<int64_t>(i) * count, round->inputs[i], count);
    }
    state_->FinishWork(rank_, group, *round);
    return Status::Ok();
  }

  Status ReduceScatter(const DeviceGroup& group, ReduceOp op, const double* in, int64_t count,
                       double* out) override {
    CollectiveCall call;
    ALPA_RETURN_IF_ERROR(Prepare("ReduceScatter", CollectiveKind::kReduceScatter, group, op, count,
                                 static_cast<int64_t>(group.size()), in, out, &call));
    std::shared_ptr<Round> round;
    ALPA_RETURN_IF_ERROR(state_->JoinRound(rank_, call, &round));
    std::vector<const double*> inputs(group.size());
    for (size_t i = 0; i < group.size(); ++i) {
      inputs[i] = round->inputs[i] + static_cast<int64_t>(call.position) * count;
    }
    ReduceInOrder(op, inputs.data(), static_cast<int64_t>(group.size()), count, out);
    state_->FinishWork(rank_, group, *round);
    return Status::Ok();
  }

  Status AllToAll(const DeviceGroup& group, const double* in, int64_t count, double* out) override {
    CollectiveCall call;
    ALPA_RETURN_IF_ERROR(Prepare("AllToAll", CollectiveKind::kAllToAll, group, ReduceOp::kSum,
                                 count, static_cast<int64_t>(group.size()), in, out, &call));
    std::shared_ptr<Round> round;
    ALPA_RETURN_IF_ERROR(state_->JoinRound(rank_, call, &round));
    for (size_t i = 0; i < group.size(); ++i) {
      CopyValues(out + static_cast<int64_t>(i) * count,
                 round->inputs[i] + static_cast<int64_t>(call.position) * count, count);
    }
    state_->FinishWork(rank_, group, *round);
    return Status::Ok();
  }

  Status Send(int32_t to, int64_t tag, const double* data, int64_t count) override {
    ALPA_RETURN_IF_ERROR(CheckPeer("Send", "destination", to, size(), tag));
    ALPA_RETURN_IF_ERROR(CheckBuffers("Send", count, 1, data, data));
    ALPA_RETURN_IF_ERROR(state_->CheckRunning());
    std::vector<double> values(data, data + count);
    return state_->Deliver(rank_, to, tag, std::move(values));
  }

  Status Recv(int32_t from, int64_t tag, double* data, int64_t count) override {
    ALPA_RETURN_IF_ERROR(CheckPeer("Recv", "source", from, size(), tag));
    ALPA_RETURN_IF_ERROR(CheckBuffers("Recv", count, 1, data, data));
    std::vector<double> values;
    ALPA_RETURN_IF_ERROR(state_->Take(rank_, from, tag, count, &values));
    const int64_t received = static_cast<int64_t>(values.size());
    if (received != count) return RecvCountMismatch(rank_, from, tag, count, received);
    CopyValues(data, values.data(), count);
    return Status::Ok();
  }

  Status Barrier() override {
    CollectiveCall call;
    call.kind = CollectiveKind::kBarrier;
    call.group = &everyone_;
    call.position = rank_;
    std::shared_ptr<Round> round;
    return state_->JoinRound(rank_, call, &round);
  }

  void Abort(const Status& status) override { state_->Abort(rank_, status); }

 private:
  // Checks the arguments and fills the caller's side of the call.
  Status Prepare(const char* name, CollectiveKind kind, const DeviceGroup& group, ReduceOp op,
                 int64_t count, int64_t chunks, const double* in, double* out,
                 CollectiveCall* call) {
    int32_t position = 0;
    ALPA_RETURN_IF_ERROR(CheckGroup(name, group, rank_, size(), &position));
    ALPA_RETURN_IF_ERROR(CheckBuffers(name, count, chunks, in, out));
    call->kind = kind;
    call->op = op;
    call->count = count;
    call->group = &group;
    call->position = position;
    call->in = in;
    call->out = out;
    return Status::Ok();
  }

  ThreadWorldState* state_;
  int32_t rank_;
  DeviceGroup everyone_;
};

ThreadWorld::ThreadWorld(int32_t ranks, std::chrono::milliseconds watchdog_timeout)
    : state_(std::make_unique<ThreadWorldState>(std::max(ranks, 1), watchdog_timeout)) {
  for (int32_t rank = 0; rank < state_->size(); ++rank) {
    communicators_.push_back(std::make_unique<ThreadCommunicator>(state_.get(), rank));
  }
}

ThreadWorld::~ThreadWorld() = default;

int32_t ThreadWorld::size() const { return state_->size(); }

Communicator& ThreadWorld::communicator(int32_t rank) {
  return *communicators_.at(static_cast<size_t>(rank));
}

Status ThreadWorld::first_failure() const { return state_->first_failure(); }

void ThreadWorld::MarkFinished(int32_t rank) { state_->SetFinished(rank, true); }

void ThreadWorld::ClearFinished() {
  for (int32_t rank = 0; rank < size(); ++rank) state_->SetFinished(rank, false);
}

Status RunOnThreads(ThreadWorld& world, const std::function<Status(Communicator&)>& body) {
  world.ClearFinished();
  auto run_rank = [&world, &body](int32_t rank) {
    Communicator& communicator = world.communicator(rank);
    Status status;
    try {
      status = body(communicator);
    } catch (const std::exception& error) {
      status = InternalError(std::string("uncaught exception: ") + error.what());
    } catch (...) {
      status = InternalError("uncaught exception of an unknown type");
    }
    if (!status.ok()) communicator.Abort(status);
    world.MarkFinished(rank);
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(world.size()));
  for (int32_t rank = 0; rank < world.size(); ++rank) threads.emplace_back(run_rank, rank);
  for (std::thread& thread : threads) thread.join();
  return world.first_failure();
}

Status RunOnThreads(int32_t ranks, const std::function<Status(Communicator&)>& body) {
  if (ranks < 1) {
    return InvalidArgument("RunOnThreads: ranks " + std::to_string(ranks) + " is not positive");
  }
  ThreadWorld world(ranks);
  return RunOnThreads(world, body);
}

}  // namespace alpa
