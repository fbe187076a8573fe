// The pipeline simulator's event loop (pipeline_simulator.h has the model).
#include "exec/sim/pipeline_simulator.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <queue>
#include <string>
#include <utility>
#include <vector>

namespace alpa {

const char* SimEventKindName(SimEventKind kind) {
  switch (kind) {
    case SimEventKind::kForward:
      return "forward";
    case SimEventKind::kBackward:
      return "backward";
    case SimEventKind::kSend:
      return "send";
    case SimEventKind::kRecv:
      return "recv";
    case SimEventKind::kSync:
      return "sync";
    case SimEventKind::kUpdate:
      return "update";
    case SimEventKind::kIdle:
      return "idle";
    case SimEventKind::kWeightGradient:
      return "weight-gradient";
  }
  return "unknown";
}

const char* ScheduleDisplayName(PipelineScheduleKind kind) {
  switch (kind) {
    case PipelineScheduleKind::kGPipe:
      return "GPipe";
    case PipelineScheduleKind::kOneFOneB:
      return "1F1B";
    case PipelineScheduleKind::kZeroBubbleH1:
      return "ZB-H1";
    case PipelineScheduleKind::kInterleavedOneFOneB:
      return "interleaved 1F1B";
  }
  return PipelineScheduleName(kind);
}

namespace {

struct Move {
  int64_t src = 0, dst = 0, bytes = 0;
};

// The moves of a transfer: its slices, or its bytes spread over min(#src, #dst) device pairs.
std::vector<Move> TransferMoves(const PipelineSimInput& in, const PipelineSimTransfer& tr) {
  std::vector<Move> moves;
  if (!tr.slices.empty()) {
    for (const SimSliceMove& s : tr.slices) moves.push_back({s.src_device, s.dst_device, s.bytes});
    return moves;
  }
  const std::vector<int64_t>& from = in.stages[static_cast<size_t>(tr.from_stage)].devices;
  const std::vector<int64_t>& to = in.stages[static_cast<size_t>(tr.to_stage)].devices;
  const size_t pairs = std::min(from.size(), to.size());
  const int64_t n = static_cast<int64_t>(pairs);
  for (size_t k = 0; k < pairs; ++k) {
    const int64_t extra = static_cast<int64_t>(k) < tr.bytes % n ? 1 : 0;
    moves.push_back({from[k], to[k], tr.bytes / n + extra});
  }
  return moves;
}

// The direction of the transfers a task receives and sends (0 forward, 1 backward); -1 for a
// weight gradient, which does neither.
int32_t DirectionOf(PipelineTaskKind kind) {
  switch (kind) {
    case PipelineTaskKind::kForward:
      return 0;
    case PipelineTaskKind::kBackward:
      return 1;
    case PipelineTaskKind::kWeightGradient:
      break;
  }
  return -1;
}

SimEventKind EventKindOf(PipelineTaskKind kind) {
  switch (kind) {
    case PipelineTaskKind::kForward:
      return SimEventKind::kForward;
    case PipelineTaskKind::kBackward:
      return SimEventKind::kBackward;
    case PipelineTaskKind::kWeightGradient:
      break;
  }
  return SimEventKind::kWeightGradient;
}

// How long `kind` runs on `spec`: a split backward leaves the weight gradient to its own task.
double TaskSeconds(const PipelineSimStage& spec, PipelineTaskKind kind, bool split_backward) {
  switch (kind) {
    case PipelineTaskKind::kForward:
      return spec.forward_seconds;
    case PipelineTaskKind::kBackward:
      return split_backward ? spec.backward_seconds - spec.weight_gradient_seconds
                            : spec.backward_seconds;
    case PipelineTaskKind::kWeightGradient:
      break;
  }
  return spec.weight_gradient_seconds;
}

// A pending happening: a device group's task ends, or a move arrives at its receiving stage.
struct QueuedEvent {
  double time = 0;
  int64_t seq = 0;  // creation order: breaks ties between equal times deterministically
  bool is_arrival = false;
  int32_t group = 0;   // the group whose task ends / the receiving stage's group
  int64_t input = 0;   // arrival: index of the input slot (stage, direction, microbatch)
  double sent_at = 0;  // arrival: when the sender finished its task
  bool operator>(const QueuedEvent& o) const {
    return time != o.time ? time > o.time : seq > o.seq;
  }
};

// A device group: one stage, or under interleaved 1F1B its virtual stages, running one task at a
// time in GroupSchedule's order.
struct GroupState {
  std::vector<GroupTask> tasks;
  size_t next = 0;        // index of the task running or to run next
  bool running = false;   // a task is running
  double free_since = 0;  // end of the previous task (0 before the first)
  double task_start = 0;  // of the running task
  bool finished = false;
  // Microbatches in flight over the group's stages, and their activations per device.
  int64_t in_flight = 0, activation_bytes = 0;
  int64_t peak_activation_bytes = 0;
  SimStageStats stats;  // the group's; each of its stages reports them
};

// Inputs of one (stage, direction, microbatch): moves still to arrive, and the latest time one
// of them was sent and arrived.
struct InputSlot {
  int64_t pending = 0;
  double last_sent = 0, last_arrival = 0;
};

class Simulator {
 public:
  explicit Simulator(const PipelineSimInput& in)
      : in_(in),
        split_backward_(SplitsBackward(in.schedule)),
        num_stages_(static_cast<int32_t>(in.stages.size())),
        num_groups_(PipelineGroups(num_stages_, in.virtual_stages)) {}

  Result<PipelineSimResult> Run();

 private:
  int64_t Slot(int32_t stage, int32_t direction, int64_t microbatch) const {
    return (int64_t{stage} * 2 + direction) * in_.microbatches + microbatch;
  }
  int32_t GroupOf(int32_t stage) const { return stage % num_groups_; }
  const PipelineSimStage& Spec(int32_t stage) const {
    return in_.stages[static_cast<size_t>(stage)];
  }
  void Push(QueuedEvent e) {
    e.seq = seq_++;
    queue_.push(e);
  }
  void Record(int32_t stage, SimEventKind kind, int64_t microbatch, double start, double end) {
    if (!in_.record_timeline) return;
    SimEvent e;
    e.stage = stage;
    e.devices = Spec(stage).devices;
    e.kind = kind;
    e.microbatch = microbatch;
    e.start = start;
    e.end = end;
    result_.timeline.push_back(std::move(e));
  }
  void Setup();
  double Reserve(const Move& mv, double ready, double* start);
  void TryStart(int32_t g, double now);
  void Send(int32_t s, int32_t dir, int64_t microbatch, double now);
  void TaskEnd(int32_t g, double now);
  void FinishGroup(int32_t g, double now);
  void Arrival(const QueuedEvent& e);
  Status CheckFinished() const;
  void Summarize();

  const PipelineSimInput& in_;
  // The schedule runs weight gradients as tasks of their own; a microbatch then stays in
  // flight until its weight gradient ends.
  const bool split_backward_;
  const int32_t num_stages_;
  const int32_t num_groups_;  // stage s runs on group s % num_groups_
  PipelineSimResult result_;
  std::vector<GroupState> groups_;
  std::vector<InputSlot> slots_;
  std::vector<std::vector<Move>> moves_;  // per transfer
  // outgoing_[stage][direction]: transfers the stage sends after its tasks of that direction.
  std::vector<std::array<std::vector<int32_t>, 2>> outgoing_;
  // The NIC server of `device`: its host's NIC group (one per host without device_nic_group).
  int64_t NicServer(int64_t device) const {
    const int64_t host = device / in_.devices_per_host;
    const std::vector<int32_t>& groups =
        in_.host_links.empty() ? in_.device_nic_group
                               : in_.host_links[static_cast<size_t>(host)].device_nic_group;
    const int64_t group =
        groups.empty() ? 0 : groups[static_cast<size_t>(device % in_.devices_per_host)];
    return host * in_.devices_per_host + group;
  }
  // The link of a move between `src` and `dst` (HostLinks: per host where they differ).
  SimLink MoveLink(int64_t src, int64_t dst) const {
    const int64_t n = in_.devices_per_host;
    const int64_t src_host = src / n, dst_host = dst / n;
    // Inside a host: the pair's bandwidth where the host has a table of them.
    auto intra = [&](SimLink link, const std::vector<double>& pairs) {
      if (!pairs.empty()) link.bandwidth = pairs[static_cast<size_t>((src % n) * n + dst % n)];
      return link;
    };
    if (in_.host_links.empty()) {
      return src_host == dst_host ? intra(in_.intra_host, in_.intra_host_pairs) : in_.inter_host;
    }
    const SimHostLinks& a = in_.host_links[static_cast<size_t>(src_host)];
    if (src_host == dst_host) return intra(a.intra_host, a.intra_host_pairs);
    const SimHostLinks& b = in_.host_links[static_cast<size_t>(dst_host)];
    return {std::min(a.inter_host.bandwidth, b.inter_host.bandwidth),
            std::max(a.inter_host.latency, b.inter_host.latency)};
  }
  // FIFO resources: busy-until times of device links (egress, ingress) and NIC groups.
  std::map<int64_t, int32_t> device_index_, nic_index_;
  std::vector<double> device_out_, device_in_, nic_out_, nic_in_;
  std::priority_queue<QueuedEvent, std::vector<QueuedEvent>, std::greater<QueuedEvent>> queue_;
  int64_t seq_ = 0;
};

void Simulator::Setup() {
  groups_.resize(static_cast<size_t>(num_groups_));
  result_.stages.resize(static_cast<size_t>(num_stages_));
  outgoing_.resize(static_cast<size_t>(num_stages_));
  slots_.assign(static_cast<size_t>(Slot(num_stages_, 0, 0)), InputSlot{});
  for (int32_t g = 0; g < num_groups_; ++g) {
    groups_[static_cast<size_t>(g)].tasks =
        GroupSchedule(in_.schedule, num_stages_, in_.virtual_stages, g, in_.microbatches);
  }
  for (const PipelineSimStage& stage : in_.stages) {
    for (int64_t d : stage.devices) {
      device_index_.emplace(d, static_cast<int32_t>(device_index_.size()));
      nic_index_.emplace(NicServer(d), static_cast<int32_t>(nic_index_.size()));
    }
  }
  device_out_.assign(device_index_.size(), 0.0);
  device_in_.assign(device_index_.size(), 0.0);
  nic_out_.assign(nic_index_.size(), 0.0);
  nic_in_.assign(nic_index_.size(), 0.0);
  for (size_t t = 0; t < in_.transfers.size(); ++t) {
    const PipelineSimTransfer& tr = in_.transfers[t];
    moves_.push_back(TransferMoves(in_, tr));
    const int32_t dir = tr.direction == SimTransferDirection::kForward ? 0 : 1;
    outgoing_[static_cast<size_t>(tr.from_stage)][static_cast<size_t>(dir)].push_back(
        static_cast<int32_t>(t));
    for (int64_t m = 0; m < in_.microbatches; ++m) {
      slots_[static_cast<size_t>(Slot(tr.to_stage, dir, m))].pending +=
          static_cast<int64_t>(moves_.back().size());
    }
  }
}

// Reserves the move's links from `ready` on (FIFO); returns its arrival time, *start when it
// begins to occupy them.
double Simulator::Reserve(const Move& mv, double ready, double* start) {
  const bool same_host = mv.src / in_.devices_per_host == mv.dst / in_.devices_per_host;
  const SimLink link = MoveLink(mv.src, mv.dst);
  if (mv.bytes == 0) {
    *start = ready;
    return ready + link.latency;
  }
  double* out = nullptr;
  double* in = nullptr;
  if (same_host) {
    out = &device_out_[static_cast<size_t>(device_index_.at(mv.src))];
    in = &device_in_[static_cast<size_t>(device_index_.at(mv.dst))];
  } else {
    out = &nic_out_[static_cast<size_t>(nic_index_.at(NicServer(mv.src)))];
    in = &nic_in_[static_cast<size_t>(nic_index_.at(NicServer(mv.dst)))];
  }
  double bandwidth = link.bandwidth;
  const std::vector<double>& per_device = in_.device_inter_host_bandwidth;
  if (!same_host && !per_device.empty()) {
    bandwidth = std::min(per_device[static_cast<size_t>(mv.src % in_.devices_per_host)],
                         per_device[static_cast<size_t>(mv.dst % in_.devices_per_host)]);
  }
  *start = std::max({ready, *out, *in});
  const double end = *start + static_cast<double>(mv.bytes) / bandwidth;
  *out = end;
  *in = end;
  return end + link.latency;
}

void Simulator::TryStart(int32_t g, double now) {
  GroupState& group = groups_[static_cast<size_t>(g)];
  if (group.running || group.next >= group.tasks.size()) return;
  const GroupTask task = group.tasks[group.next];
  const int32_t direction = DirectionOf(task.kind);
  // A weight gradient has no inputs: it is ready as soon as the group is free.
  const InputSlot no_inputs;
  const InputSlot& slot =
      direction < 0 ? no_inputs
                    : slots_[static_cast<size_t>(Slot(task.stage, direction, task.microbatch))];
  if (slot.pending > 0) return;  // an arrival will call again
  // The group waited [free_since, now): idle until the last input was sent, then blocked on
  // communication until it arrived. Waits are the group's: recorded under its first stage, g.
  const double wait = now - group.free_since;
  if (wait > 0) {
    const double idle = std::min(wait, std::max(0.0, slot.last_sent - group.free_since));
    group.stats.communication_wait_seconds += wait - idle;
    if (idle > 0) Record(g, SimEventKind::kIdle, -1, group.free_since, group.free_since + idle);
    if (wait > idle) {
      Record(g, SimEventKind::kRecv, task.microbatch, group.free_since + idle, now);
    }
  }
  const PipelineSimStage& spec = Spec(task.stage);
  if (task.kind == PipelineTaskKind::kForward) {
    ++group.in_flight;
    group.activation_bytes += spec.activation_bytes;
    group.stats.peak_in_flight = std::max(group.stats.peak_in_flight, group.in_flight);
    group.peak_activation_bytes = std::max(group.peak_activation_bytes, group.activation_bytes);
  }
  group.running = true;
  group.task_start = now;
  QueuedEvent e;
  e.time = now + TaskSeconds(spec, task.kind, split_backward_);
  e.group = g;
  Push(e);
}

// Sends are asynchronous: reserves the links of the transfers `s` sends after its tasks of
// direction `dir` now, and queues their arrivals.
void Simulator::Send(int32_t s, int32_t dir, int64_t microbatch, double now) {
  for (int32_t t : outgoing_[static_cast<size_t>(s)][static_cast<size_t>(dir)]) {
    const PipelineSimTransfer& tr = in_.transfers[static_cast<size_t>(t)];
    for (const Move& mv : moves_[static_cast<size_t>(t)]) {
      double start = 0;
      const double arrival = Reserve(mv, now, &start);
      QueuedEvent e;
      e.time = arrival + tr.gather_seconds;
      e.is_arrival = true;
      e.group = GroupOf(tr.to_stage);
      e.input = Slot(tr.to_stage, dir, microbatch);
      e.sent_at = now;
      Push(e);
      if (in_.record_timeline) {
        SimEvent ev;
        ev.stage = s;
        ev.devices = {mv.src, mv.dst};
        ev.kind = SimEventKind::kSend;
        ev.microbatch = microbatch;
        ev.start = start;
        ev.end = arrival;
        ev.peer_stage = tr.to_stage;
        ev.transfer = t;
        result_.timeline.push_back(std::move(ev));
      }
    }
  }
}

void Simulator::TaskEnd(int32_t g, double now) {
  GroupState& group = groups_[static_cast<size_t>(g)];
  const GroupTask task = group.tasks[group.next];
  const PipelineSimStage& spec = Spec(task.stage);
  const PipelineTaskKind releasing =
      split_backward_ ? PipelineTaskKind::kWeightGradient : PipelineTaskKind::kBackward;
  if (task.kind == releasing) {
    --group.in_flight;
    group.activation_bytes -= spec.activation_bytes;
  }
  group.stats.busy_seconds += TaskSeconds(spec, task.kind, split_backward_);
  Record(task.stage, EventKindOf(task.kind), task.microbatch, group.task_start, now);
  const int32_t dir = DirectionOf(task.kind);
  if (dir >= 0) Send(task.stage, dir, task.microbatch, now);  // a weight gradient sends nothing
  group.running = false;
  group.free_since = now;
  ++group.next;
  if (group.next < group.tasks.size()) {
    TryStart(g, now);
    return;
  }
  FinishGroup(g, now);
}

// After the group's last task, each of its stages' gradient synchronisation and update, stage
// after stage: nothing waits on them but the iteration's end.
void Simulator::FinishGroup(int32_t g, double now) {
  GroupState& group = groups_[static_cast<size_t>(g)];
  double t = now;
  for (int32_t s = g; s < num_stages_; s += num_groups_) {
    const PipelineSimStage& spec = Spec(s);
    const double sync_end = t + spec.gradient_sync_seconds;
    const double update_end = sync_end + spec.update_seconds;
    group.stats.busy_seconds += spec.gradient_sync_seconds + spec.update_seconds;
    Record(s, SimEventKind::kSync, -1, t, sync_end);
    Record(s, SimEventKind::kUpdate, -1, sync_end, update_end);
    t = update_end;
  }
  group.stats.finish_seconds = t;
  group.finished = true;
}

void Simulator::Arrival(const QueuedEvent& e) {
  InputSlot& slot = slots_[static_cast<size_t>(e.input)];
  --slot.pending;
  slot.last_sent = std::max(slot.last_sent, e.sent_at);
  slot.last_arrival = std::max(slot.last_arrival, e.time);
  if (slot.pending == 0) TryStart(e.group, e.time);
}

Status Simulator::CheckFinished() const {
  for (const GroupState& group : groups_) {
    if (group.finished) continue;
    const GroupTask& task = group.tasks[group.next];
    return InvalidArgument("the schedule cannot finish: stages[" + std::to_string(task.stage) +
                           "] waits forever for the " + "inputs of its " +
                           (task.kind == PipelineTaskKind::kForward ? "forward" : "backward") +
                           " of microbatch " + std::to_string(task.microbatch));
  }
  return Status::Ok();
}

// The iteration's length, the closed form, and per group its idle time and peak memory, which
// each of its stages reports.
void Simulator::Summarize() {
  // Per device group its stages' forward and backward together (one stage per group unless
  // interleaved).
  std::vector<double> group_latency(static_cast<size_t>(num_groups_), 0.0);
  for (size_t s = 0; s < in_.stages.size(); ++s) {
    const PipelineSimStage& spec = in_.stages[s];
    const double latency = spec.forward_seconds + spec.backward_seconds;
    group_latency[s % group_latency.size()] += latency;
    result_.closed_form_seconds += latency + spec.gradient_sync_seconds + spec.update_seconds;
  }
  const double max_latency = *std::max_element(group_latency.begin(), group_latency.end());
  result_.closed_form_seconds += static_cast<double>(in_.microbatches - 1) * max_latency;
  for (const GroupState& group : groups_) {
    result_.iteration_seconds = std::max(result_.iteration_seconds, group.stats.finish_seconds);
  }
  const double total = result_.iteration_seconds;
  for (int32_t g = 0; g < num_groups_; ++g) {
    GroupState& group = groups_[static_cast<size_t>(g)];
    SimStageStats& stats = group.stats;
    stats.idle_seconds =
        std::max(0.0, total - stats.busy_seconds - stats.communication_wait_seconds);
    stats.bubble_fraction = total > 0 ? stats.idle_seconds / total : 0.0;
    stats.peak_memory_bytes = group.peak_activation_bytes;
    for (int32_t s = g; s < num_stages_; s += num_groups_) {
      stats.peak_memory_bytes += Spec(s).persistent_bytes;
    }
    if (total > stats.finish_seconds) {
      Record(g, SimEventKind::kIdle, -1, stats.finish_seconds, total);
    }
  }
  for (int32_t s = 0; s < num_stages_; ++s) {
    result_.stages[static_cast<size_t>(s)] = groups_[static_cast<size_t>(GroupOf(s))].stats;
  }
}

Result<PipelineSimResult> Simulator::Run() {
  Setup();
  for (int32_t g = 0; g < num_groups_; ++g) TryStart(g, 0.0);
  while (!queue_.empty()) {
    const QueuedEvent e = queue_.top();
    queue_.pop();
    if (e.is_arrival) {
      Arrival(e);
    } else {
      TaskEnd(e.group, e.time);
    }
  }
  ALPA_RETURN_IF_ERROR(CheckFinished());
  Summarize();
  // A group records its events in the order they happen, so a stable sort by start and group
  // keeps zero-length tasks at one instant in their run order (by stage it would put a group's
  // final idle, under its first stage, before a zero-length update of a later stage).
  const int32_t groups = num_groups_;
  std::stable_sort(result_.timeline.begin(), result_.timeline.end(),
                   [groups](const SimEvent& a, const SimEvent& b) {
                     return a.start != b.start ? a.start < b.start
                                               : a.stage % groups < b.stage % groups;
                   });
  return std::move(result_);
}

}  // namespace

Result<PipelineSimResult> SimulatePipeline(const PipelineSimInput& input) {
  ALPA_RETURN_IF_ERROR(ValidatePipelineSimInput(input));
  return Simulator(input).Run();
}

}  // namespace alpa
