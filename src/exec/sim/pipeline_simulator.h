// An event-by-event simulator of one pipeline-parallel training iteration: every device group
// runs its schedule (pipeline_schedule.h) task by task, stages exchange activations and
// gradients over a modelled network, and the iteration ends when every stage has run its
// gradient synchronisation and update. It checks the planner's closed form
//     T = sum_i (t_i + o_i) + (B - 1) * max_j t_j      (REFERENCE §4, docs/planner.md)
// independently, and adds what the closed form leaves out: transfers between stages, link
// contention, and stages that overlap their gradient synchronisation.
//
// The input is flat (no graph, no plan): a later step converts a PipelinePlan into it.
//
// Semantics
//   Device groups. The compute unit is a device group: a stage (GPipe, 1F1B, ZB-H1), or under
//     interleaved 1F1B (virtual_stages v >= 2) the v stages g, g + P, ..., g + (v - 1) P of
//     group g of P = S / v, which run on the same devices (stage s on those of stage s % P).
//     Everything below that says "stage" about compute, waiting and memory means the group.
//   Compute. A group runs its tasks (forward / backward of one microbatch on one of its
//     stages, each one block of that stage's forward_seconds / backward_seconds that includes
//     the stage's own intra-stage collectives) one at a time in the order GroupSchedule gives
//     (with a stage per group: StageSchedule's). A task starts as soon as the group has
//     finished its previous task and every input of the task has arrived.
//     Under a schedule that splits the backward (ZB-H1, SplitsBackward) a microbatch's backward
//     is two tasks: the input gradient (kBackward) of backward_seconds - weight_gradient_seconds
//     and the weight gradient (kWeightGradient) of weight_gradient_seconds, which has no inputs
//     and sends nothing. Under GPipe and (interleaved) 1F1B the backward is one task of
//     backward_seconds and weight_gradient_seconds is not used.
//   Inputs. A forward transfer (activation) of microbatch m is sent when the sender finishes
//     its forward of m and is an input of the receiver's forward of m; a backward transfer
//     (gradient) is sent when the sender finishes its backward of m (under ZB-H1 its input
//     gradient: the weight gradient is nobody's input) and is an input of the receiver's
//     backward of m. Transfers join stages, not groups: under interleaving stage s's
//     activation goes to stage s + 1 on the next group (from the last group to the first
//     group's next stage). Sends are asynchronous (the sender goes on computing); a receive
//     blocks the receiving group. (The executor moves a gradient term another stage reads per
//     microbatch, a tied weight's with one microbatch, in the weight-gradient task that computes
//     it; here it leaves with the input gradient, a little early.)
//   Moves. A transfer is a set of device-to-device moves: its `slices` when given, else its
//     bytes spread evenly over min(#src, #dst) pairs (sender device k -> receiver device k, in
//     the stages' device order; the first bytes % pairs moves carry one byte more).
//   Links and contention (FIFO reservation, deterministic). A move inside one host reserves the
//     source device's intra-host egress and the destination device's intra-host ingress; a
//     move between hosts reserves the source host's NIC egress and the destination host's NIC
//     ingress (the device-to-NIC hop is not modelled). Each resource is a single FIFO server:
//     a move starts when it is ready and all its resources are free, holds them all for
//     bytes / bandwidth, and arrives `latency` later (latency does not hold the resources, so
//     back-to-back moves pipeline). Moves reserve in event order: by the time their sender
//     finished, ties broken by event creation order, then by transfer index and move index. A
//     zero-byte move reserves nothing and arrives after the latency alone.
//   Iteration end. After its last task a group runs, for each of its stages in pipeline order,
//     that stage's gradient_sync_seconds and then its update_seconds, one after the other; the
//     iteration ends when every group has finished its last update.
//   Accounting per group, which each of its stages reports (under interleaving the stats of
//     the stages of one group are identical): busy = forward + backward (with the weight
//     gradients) + sync + update seconds of all its stages; a group that waits for a task's
//     inputs is idle until the last of those inputs was sent (upstream compute: the pipeline
//     bubble) and in communication wait from then until they arrive; idle also counts the time
//     before the first task and after the last update.
//     busy + communication_wait + idle == iteration_seconds.
//   Memory: a microbatch is in flight on a stage from the start of its forward to the end of
//     its backward, under ZB-H1 to the end of its weight gradient (which reads the activations
//     and the input gradient). A group's memory per device at a moment is the sum over its
//     stages of persistent_bytes + in flight * activation_bytes; peak_memory_bytes is its peak
//     over time, and peak_in_flight the peak over time of the microbatches in flight summed over
//     the group's stages (under interleaving the two peaks need not fall at the same moment;
//     both can be below the sum of the stages' MicrobatchesInFlight, which peak at different
//     times). With a stage per group: persistent_bytes + peak in flight * activation_bytes.
#pragma once

#include <cstdint>
#include <vector>

#include "core/util/status.h"
#include "solvers/pipeline/pipeline_schedule.h"

namespace alpa {

struct SimLink {
  // Intra-host: bytes per second of one device's link (each direction separately); inter-host:
  // the aggregate bytes per second of one host's NICs (each direction separately).
  double bandwidth = 0;
  double latency = 0;  // seconds added to every move on the link
};

struct PipelineSimStage {
  std::vector<int64_t> devices;  // physical ids: host * devices_per_host + local index
  double forward_seconds = 0;    // per microbatch, compute plus intra-stage collectives
  double backward_seconds = 0;   // per microbatch, the weight gradient included
  // Of backward_seconds, what a schedule that splits the backward (ZB-H1) runs as the separate
  // weight-gradient task; 0 <= it <= backward_seconds. Not used by GPipe and 1F1B.
  double weight_gradient_seconds = 0;
  double gradient_sync_seconds = 0;  // once per iteration, after the last backward
  double update_seconds = 0;         // once per iteration, after the gradient sync
  int64_t activation_bytes = 0;      // per device, per microbatch in flight
  int64_t persistent_bytes = 0;      // per device, all iteration
};

enum class SimTransferDirection : int32_t {
  kForward = 0,   // activation: after the sender's forward, before the receiver's forward
  kBackward = 1,  // gradient: after the sender's backward, before the receiver's backward
};

// One device-to-device piece of a transfer.
struct SimSliceMove {
  int64_t src_device = 0;  // a device of the sending stage
  int64_t dst_device = 0;  // a device of the receiving stage
  int64_t bytes = 0;
};

// Bytes one stage sends another per microbatch. Forward transfers go to a later stage
// (from_stage < to_stage), backward transfers to an earlier one; the stages need not be
// adjacent.
struct PipelineSimTransfer {
  int32_t from_stage = 0, to_stage = 0;
  int64_t bytes = 0;  // the tensor's bytes; what is spread when `slices` is empty
  SimTransferDirection direction = SimTransferDirection::kForward;
  // Optional: the moves (e.g. core/cluster/cross_mesh.h's PlanCrossMeshTransfer). When given they
  // alone decide the traffic and `bytes` is not used: their sum exceeds it when the receiver holds
  // replicas (every receiving device gets its whole tile).
  std::vector<SimSliceMove> slices;
  // Seconds the receiving stage spends after the last move arrived before the tensor is ready
  // (a local all-gather's all-gather on its mesh, planner.h); 0 for none.
  double gather_seconds = 0;
};

struct SimHostLinks {
  SimLink intra_host, inter_host;
  std::vector<int32_t> device_nic_group;
  std::vector<double> intra_host_pairs;  // as PipelineSimInput::intra_host_pairs
};

struct PipelineSimInput {
  int32_t hosts = 1;
  int32_t devices_per_host = 1;
  SimLink intra_host;  // per device
  SimLink inter_host;  // per NIC group of a host (one group: the host's NICs)
  // Per ordered pair of local device indices (devices_per_host^2 entries, row = sender), or
  // empty: the bytes per second of a move between the two inside a host (a host's NVLink graph,
  // core/cluster/nvlink_graph.h's MovePairBandwidths), each move still holding its sender's and
  // receiver's device links. Empty: intra_host.bandwidth.
  std::vector<double> intra_host_pairs;
  // Per local device index (devices_per_host entries), or empty: the NIC group through which it
  // reaches other hosts (core/cluster/cluster.h's nics_per_host); each group of each host is a
  // server of its own at inter_host.bandwidth. Empty: one group per host.
  std::vector<int32_t> device_nic_group;
  // Per local device index (devices_per_host entries), or empty: the bytes per second of its
  // moves to and from other hosts, a move running at the lower of its two ends' (a device far
  // from its host's NICs, core/cluster/cluster.h's NicLocality). Empty: inter_host.bandwidth.
  std::vector<double> device_inter_host_bandwidth;
  // Per host (hosts entries), or empty: its own links, for clusters whose hosts differ (a mixed
  // cluster's pools, core/cluster/cluster.h). A move inside a host uses its host's intra link;
  // one between hosts runs at the lower of its two ends' inter bandwidths, with the higher
  // latency; each host's devices reach its NICs by its own device_nic_group (empty: one group).
  // When set, it replaces intra_host, inter_host, intra_host_pairs and device_nic_group.
  std::vector<SimHostLinks> host_links;
  PipelineScheduleKind schedule = PipelineScheduleKind::kOneFOneB;
  // Stages per device group: 1, or under interleaved 1F1B v >= 2 dividing the stages, stage s
  // then having exactly the devices of stage s % (stages / v) (PipelineShapeProblem).
  int32_t virtual_stages = 1;
  int64_t microbatches = 1;              // B, 1 .. kMaxSimMicrobatches
  std::vector<PipelineSimStage> stages;  // pipeline order
  std::vector<PipelineSimTransfer> transfers;
  bool record_timeline = true;  // false: leave PipelineSimResult::timeline empty
};

// The largest B the simulator accepts (its state grows with stages x B).
constexpr int64_t kMaxSimMicrobatches = int64_t{1} << 20;

enum class SimEventKind : int32_t {
  kForward = 0,
  kBackward = 1,
  kSend = 2,  // one move, from the moment it holds its links to its arrival
  kRecv = 3,  // the receiving group blocked on inputs already sent but not yet arrived
  kSync = 4,
  kUpdate = 5,
  kIdle = 6,  // the group has nothing to run (bubble, waiting for upstream compute, finished)
  // The weight-gradient task of a schedule that splits the backward (ZB-H1); kBackward is then
  // the input gradient alone.
  kWeightGradient = 7,
};

// "forward", "backward", "send", "recv", "sync", "update", "idle", "weight-gradient".
const char* SimEventKindName(SimEventKind kind);

// How reports and pictures of a simulation name a schedule: "GPipe", "1F1B", "ZB-H1",
// "interleaved 1F1B" (PipelineScheduleName is the lower-case name that files and options use).
const char* ScheduleDisplayName(PipelineScheduleKind kind);

struct SimEvent {
  // The stage whose task it is; for kSend the sending stage; for kIdle and kRecv, which are the
  // device group's, the group's first stage (its index: stage g of group g).
  int32_t stage = 0;
  // The stage's devices; for kSend the move's {source, destination}.
  std::vector<int64_t> devices;
  SimEventKind kind = SimEventKind::kIdle;
  int64_t microbatch = -1;  // -1 for sync, update and idle
  double start = 0, end = 0;
  int32_t peer_stage = -1;  // kSend: the receiving stage
  int32_t transfer = -1;    // kSend: index into PipelineSimInput::transfers
};

// Per stage; under interleaved 1F1B those of the stage's device group (see Accounting).
struct SimStageStats {
  double busy_seconds = 0;                // forward + backward + weight gradient + sync + update
  double communication_wait_seconds = 0;  // blocked on inputs sent but not yet arrived
  double idle_seconds = 0;                // iteration - busy - communication wait
  double bubble_fraction = 0;             // idle / iteration
  double finish_seconds = 0;              // end of its update
  int64_t peak_in_flight = 0;             // microbatches
  int64_t peak_memory_bytes = 0;          // per device: persistent + peak activations held
};

struct PipelineSimResult {
  double iteration_seconds = 0;
  // The planner's closed form for the same input: sum_i (f_i + b_i + sync_i + update_i) +
  // (B - 1) * max_g (f_g + b_g) over the stages i and the device groups g (a group's f + b: its
  // stages' together; a group per stage unless interleaved), whatever the schedule (the stage
  // DP's objective, with each group's stages as one stage; ZB-H1 and interleaved 1F1B run
  // below it where they shrink the bubble). Transfers are not part of it.
  double closed_form_seconds = 0;
  std::vector<SimStageStats> stages;
  // Per device group its stages' forward / backward / weight-gradient / sync / update (each
  // under its own stage) and its idle and recv intervals (under its first stage); together
  // they tile [0, iteration_seconds]; with a stage per group, per stage. And every move as a
  // send of its sending stage. Sorted by start, then device group (the stage's, stage %
  // groups; with a stage per group the stage), then the order they happened.
  // Zero-length idle and recv intervals are left out.
  std::vector<SimEvent> timeline;
};

// Checks the input; kInvalidArgument names the element ("stages[2].forward_seconds ...").
Status ValidatePipelineSimInput(const PipelineSimInput& input);

// Validates, then simulates one iteration. Errors: kInvalidArgument from validation, or when
// the schedule cannot finish (a stage waits for an input that is never sent).
Result<PipelineSimResult> SimulatePipeline(const PipelineSimInput& input);

}  // namespace alpa
