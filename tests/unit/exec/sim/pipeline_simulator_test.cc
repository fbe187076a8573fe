// The pipeline simulator: the closed form on equal stages, hand-derived unequal cases, in-flight
// peaks, transfer delays and link contention, gradient sync, timeline invariants, bad inputs.
// Times are sums of dyadic numbers, so equalities are exact.
#include "exec/sim/pipeline_simulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "support/pipeline_sim_runs.h"

namespace alpa {
namespace {

constexpr PipelineScheduleKind kGPipe = PipelineScheduleKind::kGPipe;
constexpr PipelineScheduleKind k1F1B = PipelineScheduleKind::kOneFOneB;

PipelineSimStage Stage(std::vector<int64_t> devices, double f, double b) {
  PipelineSimStage s;
  s.devices = std::move(devices);
  s.forward_seconds = f;
  s.backward_seconds = b;
  return s;
}

PipelineSimTransfer Transfer(int32_t from, int32_t to, int64_t bytes, SimTransferDirection dir) {
  PipelineSimTransfer t;
  t.from_stage = from;
  t.to_stage = to;
  t.bytes = bytes;
  t.direction = dir;
  return t;
}

// Activation and gradient transfers of `bytes` between every pair of consecutive stages.
void ChainTransfers(PipelineSimInput* in, int64_t bytes) {
  for (int32_t s = 0; s + 1 < static_cast<int32_t>(in->stages.size()); ++s) {
    in->transfers.push_back(Transfer(s, s + 1, bytes, SimTransferDirection::kForward));
    in->transfers.push_back(Transfer(s + 1, s, bytes, SimTransferDirection::kBackward));
  }
}

// One device per stage on one host; links fast but unused (zero bytes, zero latency).
PipelineSimInput NoCommPipeline(PipelineScheduleKind kind, const std::vector<double>& f,
                                const std::vector<double>& b, int64_t microbatches) {
  PipelineSimInput in;
  in.hosts = 1;
  in.devices_per_host = static_cast<int32_t>(f.size());
  in.intra_host = {1e9, 0};
  in.inter_host = {1e9, 0};
  in.schedule = kind;
  in.microbatches = microbatches;
  for (size_t s = 0; s < f.size(); ++s) {
    in.stages.push_back(Stage({static_cast<int64_t>(s)}, f[s], b[s]));
  }
  ChainTransfers(&in, 0);
  return in;
}

using testing::FindEvent;
using testing::Simulate;

// Per stage, the non-send events tile [0, T] without overlap and add up to the stats.
void CheckTimeline(const PipelineSimInput& in, const PipelineSimResult& r) {
  const double t_end = r.iteration_seconds;
  for (int32_t s = 0; s < static_cast<int32_t>(in.stages.size()); ++s) {
    std::vector<SimEvent> ev;
    for (const SimEvent& e : r.timeline) {
      if (e.stage == s && e.kind != SimEventKind::kSend) ev.push_back(e);
    }
    double t = 0, busy = 0, recv = 0, idle = 0;
    int64_t compute = 0;
    for (const SimEvent& e : ev) {
      EXPECT_DOUBLE_EQ(e.start, t) << "stage " << s << " " << SimEventKindName(e.kind);
      EXPECT_GE(e.end, e.start);
      t = e.end;
      const double d = e.end - e.start;
      if (e.kind == SimEventKind::kRecv) {
        recv += d;
      } else if (e.kind == SimEventKind::kIdle) {
        idle += d;
      } else {
        busy += d;
        compute += e.kind == SimEventKind::kForward || e.kind == SimEventKind::kBackward;
      }
    }
    EXPECT_DOUBLE_EQ(t, t_end) << "stage " << s;
    EXPECT_EQ(compute, 2 * in.microbatches);
    const SimStageStats& st = r.stages[static_cast<size_t>(s)];
    EXPECT_NEAR(busy, st.busy_seconds, 1e-9 * (1 + t_end));
    EXPECT_NEAR(recv, st.communication_wait_seconds, 1e-9 * (1 + t_end));
    EXPECT_NEAR(idle, st.idle_seconds, 1e-9 * (1 + t_end));
    EXPECT_NEAR(st.busy_seconds + st.communication_wait_seconds + st.idle_seconds, t_end,
                1e-9 * (1 + t_end));
  }
}

TEST(PipelineSimulator, EqualStagesMatchTheClosedForm) {
  const double f = 1.5, b = 2.25;
  for (PipelineScheduleKind kind : {kGPipe, k1F1B}) {
    for (int32_t num_stages : {1, 2, 3, 4, 6}) {
      for (int64_t micro : {1, 2, 3, 4, 5, 8}) {
        SCOPED_TRACE("kind " + std::to_string(static_cast<int>(kind)) + " S " +
                     std::to_string(num_stages) + " B " + std::to_string(micro));
        PipelineSimInput in =
            NoCommPipeline(kind, std::vector<double>(static_cast<size_t>(num_stages), f),
                           std::vector<double>(static_cast<size_t>(num_stages), b), micro);
        for (PipelineSimStage& st : in.stages) {
          st.activation_bytes = 1000;
          st.persistent_bytes = 7;
        }
        const PipelineSimResult r = Simulate(in);
        const double expected = (num_stages - 1) * (f + b) + static_cast<double>(micro) * (f + b);
        EXPECT_EQ(r.iteration_seconds, expected);
        EXPECT_EQ(r.closed_form_seconds, expected);
        for (int32_t s = 0; s < num_stages; ++s) {
          const SimStageStats& st = r.stages[static_cast<size_t>(s)];
          const int64_t peak = kind == k1F1B ? std::min<int64_t>(num_stages - s, micro) : micro;
          EXPECT_EQ(st.peak_in_flight, peak) << "stage " << s;
          EXPECT_EQ(st.peak_memory_bytes, 7 + 1000 * peak);
          EXPECT_EQ(st.busy_seconds, static_cast<double>(micro) * (f + b));
          EXPECT_EQ(st.communication_wait_seconds, 0.0);
          EXPECT_EQ(st.idle_seconds, expected - static_cast<double>(micro) * (f + b));
          EXPECT_EQ(st.bubble_fraction, st.idle_seconds / expected);
        }
        CheckTimeline(in, r);
      }
    }
  }
}

// Stage 0: f = b = 2; stage 1: f = b = 1; B = 2. By hand:
//   1F1B  s0 F0[0,2] F1[2,4] B0[4,6] B1[6,8];  s1 F0[2,3] B0[3,4] F1[4,5] B1[5,6]  -> 8
//   GPipe s0 F0[0,2] F1[2,4] B1[6,8] B0[8,10]; s1 F0[2,3] F1[4,5] B1[5,6] B0[6,7] -> 10
// The closed form gives 6 + (2 - 1) * 4 = 10 for both.
TEST(PipelineSimulator, UnequalTwoStagesByHand) {
  const PipelineSimResult one = Simulate(NoCommPipeline(k1F1B, {2, 1}, {2, 1}, 2));
  EXPECT_EQ(one.iteration_seconds, 8.0);
  EXPECT_EQ(one.closed_form_seconds, 10.0);
  EXPECT_EQ(one.stages[0].idle_seconds, 0.0);
  EXPECT_EQ(one.stages[1].idle_seconds, 4.0);
  EXPECT_EQ(one.stages[1].finish_seconds, 6.0);
  ASSERT_NE(FindEvent(one, 1, SimEventKind::kForward, 1), nullptr);
  EXPECT_EQ(FindEvent(one, 1, SimEventKind::kForward, 1)->start, 4.0);

  const PipelineSimResult gpipe = Simulate(NoCommPipeline(kGPipe, {2, 1}, {2, 1}, 2));
  EXPECT_EQ(gpipe.iteration_seconds, 10.0);
  EXPECT_EQ(gpipe.stages[0].idle_seconds, 2.0);
  EXPECT_EQ(gpipe.stages[1].finish_seconds, 7.0);
  ASSERT_NE(FindEvent(gpipe, 0, SimEventKind::kBackward, 0), nullptr);
  EXPECT_EQ(FindEvent(gpipe, 0, SimEventKind::kBackward, 0)->start, 8.0);
}

// Without communication, and with the same backward : forward ratio on every stage (here 2),
// the closed form bounds the simulation from above; the busiest stage and one microbatch's path
// through every stage bound it from below.
TEST(PipelineSimulator, ClosedFormIsAnUpperBoundWithProportionalStages) {
  std::mt19937 rng(7);
  for (int iter = 0; iter < 300; ++iter) {
    const int32_t num_stages = 1 + static_cast<int32_t>(rng() % 6);
    const int64_t micro = 1 + static_cast<int64_t>(rng() % 9);
    std::vector<double> f, b;
    double path = 0, busiest = 0;
    for (int32_t s = 0; s < num_stages; ++s) {
      f.push_back(static_cast<double>(rng() % 17) / 4);
      b.push_back(2 * f.back());
      path += f.back() + b.back();
      busiest = std::max(busiest, static_cast<double>(micro) * (f.back() + b.back()));
    }
    for (PipelineScheduleKind kind : {kGPipe, k1F1B}) {
      const PipelineSimInput in = NoCommPipeline(kind, f, b, micro);
      const PipelineSimResult r = Simulate(in);
      EXPECT_LE(r.iteration_seconds, r.closed_form_seconds) << "iter " << iter;
      EXPECT_GE(r.iteration_seconds, std::max(path, busiest)) << "iter " << iter;
      CheckTimeline(in, r);
    }
  }
}

// When the stages split forward and backward differently the closed form can be too low.
//   1F1B, f = {1, 0, 0}, b = {0, 1, 0}, B = 2: stage 1 runs F0 F1 B0 B1; its B0 (gradient ready
//   at 1) waits behind F1, whose activation stage 0 sends at 2: B0[2,3], B1[3,4] -> T = 4 > 3.
//   GPipe, f = {1, 3}, b = {3, 1}, B = 2: forwards end at 1 + 2 * 3 = 7, then stage 1's
//   backward of microbatch 1 and stage 0's two backwards: 7 + 1 + 2 * 3 = 14 > 12.
TEST(PipelineSimulator, ClosedFormCanUnderestimateSkewedStages) {
  PipelineSimResult r = Simulate(NoCommPipeline(k1F1B, {1, 0, 0}, {0, 1, 0}, 2));
  EXPECT_EQ(r.iteration_seconds, 4.0);
  EXPECT_EQ(r.closed_form_seconds, 3.0);
  EXPECT_EQ(FindEvent(r, 1, SimEventKind::kBackward, 0)->start, 2.0);
  r = Simulate(NoCommPipeline(kGPipe, {1, 3}, {3, 1}, 2));
  EXPECT_EQ(r.iteration_seconds, 14.0);
  EXPECT_EQ(r.closed_form_seconds, 12.0);
}

// Two single-device stages on two hosts, B = 1, f = 1, b = 2: a 3 GB activation over a 1 GB/s
// NIC with 0.5 s latency arrives 3.5 s after the forward; the empty gradient after 0.5 s.
TEST(PipelineSimulator, SlowTransferDelaysTheReceiverByItsTime) {
  PipelineSimInput in;
  in.hosts = 2;
  in.devices_per_host = 1;
  in.intra_host = {1e12, 0};
  in.inter_host = {1e9, 0.5};
  in.microbatches = 1;
  in.stages = {Stage({0}, 1, 2), Stage({1}, 1, 2)};
  in.transfers = {Transfer(0, 1, 3000000000, SimTransferDirection::kForward),
                  Transfer(1, 0, 0, SimTransferDirection::kBackward)};
  const PipelineSimResult r = Simulate(in);
  EXPECT_EQ(r.iteration_seconds, 1 + 3.5 + 1 + 2 + 0.5 + 2);
  EXPECT_EQ(FindEvent(r, 1, SimEventKind::kForward, 0)->start, 4.5);
  EXPECT_EQ(r.stages[1].communication_wait_seconds, 3.5);
  EXPECT_EQ(r.stages[1].idle_seconds, 1 + 2.5);
  EXPECT_EQ(r.stages[0].communication_wait_seconds, 0.5);
  EXPECT_EQ(r.stages[0].idle_seconds, 6.5);
  const SimEvent* send = FindEvent(r, 0, SimEventKind::kSend, 0);
  ASSERT_NE(send, nullptr);
  EXPECT_EQ(send->start, 1.0);
  EXPECT_EQ(send->end, 4.5);
  EXPECT_EQ(send->peer_stage, 1);
  EXPECT_EQ(send->devices, (std::vector<int64_t>{0, 1}));
  CheckTimeline(in, r);

  // Sends are asynchronous: with B = 2 the sender starts its next forward right away.
  in.microbatches = 2;
  const PipelineSimResult r2 = Simulate(in);
  EXPECT_EQ(FindEvent(r2, 0, SimEventKind::kForward, 1)->start, 1.0);
  // The second activation queues behind the first on the NIC: sent at 2, on the wire 4..7.
  EXPECT_EQ(FindEvent(r2, 1, SimEventKind::kForward, 1)->start, 7.5);
  CheckTimeline(in, r2);
}

// Two-device stages, f = b = 1, B = 1, an empty gradient back; returns stage 1's forward start.
double ForwardArrival(int32_t hosts, int32_t devices_per_host, std::vector<int64_t> from,
                      std::vector<int64_t> to, std::vector<PipelineSimTransfer> activations) {
  PipelineSimInput in;
  in.hosts = hosts;
  in.devices_per_host = devices_per_host;
  in.intra_host = {2e9, 0.25};
  in.inter_host = {1e9, 0};
  in.microbatches = 1;
  in.stages = {Stage(std::move(from), 1, 1), Stage(std::move(to), 1, 1)};
  in.transfers = std::move(activations);
  in.transfers.push_back(Transfer(1, 0, 0, SimTransferDirection::kBackward));
  const PipelineSimResult r = Simulate(in);
  CheckTimeline(in, r);
  const SimEvent* e = FindEvent(r, 1, SimEventKind::kForward, 0);
  return e ? e->start : -1;
}

TEST(PipelineSimulator, TransfersSharingAHostNicQueue) {
  const auto fwd = [](int64_t bytes) {
    return Transfer(0, 1, bytes, SimTransferDirection::kForward);
  };
  // Host 0 -> host 1 over one NIC: 4 GB at 1 GB/s take 4 s however they are split.
  EXPECT_EQ(ForwardArrival(2, 2, {0, 1}, {2, 3}, {fwd(4000000000)}), 1 + 4.0);
  // Two such transfers share the NIC: twice as long.
  EXPECT_EQ(ForwardArrival(2, 2, {0, 1}, {2, 3}, {fwd(4000000000), fwd(4000000000)}), 1 + 8.0);
  // Explicit slices, one device pair: still the NIC's 4 s.
  PipelineSimTransfer sliced = fwd(4000000000);
  sliced.slices = std::vector<SimSliceMove>{{0, 3, 4000000000}};
  EXPECT_EQ(ForwardArrival(2, 2, {0, 1}, {2, 3}, {sliced}), 1 + 4.0);
  // Slices decide the traffic: a receiver replicated on both devices gets the tensor twice.
  sliced.slices = std::vector<SimSliceMove>{{0, 2, 4000000000}, {1, 3, 4000000000}};
  EXPECT_EQ(ForwardArrival(2, 2, {0, 1}, {2, 3}, {sliced}), 1 + 8.0);
  // Stages spanning two hosts each (one device per host): the pairs use different NICs.
  EXPECT_EQ(ForwardArrival(4, 1, {0, 1}, {2, 3}, {fwd(4000000000)}), 1 + 2.0);
}

TEST(PipelineSimulator, SameHostTransfersUseTheDeviceLinks) {
  const auto fwd = [](int64_t bytes) {
    return Transfer(0, 1, bytes, SimTransferDirection::kForward);
  };
  // Two pairs in parallel, 2 GB each at 2 GB/s, plus 0.25 s latency (the NIC's 1 GB/s unused).
  EXPECT_EQ(ForwardArrival(1, 4, {0, 1}, {2, 3}, {fwd(4000000000)}), 1 + 1.25);
  // Both slices leave device 0: its link carries them one after the other.
  PipelineSimTransfer sliced = fwd(4000000000);
  sliced.slices = std::vector<SimSliceMove>{{0, 2, 2000000000}, {0, 3, 2000000000}};
  EXPECT_EQ(ForwardArrival(1, 4, {0, 1}, {2, 3}, {sliced}), 1 + 2.25);
  // Different sources, one destination: its incoming link is shared.
  sliced.slices = std::vector<SimSliceMove>{{0, 2, 2000000000}, {1, 2, 2000000000}};
  EXPECT_EQ(ForwardArrival(1, 4, {0, 1}, {2, 3}, {sliced}), 1 + 2.25);
}

// A host's table of pair bandwidths (an NVLink graph): each move inside the host at its pair's
// rate, still one after another on its sender's and receiver's links.
TEST(PipelineSimulator, SameHostMovesRunAtTheirPairsBandwidth) {
  PipelineSimInput in;
  in.hosts = 1;
  in.devices_per_host = 4;
  in.intra_host = {2e9, 0.25};
  in.inter_host = {1e9, 0};
  // 0 -> 2 at 4 GB/s, 0 -> 3 at 1 GB/s, every other pair at 2 GB/s.
  in.intra_host_pairs.assign(16, 2e9);
  in.intra_host_pairs[0 * 4 + 2] = 4e9;
  in.intra_host_pairs[0 * 4 + 3] = 1e9;
  in.microbatches = 1;
  in.stages = {Stage({0, 1}, 1, 1), Stage({2, 3}, 1, 1)};
  PipelineSimTransfer fwd = Transfer(0, 1, 4000000000, SimTransferDirection::kForward);
  fwd.slices = std::vector<SimSliceMove>{{0, 2, 4000000000}};
  in.transfers = {fwd, Transfer(1, 0, 0, SimTransferDirection::kBackward)};
  PipelineSimResult r = Simulate(in);
  CheckTimeline(in, r);
  EXPECT_EQ(FindEvent(r, 1, SimEventKind::kForward, 0)->start, 1 + 1.0 + 0.25);
  // Both slices leave device 0: 2 GB at 4 GB/s, then 2 GB at 1 GB/s.
  in.transfers[0].slices = std::vector<SimSliceMove>{{0, 2, 2000000000}, {0, 3, 2000000000}};
  r = Simulate(in);
  CheckTimeline(in, r);
  EXPECT_EQ(FindEvent(r, 1, SimEventKind::kForward, 0)->start, 1 + 0.5 + 2.0 + 0.25);
  // The same table per host (host_links) gives the same times.
  in.host_links = {SimHostLinks{in.intra_host, in.inter_host, {}, in.intra_host_pairs}};
  in.intra_host_pairs.clear();
  r = Simulate(in);
  EXPECT_EQ(FindEvent(r, 1, SimEventKind::kForward, 0)->start, 1 + 0.5 + 2.0 + 0.25);
}

TEST(PipelineSimulator, GradientSyncAndUpdateComeLast) {
  PipelineSimInput in = NoCommPipeline(k1F1B, {1}, {2}, 3);
  in.stages[0].gradient_sync_seconds = 0.5;
  in.stages[0].update_seconds = 0.25;
  PipelineSimResult r = Simulate(in);
  EXPECT_EQ(r.iteration_seconds, 3 * (1 + 2) + 0.5 + 0.25);
  EXPECT_EQ(r.closed_form_seconds, r.iteration_seconds);
  EXPECT_EQ(r.stages[0].idle_seconds, 0.0);
  const SimEvent* sync = FindEvent(r, 0, SimEventKind::kSync, -1);
  ASSERT_NE(sync, nullptr);
  EXPECT_EQ(sync->start, 9.0);
  EXPECT_EQ(FindEvent(r, 0, SimEventKind::kUpdate, -1)->end, 9.75);
  CheckTimeline(in, r);

  // Two equal stages (f = b = 1, B = 2): stage 0 ends its tasks at 6, stage 1 at 5; their
  // syncs overlap, so T = max(6 + 3, 5 + 1) = 9 where the closed form charges 6 + 3 + 1.
  in = NoCommPipeline(k1F1B, {1, 1}, {1, 1}, 2);
  in.stages[0].gradient_sync_seconds = 3;
  in.stages[1].gradient_sync_seconds = 1;
  r = Simulate(in);
  EXPECT_EQ(r.iteration_seconds, 9.0);
  EXPECT_EQ(r.closed_form_seconds, 10.0);
  EXPECT_EQ(r.stages[1].finish_seconds, 6.0);
  CheckTimeline(in, r);
}

// Zero-length tasks all at one instant stay in schedule order in the timeline.
TEST(PipelineSimulator, TimelineKeepsZeroLengthTasksInOrder) {
  for (PipelineScheduleKind kind : {kGPipe, k1F1B}) {
    const PipelineSimInput in = NoCommPipeline(kind, {0, 0, 0}, {0, 0, 0}, 4);
    const PipelineSimResult r = Simulate(in);
    EXPECT_EQ(r.iteration_seconds, 0.0);
    for (int32_t s = 0; s < 3; ++s) {
      std::vector<PipelineTask> order;
      for (const SimEvent& e : r.timeline) {
        if (e.stage != s) continue;
        if (e.kind == SimEventKind::kForward)
          order.push_back({PipelineTaskKind::kForward, e.microbatch});
        if (e.kind == SimEventKind::kBackward)
          order.push_back({PipelineTaskKind::kBackward, e.microbatch});
      }
      EXPECT_EQ(order, StageSchedule(kind, 3, s, 4)) << "stage " << s;
    }
  }
}

TEST(PipelineSimulator, TimelineOffAndDeterminism) {
  PipelineSimInput in = NoCommPipeline(k1F1B, {1, 2, 1.5}, {2, 3, 1}, 5);
  in.hosts = 3;
  in.devices_per_host = 1;
  in.inter_host = {1e9, 0.125};
  for (PipelineSimTransfer& t : in.transfers) t.bytes = 500000000;
  const PipelineSimResult a = Simulate(in);
  const PipelineSimResult b = Simulate(in);
  EXPECT_EQ(a.iteration_seconds, b.iteration_seconds);
  ASSERT_EQ(a.timeline.size(), b.timeline.size());
  for (size_t i = 0; i < a.timeline.size(); ++i) {
    EXPECT_EQ(a.timeline[i].start, b.timeline[i].start);
    EXPECT_EQ(a.timeline[i].kind, b.timeline[i].kind);
  }
  CheckTimeline(in, a);
  in.record_timeline = false;
  const PipelineSimResult c = Simulate(in);
  EXPECT_TRUE(c.timeline.empty());
  EXPECT_EQ(c.iteration_seconds, a.iteration_seconds);
}

// Random layouts over several hosts with random transfers (also between stages that are not
// adjacent, some with explicit slices): the run finishes, the timeline tiles every stage, and
// communication never makes the iteration shorter than the same pipeline without it.
TEST(PipelineSimulator, RandomTransfersKeepTheInvariants) {
  std::mt19937 rng(11);
  for (int iter = 0; iter < 200; ++iter) {
    const int32_t num_stages = 1 + static_cast<int32_t>(rng() % 5);
    PipelineSimInput in;
    in.hosts = 1 + static_cast<int32_t>(rng() % 3);
    in.devices_per_host = 2 * num_stages;
    in.intra_host = {4e9, 0.125 * static_cast<double>(rng() % 3)};
    in.inter_host = {1e9, 0.25 * static_cast<double>(rng() % 3)};
    in.schedule = rng() % 2 ? k1F1B : kGPipe;
    in.microbatches = 1 + static_cast<int64_t>(rng() % 6);
    std::vector<int64_t> devices(static_cast<size_t>(in.hosts * in.devices_per_host));
    for (size_t d = 0; d < devices.size(); ++d) devices[d] = static_cast<int64_t>(d);
    std::shuffle(devices.begin(), devices.end(), rng);
    size_t next = 0;
    for (int32_t s = 0; s < num_stages; ++s) {
      const size_t n = 1 + rng() % 2;
      std::vector<int64_t> mine(devices.begin() + static_cast<std::ptrdiff_t>(next),
                                devices.begin() + static_cast<std::ptrdiff_t>(next + n));
      next += n;
      const double f = static_cast<double>(rng() % 9) / 4;
      in.stages.push_back(Stage(mine, f, 2 * f));
    }
    ChainTransfers(&in, 0);  // keeps the stages in a chain
    for (int k = 0; k < 4 && num_stages > 1; ++k) {
      int32_t a = static_cast<int32_t>(rng() % static_cast<uint32_t>(num_stages));
      int32_t b = static_cast<int32_t>(rng() % static_cast<uint32_t>(num_stages));
      if (a == b) continue;
      const bool forward = a < b;
      PipelineSimTransfer t =
          Transfer(a, b, 250000000 * static_cast<int64_t>(rng() % 9),
                   forward ? SimTransferDirection::kForward : SimTransferDirection::kBackward);
      if (rng() % 2) {
        const std::vector<int64_t>& src = in.stages[static_cast<size_t>(a)].devices;
        const std::vector<int64_t>& dst = in.stages[static_cast<size_t>(b)].devices;
        t.slices = std::vector<SimSliceMove>{{src.back(), dst.front(), t.bytes / 2},
                                             {src.front(), dst.back(), t.bytes - t.bytes / 2}};
      }
      in.transfers.push_back(t);
    }
    PipelineSimInput quiet = in;
    quiet.transfers.clear();
    ChainTransfers(&quiet, 0);
    quiet.intra_host.latency = quiet.inter_host.latency = 0;
    const PipelineSimResult r = Simulate(in);
    CheckTimeline(in, r);
    EXPECT_GE(r.iteration_seconds, Simulate(quiet).iteration_seconds) << "iter " << iter;
  }
}

void ExpectInvalid(const PipelineSimInput& in, const std::string& needle) {
  const Result<PipelineSimResult> r = SimulatePipeline(in);
  ASSERT_FALSE(r.ok()) << needle;
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find(needle), std::string::npos) << r.status().message();
}

TEST(PipelineSimulator, InvalidInputsNameTheElement) {
  const PipelineSimInput good = NoCommPipeline(k1F1B, {1, 1, 1}, {1, 1, 1}, 2);
  ASSERT_TRUE(SimulatePipeline(good).ok());
  PipelineSimInput in = good;
  in.microbatches = 0;
  ExpectInvalid(in, "microbatches");
  in = good;
  in.hosts = 0;
  ExpectInvalid(in, "hosts");
  in = good;
  in.inter_host.bandwidth = 0;
  ExpectInvalid(in, "inter_host.bandwidth");
  in = good;
  in.intra_host.latency = -1;
  ExpectInvalid(in, "intra_host.latency");
  in = good;
  in.intra_host_pairs = {1e9, 1e9};
  ExpectInvalid(in, "intra_host_pairs has 2 entries, expected 9");
  in = good;
  in.intra_host_pairs.assign(9, 1e9);
  in.intra_host_pairs[3] = -1;
  ExpectInvalid(in, "intra_host_pairs[3] (devices 1 -> 0) must be finite and positive");
  in = good;
  in.stages.clear();
  in.transfers.clear();
  ExpectInvalid(in, "stages is empty");
  in = good;
  in.stages[1].forward_seconds = -0.5;
  ExpectInvalid(in, "stages[1].forward_seconds");
  in = good;
  in.stages[2].update_seconds = std::numeric_limits<double>::quiet_NaN();
  ExpectInvalid(in, "stages[2].update_seconds");
  in = good;
  in.stages[0].activation_bytes = -1;
  ExpectInvalid(in, "stages[0].activation_bytes");
  in = good;
  in.stages[2].devices = {3};
  ExpectInvalid(in, "stages[2].devices[0] = 3 is out of range");
  in = good;
  in.stages[2].devices = {0};
  ExpectInvalid(in, "stages[2].devices[0] = 0 is already used by stages[0]");
  in = good;
  in.stages[1].devices = {1, 1};
  ExpectInvalid(in, "stages[1].devices[1] = 1 is listed twice");
  in = good;
  in.stages[1].devices.clear();
  ExpectInvalid(in, "stages[1].devices is empty");
  in = good;
  in.transfers[3].to_stage = 7;
  ExpectInvalid(in, "transfers[3].to_stage = 7 is not a stage index");
  in = good;
  in.transfers[0].from_stage = -1;
  ExpectInvalid(in, "transfers[0].from_stage = -1");
  in = good;
  in.transfers[0].direction = SimTransferDirection::kBackward;
  ExpectInvalid(in, "transfers[0] is backward");
  in = good;
  in.transfers[1].bytes = -5;
  ExpectInvalid(in, "transfers[1].bytes");
  in = good;
  in.transfers[0].bytes = 10;
  in.transfers[0].slices = std::vector<SimSliceMove>{{0, 1, 4}, {0, 2, 6}};
  ExpectInvalid(in, "transfers[0].slices[1].dst_device 2 is not a device of stages[1]");
  in.transfers[0].slices = std::vector<SimSliceMove>{{0, 1, 4}, {3, 1, 6}};
  ExpectInvalid(in, "transfers[0].slices[1].src_device 3 is not a device of stages[0]");
  in.transfers[0].slices = std::vector<SimSliceMove>{{0, 1, -4}};
  ExpectInvalid(in, "transfers[0].slices[0].bytes is negative");
  in = good;
  in.schedule = static_cast<PipelineScheduleKind>(5);
  ExpectInvalid(in, "schedule");
}

}  // namespace
}  // namespace alpa
