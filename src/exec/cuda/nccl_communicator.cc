#include "exec/cuda/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#include <deque>
#include <map>
#include <numeric>
#include <string>
#include <utility>

#include "exec/comm/collective_args.h"
#include "exec/comm/reduction.h"
#include "exec/comm/watched_wait.h"
#include "exec/cuda/cuda_backend.h"
#include "exec/cuda/nccl_calls.h"
#include "exec/cuda/nccl_loader.h"

namespace alpa {

namespace {

using cuda::CudaStatus;
using cuda::DeviceBuffer;
using cuda::NcclStatus;

// A message on the point-to-point communicator: a header of two int64 (count, tag), then the
// values (ncclFloat64) when there are any.
constexpr size_t kHeaderBytes = 2 * sizeof(int64_t);

size_t BytesOf(int64_t values) { return static_cast<size_t>(values) * sizeof(double); }

ncclConfig_t NonBlockingConfig() {
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  // Every call returns at once, so each wait can poll the failure channel and a deadline.
  config.blocking = 0;
  return config;
}

ncclRedOp_t NcclOp(ReduceOp op) { return op == ReduceOp::kMax ? ncclMax : ncclSum; }

// A send staged in device memory: the header and the values, contiguous.
struct QueuedSend {
  int32_t to = 0;
  int64_t count = 0;
  DeviceBuffer message;
};

// Where a collective over a group runs: a communicator (comm rank i = group[i]), or this rank
// alone (a group of one that was not prepared).
struct Route {
  ncclComm_t comm = nullptr;
  bool local = false;
};

class NcclCommunicatorImpl : public NcclCommunicator {
 public:
  NcclCommunicatorImpl(const cuda::NcclApi& nccl, std::unique_ptr<Rendezvous> rendezvous,
                       const NcclCommunicatorOptions& options, int32_t gpu)
      : nccl_(nccl),
        rendezvous_(std::move(rendezvous)),
        options_(options),
        rank_(rendezvous_->rank()),
        size_(rendezvous_->size()),
        gpu_(gpu) {
    everyone_.resize(static_cast<size_t>(size_));
    std::iota(everyone_.begin(), everyone_.end(), 0);
  }

  ~NcclCommunicatorImpl() override {
    cudaSetDevice(gpu_);
    if (aborted_.ok()) Close();
    if (!aborted_.ok()) AbortComms();
    in_flight_.clear();
    outbox_.clear();
    for (cudaStream_t stream : {comm_stream_, p2p_stream_}) {
      if (stream != nullptr) cudaStreamDestroy(stream);
    }
  }

  // Streams, the world communicator (from rank 0's id) and the point-to-point one.
  Status Initialise(const ncclUniqueId& id) {
    const std::string what = Where() + ": initialising NCCL on GPU " + std::to_string(gpu_);
    for (cudaStream_t* stream : {&comm_stream_, &p2p_stream_}) {
      ALPA_RETURN_IF_ERROR(Failed(CudaStatus(
          cudaStreamCreateWithFlags(stream, cudaStreamNonBlocking), what + ": cudaStreamCreate")));
    }
    ALPA_RETURN_IF_ERROR(Failed(header_.Reserve(kHeaderBytes, what)));
    ncclConfig_t config = NonBlockingConfig();
    ALPA_RETURN_IF_ERROR(Issued(nccl_.CommInitRankConfig(&world_, size_, id, rank_, &config),
                                {world_}, what + ": ncclCommInitRankConfig"));
    ALPA_RETURN_IF_ERROR(WaitReady({world_}, what + ": ncclCommInitRankConfig"));
    ncclConfig_t split_config = NonBlockingConfig();
    ALPA_RETURN_IF_ERROR(Issued(nccl_.CommSplit(world_, 0, rank_, &p2p_, &split_config),
                                {world_, p2p_}, what + ": ncclCommSplit (point to point)"));
    return WaitReady({world_, p2p_}, what + ": ncclCommSplit (point to point)");
  }

  int32_t rank() const override { return rank_; }
  int32_t size() const override { return size_; }
  int32_t gpu() const override { return gpu_; }

  Status Prepare(const std::vector<DeviceGroup>& groups) override {
    for (size_t i = 0; i < groups.size(); ++i) {
      const std::string call = "Prepare: groups[" + std::to_string(i) + "]";
      int32_t position = 0;
      const DeviceGroup& group = groups[i];
      // CheckGroup also asks for the caller; a group this rank is not in is fine here.
      ALPA_RETURN_IF_ERROR(
          CheckGroup(call.c_str(), group, group.empty() ? rank_ : group[0], size_, &position));
    }
    ALPA_RETURN_IF_ERROR(Begin());
    for (const DeviceGroup& group : groups) {
      if (prepared_.count(group) > 0) continue;
      ALPA_RETURN_IF_ERROR(Split(group));
    }
    return Status::Ok();
  }

  Status AllReduce(const DeviceGroup& group, ReduceOp op, double* data, int64_t count) override {
    int32_t position = 0;
    ALPA_RETURN_IF_ERROR(CheckGroup("AllReduce", group, rank_, size_, &position));
    ALPA_RETURN_IF_ERROR(
        CheckBuffers("AllReduce", count, static_cast<int64_t>(group.size()), data, data));
    Route route;
    ALPA_RETURN_IF_ERROR(Begin());
    ALPA_RETURN_IF_ERROR(RouteOf("AllReduce", group, &route));
    if (route.local || count == 0) return Status::Ok();
    const std::string what = Describe("AllReduce", group);
    ALPA_RETURN_IF_ERROR(IssueQueuedSends(what));
    const int64_t members = static_cast<int64_t>(group.size());
    if (!options_.ordered_reductions) {
      ALPA_RETURN_IF_ERROR(StageIn(data, count, &send_staging_, what));
      ALPA_RETURN_IF_ERROR(Issued(
          nccl_.AllReduce(send_staging_.data(), send_staging_.data(), static_cast<size_t>(count),
                          ncclFloat64, NcclOp(op), route.comm, comm_stream_),
          {route.comm}, what + ": ncclAllReduce"));
      ALPA_RETURN_IF_ERROR(Wait(comm_stream_, {route.comm}, what));
      return StageOut(send_staging_, data, count, what);
    }
    // Every member's input, then the same fold in group order on every member.
    std::vector<double> gathered(static_cast<size_t>(count * members));
    ALPA_RETURN_IF_ERROR(GatherOnDevice(route.comm, data, count, members, what));
    ALPA_RETURN_IF_ERROR(StageOut(receive_staging_, gathered.data(), count * members, what));
    FoldInGroupOrder(op, gathered, members, count, data);
    return Status::Ok();
  }

  Status AllGather(const DeviceGroup& group, const double* in, int64_t count,
                   double* out) override {
    const int64_t members = static_cast<int64_t>(group.size());
    int32_t position = 0;
    ALPA_RETURN_IF_ERROR(CheckGroup("AllGather", group, rank_, size_, &position));
    ALPA_RETURN_IF_ERROR(CheckBuffers("AllGather", count, members, in, out));
    Route route;
    ALPA_RETURN_IF_ERROR(Begin());
    ALPA_RETURN_IF_ERROR(RouteOf("AllGather", group, &route));
    if (route.local) return CopyValues(out, in, count);
    if (count == 0) return Status::Ok();
    const std::string what = Describe("AllGather", group);
    ALPA_RETURN_IF_ERROR(IssueQueuedSends(what));
    ALPA_RETURN_IF_ERROR(GatherOnDevice(route.comm, in, count, members, what));
    return StageOut(receive_staging_, out, count * members, what);
  }

  Status ReduceScatter(const DeviceGroup& group, ReduceOp op, const double* in, int64_t count,
                       double* out) override {
    const int64_t members = static_cast<int64_t>(group.size());
    int32_t position = 0;
    ALPA_RETURN_IF_ERROR(CheckGroup("ReduceScatter", group, rank_, size_, &position));
    ALPA_RETURN_IF_ERROR(CheckBuffers("ReduceScatter", count, members, in, out));
    Route route;
    ALPA_RETURN_IF_ERROR(Begin());
    ALPA_RETURN_IF_ERROR(RouteOf("ReduceScatter", group, &route));
    if (route.local) return CopyValues(out, in, count);
    if (count == 0) return Status::Ok();
    const std::string what = Describe("ReduceScatter", group);
    ALPA_RETURN_IF_ERROR(IssueQueuedSends(what));
    if (!options_.ordered_reductions) {
      ALPA_RETURN_IF_ERROR(StageIn(in, count * members, &send_staging_, what));
      ALPA_RETURN_IF_ERROR(Failed(receive_staging_.Reserve(BytesOf(count), what)));
      ALPA_RETURN_IF_ERROR(Issued(nccl_.ReduceScatter(send_staging_.data(), receive_staging_.data(),
                                                      static_cast<size_t>(count), ncclFloat64,
                                                      NcclOp(op), route.comm, comm_stream_),
                                  {route.comm}, what + ": ncclReduceScatter"));
      ALPA_RETURN_IF_ERROR(Wait(comm_stream_, {route.comm}, what));
      return StageOut(receive_staging_, out, count, what);
    }
    // Chunk `position` of every member (an all-to-all), folded in group order.
    std::vector<double> chunks(static_cast<size_t>(count * members));
    ALPA_RETURN_IF_ERROR(ExchangeOnDevice(route.comm, in, count, members, what));
    ALPA_RETURN_IF_ERROR(StageOut(receive_staging_, chunks.data(), count * members, what));
    FoldInGroupOrder(op, chunks, members, count, out);
    return Status::Ok();
  }

  Status AllToAll(const DeviceGroup& group, const double* in, int64_t count, double* out) override {
    const int64_t members = static_cast<int64_t>(group.size());
    int32_t position = 0;
    ALPA_RETURN_IF_ERROR(CheckGroup("AllToAll", group, rank_, size_, &position));
    ALPA_RETURN_IF_ERROR(CheckBuffers("AllToAll", count, members, in, out));
    Route route;
    ALPA_RETURN_IF_ERROR(Begin());
    ALPA_RETURN_IF_ERROR(RouteOf("AllToAll", group, &route));
    if (route.local) return CopyValues(out, in, count);
    if (count == 0) return Status::Ok();
    const std::string what = Describe("AllToAll", group);
    ALPA_RETURN_IF_ERROR(IssueQueuedSends(what));
    ALPA_RETURN_IF_ERROR(ExchangeOnDevice(route.comm, in, count, members, what));
    return StageOut(receive_staging_, out, count * members, what);
  }

  Status Send(int32_t to, int64_t tag, const double* data, int64_t count) override {
    ALPA_RETURN_IF_ERROR(CheckPeer("Send", "destination", to, size_, tag));
    ALPA_RETURN_IF_ERROR(CheckBuffers("Send", count, 1, data, data));
    ALPA_RETURN_IF_ERROR(Begin());
    if (to == rank_) {
      mailbox_[{rank_, tag}].emplace_back(data, data + count);
      return Status::Ok();
    }
    const std::string what =
        Where() + ": Send to rank " + std::to_string(to) + " with tag " + std::to_string(tag);
    QueuedSend send;
    send.to = to;
    send.count = count;
    ALPA_RETURN_IF_ERROR(Failed(send.message.Reserve(kHeaderBytes + BytesOf(count), what)));
    const int64_t header[2] = {count, tag};
    ALPA_RETURN_IF_ERROR(Failed(CudaStatus(
        cudaMemcpy(send.message.data(), header, kHeaderBytes, cudaMemcpyHostToDevice), what)));
    if (count > 0) {
      ALPA_RETURN_IF_ERROR(
          Failed(CudaStatus(cudaMemcpy(static_cast<char*>(send.message.data()) + kHeaderBytes, data,
                                       BytesOf(count), cudaMemcpyHostToDevice),
                            what)));
    }
    outbox_.push_back(std::move(send));
    return Status::Ok();
  }

  Status Recv(int32_t from, int64_t tag, double* data, int64_t count) override {
    ALPA_RETURN_IF_ERROR(CheckPeer("Recv", "source", from, size_, tag));
    ALPA_RETURN_IF_ERROR(CheckBuffers("Recv", count, 1, data, data));
    ALPA_RETURN_IF_ERROR(Begin());
    Status taken;
    if (TakeFromMailbox(from, tag, data, count, &taken)) return taken;
    if (from == rank_) {
      return InvalidArgument("Recv: rank " + std::to_string(rank_) +
                             " waits for a message from itself with tag " + std::to_string(tag) +
                             ", but it sent none");
    }
    const std::string what =
        Where() + ": Recv from rank " + std::to_string(from) + " with tag " + std::to_string(tag);
    for (;;) {
      int64_t arrived_count = 0;
      int64_t arrived_tag = 0;
      ALPA_RETURN_IF_ERROR(ReceiveHeader(from, what, &arrived_count, &arrived_tag));
      std::vector<double> values(static_cast<size_t>(arrived_count));
      ALPA_RETURN_IF_ERROR(ReceiveValues(from, arrived_count, values.data(), what));
      mailbox_[{from, arrived_tag}].push_back(std::move(values));
      if (arrived_tag == tag) {
        TakeFromMailbox(from, tag, data, count, &taken);
        return taken;
      }
    }
  }

  Status Barrier() override {
    ALPA_RETURN_IF_ERROR(Begin());
    const std::string what = Where() + ": Barrier";
    ALPA_RETURN_IF_ERROR(IssueQueuedSends(what));
    ALPA_RETURN_IF_ERROR(Issued(nccl_.AllReduce(header_.data(), header_.data(), 1, ncclFloat64,
                                                ncclSum, world_, comm_stream_),
                                {world_}, what + ": ncclAllReduce"));
    return Wait(comm_stream_, {world_}, what);
  }

  void Abort(const Status& status) override {
    if (!aborted_.ok()) return;
    aborted_ = AbortedStatus(rank_, status);
    rendezvous_->ReportFailure(status);
    AbortComms();
  }

 private:
  std::string Where() const { return "rank " + std::to_string(rank_); }

  std::string Describe(const char* call, const DeviceGroup& group) const {
    return Where() + ": " + call + " over group " + DescribeGroup(group);
  }

  // Every call starts here: after an abort it only returns the abort's status.
  Status Begin() {
    if (!aborted_.ok()) return aborted_;
    return Failed(
        CudaStatus(cudaSetDevice(gpu_), Where() + ": cudaSetDevice(" + std::to_string(gpu_) + ")"));
  }

  // Turns an error of this rank's transport into the end of the run: another rank's failure
  // (already on the failure channel) is taken as the cause; otherwise this rank aborts with
  // `error` and tells the others. OK passes through.
  Status Failed(const Status& error) {
    if (error.ok()) return error;
    const Status peer = rendezvous_->PeerFailure();
    if (!peer.ok()) {
      if (aborted_.ok()) aborted_ = peer;
      AbortComms();
      return aborted_;
    }
    Abort(error);
    return aborted_;
  }

  void AbortComms() {
    for (auto& [group, comm] : prepared_) {
      if (comm != nullptr) nccl_.CommAbort(comm);
      comm = nullptr;
    }
    for (ncclComm_t* comm : {&p2p_, &world_}) {
      if (*comm != nullptr) nccl_.CommAbort(*comm);
      *comm = nullptr;
    }
  }

  // A normal end: the queued sends leave, then every communicator is finalized and destroyed.
  void Close() {
    const std::string what = Where() + ": closing the NCCL communicator";
    if (!IssueQueuedSends(what).ok()) return;
    if (!in_flight_.empty() && !Wait(p2p_stream_, {p2p_}, what).ok()) return;
    std::vector<ncclComm_t> comms = {world_, p2p_};
    for (auto& [group, comm] : prepared_) comms.push_back(comm);
    for (ncclComm_t comm : comms) {
      if (comm != nullptr && !Issued(nccl_.CommFinalize(comm), {comm}, what).ok()) return;
    }
    if (!WaitReady(comms, what + ": ncclCommFinalize").ok()) return;
    for (ncclComm_t comm : comms) {
      if (comm != nullptr) nccl_.CommDestroy(comm);
    }
    world_ = nullptr;
    p2p_ = nullptr;
    prepared_.clear();
  }

  // Checks an NCCL call's result; a non-blocking call still in progress is waited for.
  Status Issued(ncclResult_t result, const std::vector<ncclComm_t>& comms,
                const std::string& what) {
    ALPA_RETURN_IF_ERROR(
        Failed(NcclStatus(nccl_, result, comms.empty() ? nullptr : comms[0], what)));
    if (result == ncclInProgress) return WaitReady(comms, what);
    return Status::Ok();
  }

  Status WaitReady(const std::vector<ncclComm_t>& comms, const std::string& what) {
    return Failed(WaitWatched(
        what, [&] { return cuda::PollCommsReady(nccl_, comms, what); }, *rendezvous_,
        options_.wait_timeout));
  }

  Status Wait(cudaStream_t stream, const std::vector<ncclComm_t>& comms, const std::string& what) {
    const Status waited = Failed(WaitWatched(
        what, [&] { return cuda::PollStreamAndComms(nccl_, stream, comms, what); }, *rendezvous_,
        options_.wait_timeout));
    if (waited.ok() && stream == p2p_stream_) in_flight_.clear();
    return waited;
  }

  Status RouteOf(const char* call, const DeviceGroup& group, Route* route) const {
    auto found = prepared_.find(group);
    if (found != prepared_.end()) {
      route->comm = found->second;
      return Status::Ok();
    }
    if (group == everyone_) {
      route->comm = world_;
      return Status::Ok();
    }
    if (group.size() == 1) {
      route->local = true;
      return Status::Ok();
    }
    return InvalidArgument(std::string(call) + ": group " + DescribeGroup(group) +
                           " was not prepared: NcclCommunicator::Prepare must split it off, on "
                           "every rank, before its first collective");
  }

  // One ncclCommSplit of the world, taken by every rank: members get a communicator whose rank
  // order is the group's order; the others take part with NCCL_SPLIT_NOCOLOR.
  Status Split(const DeviceGroup& group) {
    const std::string what = Where() + ": Prepare: ncclCommSplit of group " + DescribeGroup(group);
    int32_t position = -1;
    for (size_t i = 0; i < group.size(); ++i) {
      if (group[i] == rank_) position = static_cast<int32_t>(i);
    }
    ncclComm_t split = nullptr;
    ncclConfig_t config = NonBlockingConfig();
    ALPA_RETURN_IF_ERROR(Issued(nccl_.CommSplit(world_, position >= 0 ? 0 : NCCL_SPLIT_NOCOLOR,
                                                position >= 0 ? position : 0, &split, &config),
                                {world_, split}, what));
    ALPA_RETURN_IF_ERROR(WaitReady({world_, split}, what));
    prepared_.emplace(group, split);
    return Status::Ok();
  }

  Status StageIn(const double* values, int64_t count, DeviceBuffer* buffer,
                 const std::string& what) {
    ALPA_RETURN_IF_ERROR(Failed(buffer->Reserve(BytesOf(count), what)));
    // A synchronous copy from pageable memory: comm_stream_ holds no unfinished work here (every
    // collective is waited for), so nothing can keep it from completing.
    return Failed(CudaStatus(
        cudaMemcpy(buffer->data(), values, BytesOf(count), cudaMemcpyHostToDevice), what));
  }

  // Called after the wait on the stream that wrote `buffer`, so the copy cannot block on NCCL.
  Status StageOut(const DeviceBuffer& buffer, double* values, int64_t count,
                  const std::string& what) {
    if (count == 0) return Status::Ok();
    return Failed(CudaStatus(
        cudaMemcpy(values, buffer.data(), BytesOf(count), cudaMemcpyDeviceToHost), what));
  }

  // receive_staging_ gets chunk i = member i's `in` (count values each).
  Status GatherOnDevice(ncclComm_t comm, const double* in, int64_t count, int64_t members,
                        const std::string& what) {
    ALPA_RETURN_IF_ERROR(StageIn(in, count, &send_staging_, what));
    ALPA_RETURN_IF_ERROR(Failed(receive_staging_.Reserve(BytesOf(count * members), what)));
    ALPA_RETURN_IF_ERROR(
        Issued(nccl_.AllGather(send_staging_.data(), receive_staging_.data(),
                               static_cast<size_t>(count), ncclFloat64, comm, comm_stream_),
               {comm}, what + ": ncclAllGather"));
    return Wait(comm_stream_, {comm}, what);
  }

  // The all-to-all: chunk j of `in` goes to member j; receive_staging_ chunk i comes from member
  // i. Grouped sends and receives (NCCL has no all-to-all call).
  Status ExchangeOnDevice(ncclComm_t comm, const double* in, int64_t count, int64_t members,
                          const std::string& what) {
    ALPA_RETURN_IF_ERROR(StageIn(in, count * members, &send_staging_, what));
    ALPA_RETURN_IF_ERROR(Failed(receive_staging_.Reserve(BytesOf(count * members), what)));
    ALPA_RETURN_IF_ERROR(Issued(nccl_.GroupStart(), {comm}, what + ": ncclGroupStart"));
    Status posted;
    for (int64_t peer = 0; peer < members && posted.ok(); ++peer) {
      posted =
          NcclStatus(nccl_,
                     nccl_.Send(send_staging_.values() + peer * count, static_cast<size_t>(count),
                                ncclFloat64, static_cast<int>(peer), comm, comm_stream_),
                     comm, what + ": ncclSend");
      if (!posted.ok()) break;
      posted = NcclStatus(
          nccl_,
          nccl_.Recv(receive_staging_.values() + peer * count, static_cast<size_t>(count),
                     ncclFloat64, static_cast<int>(peer), comm, comm_stream_),
          comm, what + ": ncclRecv");
    }
    // The group is closed whatever happened inside it.
    ALPA_RETURN_IF_ERROR(Issued(nccl_.GroupEnd(), {comm}, what + ": ncclGroupEnd"));
    ALPA_RETURN_IF_ERROR(Failed(posted));
    return Wait(comm_stream_, {comm}, what);
  }

  static void FoldInGroupOrder(ReduceOp op, const std::vector<double>& chunks, int64_t members,
                               int64_t count, double* out) {
    std::vector<const double*> inputs(static_cast<size_t>(members));
    for (int64_t i = 0; i < members; ++i) {
      inputs[static_cast<size_t>(i)] = chunks.data() + i * count;
    }
    ReduceInOrder(op, inputs.data(), members, count, out);
  }

  static Status CopyValues(double* to, const double* from, int64_t count) {
    if (count > 0 && to != from) std::memmove(to, from, BytesOf(count));
    return Status::Ok();
  }

  // Issues the queued sends, and a receive of a header from `header_from` (-1: none), in one
  // group on the point-to-point communicator and stream; the sends' buffers stay alive until
  // that stream is waited for.
  Status IssuePointToPoint(const std::string& what, int32_t header_from) {
    if (outbox_.empty() && header_from < 0) return Status::Ok();
    ALPA_RETURN_IF_ERROR(Issued(nccl_.GroupStart(), {p2p_}, what + ": ncclGroupStart"));
    Status posted;
    for (const QueuedSend& send : outbox_) {
      posted = NcclStatus(nccl_,
                          nccl_.Send(send.message.data(), 2, ncclInt64, send.to, p2p_, p2p_stream_),
                          p2p_, what + ": ncclSend");
      if (posted.ok() && send.count > 0) {
        posted = NcclStatus(
            nccl_,
            nccl_.Send(static_cast<char*>(send.message.data()) + kHeaderBytes,
                       static_cast<size_t>(send.count), ncclFloat64, send.to, p2p_, p2p_stream_),
            p2p_, what + ": ncclSend");
      }
      if (!posted.ok()) break;
    }
    if (posted.ok() && header_from >= 0) {
      posted = NcclStatus(nccl_,
                          nccl_.Recv(header_.data(), 2, ncclInt64, header_from, p2p_, p2p_stream_),
                          p2p_, what + ": ncclRecv");
    }
    ALPA_RETURN_IF_ERROR(Issued(nccl_.GroupEnd(), {p2p_}, what + ": ncclGroupEnd"));
    ALPA_RETURN_IF_ERROR(Failed(posted));
    for (QueuedSend& send : outbox_) in_flight_.push_back(std::move(send.message));
    outbox_.clear();
    return Status::Ok();
  }

  Status IssueQueuedSends(const std::string& what) { return IssuePointToPoint(what, -1); }

  Status ReceiveHeader(int32_t from, const std::string& what, int64_t* count, int64_t* tag) {
    ALPA_RETURN_IF_ERROR(IssuePointToPoint(what, from));
    ALPA_RETURN_IF_ERROR(Wait(p2p_stream_, {p2p_}, what));
    int64_t header[2] = {0, 0};
    ALPA_RETURN_IF_ERROR(Failed(CudaStatus(
        cudaMemcpy(header, header_.data(), kHeaderBytes, cudaMemcpyDeviceToHost), what)));
    if (header[0] < 0 || header[1] < 0) {
      return Failed(InternalError(what + ": a message header says count " +
                                  std::to_string(header[0]) + ", tag " +
                                  std::to_string(header[1])));
    }
    *count = header[0];
    *tag = header[1];
    return Status::Ok();
  }

  Status ReceiveValues(int32_t from, int64_t count, double* values, const std::string& what) {
    if (count == 0) return Status::Ok();
    ALPA_RETURN_IF_ERROR(Failed(receive_staging_.Reserve(BytesOf(count), what)));
    ALPA_RETURN_IF_ERROR(Issued(nccl_.Recv(receive_staging_.data(), static_cast<size_t>(count),
                                           ncclFloat64, from, p2p_, p2p_stream_),
                                {p2p_}, what + ": ncclRecv"));
    ALPA_RETURN_IF_ERROR(Wait(p2p_stream_, {p2p_}, what));
    return StageOut(receive_staging_, values, count, what);
  }

  // The oldest kept message of (from, tag), if any: true, with *result OK or the count
  // mismatch (the message is consumed either way, as on the other transports).
  bool TakeFromMailbox(int32_t from, int64_t tag, double* data, int64_t count, Status* result) {
    auto found = mailbox_.find({from, tag});
    if (found == mailbox_.end() || found->second.empty()) return false;
    std::vector<double> values = std::move(found->second.front());
    found->second.pop_front();
    if (found->second.empty()) mailbox_.erase(found);
    const int64_t arrived = static_cast<int64_t>(values.size());
    if (arrived != count) {
      *result = RecvCountMismatch(rank_, from, tag, count, arrived);
      return true;
    }
    CopyValues(data, values.data(), count);
    *result = Status::Ok();
    return true;
  }

  // The process's NCCL (LoadNccl): loaded for good, so a reference outlives every communicator.
  const cuda::NcclApi& nccl_;
  std::unique_ptr<Rendezvous> rendezvous_;
  NcclCommunicatorOptions options_;
  int32_t rank_;
  int32_t size_;
  int32_t gpu_;
  DeviceGroup everyone_;
  ncclComm_t world_ = nullptr;
  ncclComm_t p2p_ = nullptr;
  // Null for a group this rank is not in.
  std::map<DeviceGroup, ncclComm_t> prepared_;
  cudaStream_t comm_stream_ = nullptr;
  cudaStream_t p2p_stream_ = nullptr;
  DeviceBuffer send_staging_;
  DeviceBuffer receive_staging_;
  DeviceBuffer header_;  // a received header; the Barrier's one value
  std::deque<QueuedSend> outbox_;
  std::vector<DeviceBuffer> in_flight_;
  std::map<std::pair<int32_t, int64_t>, std::deque<std::vector<double>>> mailbox_;
  Status aborted_;
};

// Rank 0's ncclUniqueId, shared through the rendezvous.
Status ShareUniqueId(const cuda::NcclApi& nccl, Rendezvous& rendezvous, ncclUniqueId* id) {
  std::vector<uint8_t> blob;
  if (rendezvous.rank() == 0) {
    ALPA_RETURN_IF_ERROR(
        NcclStatus(nccl, nccl.GetUniqueId(id), nullptr, "rank 0: ncclGetUniqueId"));
    const uint8_t* bytes = reinterpret_cast<const uint8_t*>(id);
    blob.assign(bytes, bytes + sizeof(ncclUniqueId));
  }
  ALPA_RETURN_IF_ERROR(rendezvous.ShareBlob(&blob));
  if (blob.size() != sizeof(ncclUniqueId)) {
    return InvalidArgument("rendezvous " + rendezvous.description() + ": rank " +
                           std::to_string(rendezvous.rank()) + " received " +
                           std::to_string(blob.size()) + " bytes, an ncclUniqueId has " +
                           std::to_string(sizeof(ncclUniqueId)));
  }
  std::memcpy(id, blob.data(), sizeof(ncclUniqueId));
  return Status::Ok();
}

// The GPU of this rank, checked against the GPUs this process sees.
Result<int32_t> ChooseGpu(int32_t rank, const NcclCommunicatorOptions& options) {
  std::string why;
  const int32_t gpus = CudaDeviceCount(&why);
  if (gpus == 0) {
    return Status(StatusCode::kUnsupported, "rank " + std::to_string(rank) + ": " + why);
  }
  const int32_t gpu = options.gpu >= 0 ? options.gpu : rank % gpus;
  if (gpu >= gpus) {
    return InvalidArgument("rank " + std::to_string(rank) + ": GPU " + std::to_string(gpu) +
                           " does not exist (this process sees " + std::to_string(gpus) + ")");
  }
  return gpu;
}

// What a rank needs before its communicator: its GPU, the process's NCCL and rank 0's id.
struct RankStart {
  int32_t gpu = 0;
  const cuda::NcclApi* nccl = nullptr;
  ncclUniqueId id;
};

// The GPU first, so that a machine without one never loads NCCL; the first failure.
Result<RankStart> StartRank(Rendezvous& rendezvous, const NcclCommunicatorOptions& options) {
  RankStart start;
  Result<int32_t> gpu = ChooseGpu(rendezvous.rank(), options);
  ALPA_RETURN_IF_ERROR(gpu.status());
  start.gpu = gpu.value();
  Result<const cuda::NcclApi*> nccl = cuda::LoadNccl();
  if (!nccl.ok()) {
    return Status(nccl.status().code(),
                  "rank " + std::to_string(rendezvous.rank()) + ": " + nccl.status().message());
  }
  start.nccl = nccl.value();
  ALPA_RETURN_IF_ERROR(CudaStatus(cudaSetDevice(start.gpu), "cudaSetDevice"));
  ALPA_RETURN_IF_ERROR(ShareUniqueId(*start.nccl, rendezvous, &start.id));
  return start;
}

}  // namespace

Result<std::unique_ptr<NcclCommunicator>> CreateNcclCommunicator(
    std::unique_ptr<Rendezvous> rendezvous, const NcclCommunicatorOptions& options) {
  if (rendezvous == nullptr) return InvalidArgument("CreateNcclCommunicator: no rendezvous");
  if (options.wait_timeout.count() <= 0) {
    return InvalidArgument("CreateNcclCommunicator: wait_timeout " +
                           std::to_string(options.wait_timeout.count()) + " ms is not positive");
  }
  // A rank that cannot start tells the others, so they do not wait for it until the deadline.
  Result<RankStart> start = StartRank(*rendezvous, options);
  if (!start.ok()) {
    if (start.status().code() != StatusCode::kCancelled) {
      rendezvous->ReportFailure(start.status());
    }
    return start.status();
  }
  const RankStart& started = start.value();
  auto communicator = std::make_unique<NcclCommunicatorImpl>(*started.nccl, std::move(rendezvous),
                                                             options, started.gpu);
  ALPA_RETURN_IF_ERROR(communicator->Initialise(started.id));
  return std::unique_ptr<NcclCommunicator>(std::move(communicator));
}

}  // namespace alpa
