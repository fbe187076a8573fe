#include "exec/comm/mpi_communicator.h"

// Only MPI's C interface: mpi.h otherwise pulls in the deprecated C++ bindings, which live in
// a library libalpa does not link.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "exec/comm/collective_args.h"
#include "exec/comm/reduction.h"

namespace alpa {

namespace {

// Whether CreateMpiCommunicator called MPI_Init_thread (and FinalizeMpi should finalize). MPI's
// own state is per process, so this is too.
bool g_initialised_by_alpa = false;

Status MpiCheck(int code, const char* mpi_call, const char* call) {
  if (code == MPI_SUCCESS) return Status::Ok();
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) length = 0;
  // mpi_call is the source text of the call: its function name is enough.
  const std::string expression(mpi_call);
  return InternalError(std::string(call) + ": " + expression.substr(0, expression.find('(')) +
                       " failed: " + std::string(text, static_cast<size_t>(std::max(length, 0))));
}

#define ALPA_MPI(call_name, expr) ALPA_RETURN_IF_ERROR(MpiCheck((expr), #expr, call_name))

// The share [offset, offset + length) of `count` values that member `position` folds: even
// shares, the first count % members members one value more. count fits an int (a segment).
void Shares(int count, int members, std::vector<int>* lengths, std::vector<int>* offsets) {
  lengths->assign(static_cast<size_t>(members), count / members);
  offsets->assign(static_cast<size_t>(members), 0);
  for (int i = 0; i < count % members; ++i) ++(*lengths)[static_cast<size_t>(i)];
  for (int i = 1; i < members; ++i) {
    (*offsets)[static_cast<size_t>(i)] =
        (*offsets)[static_cast<size_t>(i - 1)] + (*lengths)[static_cast<size_t>(i - 1)];
  }
}

// A buffered Send: the copies MPI reads from until the requests complete.
struct PendingSend {
  int64_t header[2] = {0, 0};  // count, tag
  std::vector<double> values;
  std::vector<MPI_Request> requests;
};

class MpiCommunicator : public Communicator {
 public:
  MpiCommunicator(MPI_Comm point_to_point, MPI_Comm group_parent, int32_t rank, int32_t size,
                  int64_t tag_upper_bound, int64_t segment_values)
      : point_to_point_(point_to_point),
        group_parent_(group_parent),
        rank_(rank),
        size_(size),
        tag_upper_bound_(tag_upper_bound),
        segment_(segment_values) {}

  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    for (PendingSend& send : pending_) {
      MPI_Waitall(static_cast<int>(send.requests.size()), send.requests.data(),
                  MPI_STATUSES_IGNORE);
    }
    for (auto& [group, comm] : group_comms_) MPI_Comm_free(&comm);
    MPI_Comm_free(&point_to_point_);
    MPI_Comm_free(&group_parent_);
  }

  int32_t rank() const override { return rank_; }
  int32_t size() const override { return size_; }

  Status AllReduce(const DeviceGroup& group, ReduceOp op, double* data, int64_t count) override {
    int32_t position = 0;
    ALPA_RETURN_IF_ERROR(CheckGroup("AllReduce", group, rank_, size_, &position));
    ALPA_RETURN_IF_ERROR(CheckBuffers("AllReduce", count, 1, data, data));
    if (group.size() == 1) return Status::Ok();
    MPI_Comm comm = MPI_COMM_NULL;
    ALPA_RETURN_IF_ERROR(GroupComm("AllReduce", group, &comm));
    const int members = static_cast<int>(group.size());
    std::vector<int> lengths, offsets, receive_offsets(static_cast<size_t>(members));
    std::vector<double> received, folded;
    std::vector<const double*> inputs(static_cast<size_t>(members));
    for (int64_t begin = 0; begin < count; begin += segment_) {
      const int length = static_cast<int>(std::min(segment_, count - begin));
      Shares(length, members, &lengths, &offsets);
      const int mine = lengths[static_cast<size_t>(position)];
      for (int i = 0; i < members; ++i) receive_offsets[static_cast<size_t>(i)] = i * mine;
      std::vector<int> receive_lengths(static_cast<size_t>(members), mine);
      received.resize(static_cast<size_t>(members) * static_cast<size_t>(mine));
      folded.resize(static_cast<size_t>(mine));
      ALPA_MPI("AllReduce", MPI_Alltoallv(data + begin, lengths.data(), offsets.data(), MPI_DOUBLE,
                                          received.data(), receive_lengths.data(),
                                          receive_offsets.data(), MPI_DOUBLE, comm));
      for (int i = 0; i < members; ++i) {
        inputs[static_cast<size_t>(i)] = received.data() + static_cast<size_t>(i) * mine;
      }
      ReduceInOrder(op, inputs.data(), members, mine, folded.data());
      ALPA_MPI("AllReduce", MPI_Allgatherv(folded.data(), mine, MPI_DOUBLE, data + begin,
                                           lengths.data(), offsets.data(), MPI_DOUBLE, comm));
    }
    return Status::Ok();
  }

  Status AllGather(const DeviceGroup& group, const double* in, int64_t count,
                   double* out) override {
    const int64_t members = static_cast<int64_t>(group.size());
    int32_t position = 0;
    ALPA_RETURN_IF_ERROR(CheckGroup("AllGather", group, rank_, size_, &position));
    ALPA_RETURN_IF_ERROR(CheckBuffers("AllGather", count, members, in, out));
    if (members == 1) return CopyValues(out, in, count);
    MPI_Comm comm = MPI_COMM_NULL;
    ALPA_RETURN_IF_ERROR(GroupComm("AllGather", group, &comm));
    if (count <= segment_) {
      const int length = static_cast<int>(count);
      ALPA_MPI("AllGather", MPI_Allgather(in, length, MPI_DOUBLE, out, length, MPI_DOUBLE, comm));
      return Status::Ok();
    }
    std::vector<double> gathered;
    for (int64_t begin = 0; begin < count; begin += segment_) {
      const int64_t length = std::min(segment_, count - begin);
      gathered.resize(static_cast<size_t>(members * length));
      ALPA_MPI("AllGather",
               MPI_Allgather(in + begin, static_cast<int>(length), MPI_DOUBLE, gathered.data(),
                             static_cast<int>(length), MPI_DOUBLE, comm));
      for (int64_t i = 0; i < members; ++i) {
        CopyValues(out + i * count + begin, gathered.data() + i * length, length);
      }
    }
    return Status::Ok();
  }

  Status ReduceScatter(const DeviceGroup& group, ReduceOp op, const double* in, int64_t count,
                       double* out) override {
    const int64_t members = static_cast<int64_t>(group.size());
    int32_t position = 0;
    ALPA_RETURN_IF_ERROR(CheckGroup("ReduceScatter", group, rank_, size_, &position));
    ALPA_RETURN_IF_ERROR(CheckBuffers("ReduceScatter", count, members, in, out));
    if (members == 1) return CopyValues(out, in, count);
    MPI_Comm comm = MPI_COMM_NULL;
    ALPA_RETURN_IF_ERROR(GroupComm("ReduceScatter", group, &comm));
    std::vector<double> packed, received;
    std::vector<const double*> inputs(static_cast<size_t>(members));
    for (int64_t begin = 0; begin < count; begin += segment_) {
      const int64_t length = std::min(segment_, count - begin);
      // Chunk j's slice [begin, begin + length) goes to member j.
      const double* send = in;
      if (length != count) {
        packed.resize(static_cast<size_t>(members * length));
        for (int64_t j = 0; j < members; ++j) {
          CopyValues(packed.data() + j * length, in + j * count + begin, length);
        }
        send = packed.data();
      }
      received.resize(static_cast<size_t>(members * length));
      ALPA_MPI("ReduceScatter",
               MPI_Alltoall(send, static_cast<int>(length), MPI_DOUBLE, received.data(),
                            static_cast<int>(length), MPI_DOUBLE, comm));
      for (int64_t i = 0; i < members; ++i) {
        inputs[static_cast<size_t>(i)] = received.data() + i * length;
      }
      ReduceInOrder(op, inputs.data(), members, length, out + begin);
    }
    return Status::Ok();
  }

  Status AllToAll(const DeviceGroup& group, const double* in, int64_t count, double* out) override {
    const int64_t members = static_cast<int64_t>(group.size());
    int32_t position = 0;
    ALPA_RETURN_IF_ERROR(CheckGroup("AllToAll", group, rank_, size_, &position));
    ALPA_RETURN_IF_ERROR(CheckBuffers("AllToAll", count, members, in, out));
    if (members == 1) return CopyValues(out, in, count);
    MPI_Comm comm = MPI_COMM_NULL;
    ALPA_RETURN_IF_ERROR(GroupComm("AllToAll", group, &comm));
    if (count <= segment_) {
      const int length = static_cast<int>(count);
      ALPA_MPI("AllToAll", MPI_Alltoall(in, length, MPI_DOUBLE, out, length, MPI_DOUBLE, comm));
      return Status::Ok();
    }
    std::vector<double> packed, received;
    for (int64_t begin = 0; begin < count; begin += segment_) {
      const int64_t length = std::min(segment_, count - begin);
      packed.resize(static_cast<size_t>(members * length));
      received.resize(static_cast<size_t>(members * length));
      for (int64_t j = 0; j < members; ++j) {
        CopyValues(packed.data() + j * length, in + j * count + begin, length);
      }
      ALPA_MPI("AllToAll",
               MPI_Alltoall(packed.data(), static_cast<int>(length), MPI_DOUBLE, received.data(),
                            static_cast<int>(length), MPI_DOUBLE, comm));
      for (int64_t i = 0; i < members; ++i) {
        CopyValues(out + i * count + begin, received.data() + i * length, length);
      }
    }
    return Status::Ok();
  }

  // A message is a header (count, tag) and then the values in segments, all with the MPI tag
  // `tag`: MPI keeps messages of one (source, tag, communicator) in order, so the receiver
  // reads the header first and knows how many segments follow.
  Status Send(int32_t to, int64_t tag, const double* data, int64_t count) override {
    ALPA_RETURN_IF_ERROR(CheckPeer("Send", "destination", to, size_, tag));
    ALPA_RETURN_IF_ERROR(CheckTag("Send", tag));
    ALPA_RETURN_IF_ERROR(CheckBuffers("Send", count, 1, data, data));
    ALPA_RETURN_IF_ERROR(ReapCompletedSends());
    pending_.emplace_back();
    PendingSend& send = pending_.back();
    send.header[0] = count;
    send.header[1] = tag;
    send.values.assign(data, data + count);
    send.requests.emplace_back();
    const int mpi_tag = static_cast<int>(tag);
    ALPA_MPI("Send", MPI_Isend(send.header, 2, MPI_INT64_T, to, mpi_tag, point_to_point_,
                               &send.requests.back()));
    for (int64_t begin = 0; begin < count; begin += segment_) {
      const int length = static_cast<int>(std::min(segment_, count - begin));
      send.requests.emplace_back();
      ALPA_MPI("Send", MPI_Isend(send.values.data() + begin, length, MPI_DOUBLE, to, mpi_tag,
                                 point_to_point_, &send.requests.back()));
    }
    return Status::Ok();
  }

  Status Recv(int32_t from, int64_t tag, double* data, int64_t count) override {
    ALPA_RETURN_IF_ERROR(CheckPeer("Recv", "source", from, size_, tag));
    ALPA_RETURN_IF_ERROR(CheckTag("Recv", tag));
    ALPA_RETURN_IF_ERROR(CheckBuffers("Recv", count, 1, data, data));
    const int mpi_tag = static_cast<int>(tag);
    int64_t header[2] = {0, 0};
    ALPA_MPI("Recv",
             MPI_Recv(header, 2, MPI_INT64_T, from, mpi_tag, point_to_point_, MPI_STATUS_IGNORE));
    const int64_t sent = header[0];
    // A message of another length is still taken whole, so the next one on the channel is read
    // from its header.
    std::vector<double> discarded;
    double* into = data;
    if (sent != count) {
      discarded.resize(static_cast<size_t>(std::min(sent, segment_)));
      into = nullptr;
    }
    for (int64_t begin = 0; begin < sent; begin += segment_) {
      const int length = static_cast<int>(std::min(segment_, sent - begin));
      double* target = into != nullptr ? into + begin : discarded.data();
      ALPA_MPI("Recv", MPI_Recv(target, length, MPI_DOUBLE, from, mpi_tag, point_to_point_,
                                MPI_STATUS_IGNORE));
    }
    if (sent != count) return RecvCountMismatch(rank_, from, tag, count, sent);
    return Status::Ok();
  }

  Status Barrier() override {
    ALPA_MPI("Barrier", MPI_Barrier(group_parent_));
    return Status::Ok();
  }

  void Abort(const Status& status) override {
    const std::string message = status.message().empty() ? "aborted" : status.message();
    std::fprintf(stderr, "rank %d failed: %s\n", rank_, message.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    // MPI_Abort does not return where MPI works; where it does, this process still ends.
    std::_Exit(1);
  }

 private:
  static Status CopyValues(double* to, const double* from, int64_t count) {
    if (count > 0 && to != from)
      std::memmove(to, from, static_cast<size_t>(count) * sizeof(double));
    return Status::Ok();
  }

  Status CheckTag(const char* call, int64_t tag) const {
    if (tag > tag_upper_bound_) {
      return InvalidArgument(std::string(call) + ": tag " + std::to_string(tag) +
                             " is above this MPI's largest tag (MPI_TAG_UB = " +
                             std::to_string(tag_upper_bound_) + ")");
    }
    return Status::Ok();
  }

  // The communicator of `group` (created on the members' first call over it: a collective over
  // the members only, like the call itself).
  Status GroupComm(const char* call, const DeviceGroup& group, MPI_Comm* comm) {
    auto cached = group_comms_.find(group);
    if (cached != group_comms_.end()) {
      *comm = cached->second;
      return Status::Ok();
    }
    MPI_Group parent_group = MPI_GROUP_NULL;
    MPI_Group members = MPI_GROUP_NULL;
    ALPA_MPI(call, MPI_Comm_group(group_parent_, &parent_group));
    Status made = MpiCheck(
        MPI_Group_incl(parent_group, static_cast<int>(group.size()), group.data(), &members),
        "MPI_Group_incl", call);
    MPI_Comm created = MPI_COMM_NULL;
    if (made.ok()) {
      made = MpiCheck(MPI_Comm_create_group(group_parent_, members, 0, &created),
                      "MPI_Comm_create_group", call);
    }
    if (made.ok()) {
      made = MpiCheck(MPI_Comm_set_errhandler(created, MPI_ERRORS_RETURN),
                      "MPI_Comm_set_errhandler", call);
    }
    MPI_Group_free(&parent_group);
    if (members != MPI_GROUP_NULL) MPI_Group_free(&members);
    ALPA_RETURN_IF_ERROR(made);
    group_comms_.emplace(group, created);
    *comm = created;
    return Status::Ok();
  }

  // Frees the copies of sends that have completed, oldest first.
  Status ReapCompletedSends() {
    while (!pending_.empty()) {
      PendingSend& oldest = pending_.front();
      int done = 0;
      ALPA_MPI("Send", MPI_Testall(static_cast<int>(oldest.requests.size()), oldest.requests.data(),
                                   &done, MPI_STATUSES_IGNORE));
      if (!done) break;
      pending_.pop_front();
    }
    return Status::Ok();
  }

  MPI_Comm point_to_point_;
  MPI_Comm group_parent_;
  int32_t rank_;
  int32_t size_;
  int64_t tag_upper_bound_;
  int64_t segment_;
  std::map<DeviceGroup, MPI_Comm> group_comms_;
  std::deque<PendingSend> pending_;
};

// A private duplicate of MPI_COMM_WORLD whose errors come back as codes.
Status DuplicateWorld(MPI_Comm* comm) {
  ALPA_MPI("CreateMpiCommunicator", MPI_Comm_dup(MPI_COMM_WORLD, comm));
  ALPA_MPI("CreateMpiCommunicator", MPI_Comm_set_errhandler(*comm, MPI_ERRORS_RETURN));
  return Status::Ok();
}

Status InitialiseMpi() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) {
    return Status(StatusCode::kUnsupported,
                  "CreateMpiCommunicator: MPI was already finalized in this process");
  }
  int initialised = 0;
  MPI_Initialized(&initialised);
  int provided = MPI_THREAD_SINGLE;
  if (!initialised) {
    ALPA_MPI("CreateMpiCommunicator",
             MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided));
    g_initialised_by_alpa = true;
  } else {
    MPI_Query_thread(&provided);
  }
  // The runtime may call from a thread other than the one that initialised MPI.
  if (provided < MPI_THREAD_SERIALIZED) {
    return Status(StatusCode::kUnsupported, "CreateMpiCommunicator: MPI provides thread level " +
                                                std::to_string(provided) +
                                                ", below MPI_THREAD_SERIALIZED");
  }
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<Communicator>> CreateMpiCommunicator() {
  return CreateMpiCommunicator(MpiCommunicatorOptions());
}

Result<std::unique_ptr<Communicator>> CreateMpiCommunicator(const MpiCommunicatorOptions& options) {
  if (options.segment_values < 1 || options.segment_values > INT_MAX / 2) {
    return InvalidArgument("CreateMpiCommunicator: segment_values " +
                           std::to_string(options.segment_values) + " is not in [1, " +
                           std::to_string(INT_MAX / 2) + "]");
  }
  ALPA_RETURN_IF_ERROR(InitialiseMpi());
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int* tag_upper_bound = nullptr;
  int has_bound = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_upper_bound, &has_bound);
  // The standard guarantees at least 32767.
  const int64_t bound = has_bound && tag_upper_bound != nullptr ? *tag_upper_bound : 32767;
  MPI_Comm point_to_point = MPI_COMM_NULL;
  MPI_Comm group_parent = MPI_COMM_NULL;
  ALPA_RETURN_IF_ERROR(DuplicateWorld(&point_to_point));
  Status second = DuplicateWorld(&group_parent);
  if (!second.ok()) {
    MPI_Comm_free(&point_to_point);
    return second;
  }
  return std::unique_ptr<Communicator>(std::make_unique<MpiCommunicator>(
      point_to_point, group_parent, rank, size, bound, options.segment_values));
}

Status FinalizeMpi() {
  if (!g_initialised_by_alpa) return Status::Ok();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return Status::Ok();
  g_initialised_by_alpa = false;
  return MpiCheck(MPI_Finalize(), "MPI_Finalize", "FinalizeMpi");
}

bool MpiAvailable() { return true; }

}  // namespace alpa
