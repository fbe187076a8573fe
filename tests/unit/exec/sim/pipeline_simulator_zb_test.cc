// The pipeline simulator under ZB-H1 (pipeline_schedule.h): the zero-bubble closed form on
// equal stages, 1F1B's result when the weight gradient is 0, in-flight peaks of min(S, B) on
// every stage, the gradient sent after the input gradient (not the weight gradient), the
// timeline's weight-gradient tasks, and the checks of weight_gradient_seconds. Times are sums
// of dyadic numbers, so equalities are exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "exec/sim/pipeline_simulator.h"
#include "exec/sim/timeline_svg.h"
#include "solvers/pipeline/pipeline_schedule.h"
#include "support/pipeline_sim_runs.h"

namespace alpa {
namespace {

constexpr PipelineScheduleKind k1F1B = PipelineScheduleKind::kOneFOneB;
constexpr PipelineScheduleKind kZbH1 = PipelineScheduleKind::kZeroBubbleH1;

// One device per stage on one host, every stage forward f, backward b of which w is the weight
// gradient; zero-byte activation and gradient transfers between neighbours over links without
// latency (so the transfers order the tasks and take no time).
PipelineSimInput EqualStages(PipelineScheduleKind kind, int32_t num_stages, int64_t microbatches,
                             double f, double b, double w) {
  PipelineSimInput in;
  in.hosts = 1;
  in.devices_per_host = num_stages;
  in.intra_host = {1 << 20, 0};
  in.inter_host = {1 << 20, 0};
  in.schedule = kind;
  in.microbatches = microbatches;
  for (int32_t s = 0; s < num_stages; ++s) {
    PipelineSimStage st;
    st.devices = {s};
    st.forward_seconds = f;
    st.backward_seconds = b;
    st.weight_gradient_seconds = w;
    in.stages.push_back(st);
  }
  for (int32_t s = 0; s + 1 < num_stages; ++s) {
    PipelineSimTransfer fwd;
    fwd.from_stage = s;
    fwd.to_stage = s + 1;
    fwd.direction = SimTransferDirection::kForward;
    in.transfers.push_back(fwd);
    PipelineSimTransfer bwd;
    bwd.from_stage = s + 1;
    bwd.to_stage = s;
    bwd.direction = SimTransferDirection::kBackward;
    in.transfers.push_back(bwd);
  }
  return in;
}

using testing::FindEvent;
using testing::Simulate;

// Per stage: the non-send events tile [0, T], each task runs as long as the stage's figures say
// (the input gradient b - w, the weight gradient w), every microbatch has one forward, one
// input gradient and one weight gradient, and busy time is f + b per microbatch.
void CheckZeroBubbleTimeline(const PipelineSimInput& in, const PipelineSimResult& r) {
  for (int32_t s = 0; s < static_cast<int32_t>(in.stages.size()); ++s) {
    const PipelineSimStage& spec = in.stages[static_cast<size_t>(s)];
    double t = 0;
    int64_t forwards = 0, backwards = 0, weights = 0;
    for (const SimEvent& e : r.timeline) {
      if (e.stage != s || e.kind == SimEventKind::kSend) continue;
      EXPECT_EQ(e.start, t) << "stage " << s << " " << SimEventKindName(e.kind);
      t = e.end;
      const double d = e.end - e.start;
      if (e.kind == SimEventKind::kForward) {
        ++forwards;
        EXPECT_EQ(d, spec.forward_seconds);
      } else if (e.kind == SimEventKind::kBackward) {
        ++backwards;
        EXPECT_EQ(d, spec.backward_seconds - spec.weight_gradient_seconds);
      } else if (e.kind == SimEventKind::kWeightGradient) {
        ++weights;
        EXPECT_EQ(d, spec.weight_gradient_seconds);
        // After the microbatch's input gradient.
        const SimEvent* input_gradient = FindEvent(r, s, SimEventKind::kBackward, e.microbatch);
        ASSERT_NE(input_gradient, nullptr);
        EXPECT_LE(input_gradient->end, e.start);
      }
    }
    EXPECT_EQ(t, r.iteration_seconds) << "stage " << s;
    EXPECT_EQ(forwards, in.microbatches);
    EXPECT_EQ(backwards, in.microbatches);
    EXPECT_EQ(weights, in.microbatches);
    const SimStageStats& st = r.stages[static_cast<size_t>(s)];
    EXPECT_EQ(st.busy_seconds, static_cast<double>(in.microbatches) *
                                       (spec.forward_seconds + spec.backward_seconds) +
                                   spec.gradient_sync_seconds + spec.update_seconds);
    EXPECT_EQ(st.busy_seconds + st.communication_wait_seconds + st.idle_seconds,
              r.iteration_seconds);
  }
}

TEST(ZeroBubbleSimulation, EqualStagesShrinkTheBubbleToFPlusBMinusW) {
  // f = b = w = 1 (backward_seconds 2): ZB-H1 takes B (f + b + w) + (S - 1)(f + b - w) when
  // B >= S; 1F1B (B + S - 1)(f + b + w), its closed form.
  struct Case {
    int32_t stages;
    int64_t microbatches;
    double zero_bubble, one_f_one_b;
  };
  for (const Case& c : {Case{4, 8, 27, 33}, Case{8, 8, 31, 45}, Case{2, 5, 16, 18},
                        Case{4, 4, 15, 21}, Case{1, 3, 9, 9}}) {
    SCOPED_TRACE("S " + std::to_string(c.stages) + " B " + std::to_string(c.microbatches));
    const PipelineSimInput zb = EqualStages(kZbH1, c.stages, c.microbatches, 1, 2, 1);
    const PipelineSimResult r = Simulate(zb);
    const double f = 1, b = 1, w = 1;
    const double formula =
        static_cast<double>(c.microbatches) * (f + b + w) + (c.stages - 1) * (f + b - w);
    EXPECT_EQ(formula, c.zero_bubble);
    EXPECT_EQ(r.iteration_seconds, c.zero_bubble);
    CheckZeroBubbleTimeline(zb, r);
    // The closed form stays the stage DP's (1F1B's), whatever the schedule.
    EXPECT_EQ(r.closed_form_seconds, c.one_f_one_b);

    const PipelineSimResult one = Simulate(EqualStages(k1F1B, c.stages, c.microbatches, 1, 2, 1));
    EXPECT_EQ(one.iteration_seconds, c.one_f_one_b);
    EXPECT_LE(r.iteration_seconds, one.iteration_seconds);
  }
}

// Random dyadic stage times: with w = 0 the weight gradients take no time and ZB-H1 runs
// 1F1B's forwards and backwards at the same instants; 1F1B ignores weight_gradient_seconds.
TEST(ZeroBubbleSimulation, ZeroWeightGradientIsOneFOneB) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> eighths(1, 16);
  for (int trial = 0; trial < 40; ++trial) {
    const int32_t num_stages = 1 + trial % 5;
    const int64_t microbatches = 1 + (trial * 7) % 9;
    PipelineSimInput zb = EqualStages(kZbH1, num_stages, microbatches, 1, 1, 0);
    for (PipelineSimStage& st : zb.stages) {
      st.forward_seconds = eighths(rng) / 8.0;
      st.backward_seconds = eighths(rng) / 8.0;
      st.gradient_sync_seconds = eighths(rng) / 8.0;
    }
    // Gradients and activations with a latency: the dependencies cost time too.
    zb.intra_host.latency = 0.125;
    SCOPED_TRACE("trial " + std::to_string(trial));
    PipelineSimInput one = zb;
    one.schedule = k1F1B;
    const PipelineSimResult a = Simulate(zb);
    const PipelineSimResult b = Simulate(one);
    EXPECT_EQ(a.iteration_seconds, b.iteration_seconds);
    for (int32_t s = 0; s < num_stages; ++s) {
      const auto us = static_cast<size_t>(s);
      EXPECT_EQ(a.stages[us].busy_seconds, b.stages[us].busy_seconds);
      EXPECT_EQ(a.stages[us].idle_seconds, b.stages[us].idle_seconds);
      EXPECT_EQ(a.stages[us].finish_seconds, b.stages[us].finish_seconds);
      for (int64_t m = 0; m < microbatches; ++m) {
        for (SimEventKind kind : {SimEventKind::kForward, SimEventKind::kBackward}) {
          const SimEvent* x = FindEvent(a, s, kind, m);
          const SimEvent* y = FindEvent(b, s, kind, m);
          ASSERT_TRUE(x != nullptr && y != nullptr);
          EXPECT_EQ(x->start, y->start);
          EXPECT_EQ(x->end, y->end);
        }
      }
    }
    // 1F1B runs the backward whole: a weight-gradient share changes nothing.
    PipelineSimInput with_w = one;
    for (PipelineSimStage& st : with_w.stages) st.weight_gradient_seconds = st.backward_seconds / 2;
    const PipelineSimResult c = Simulate(with_w);
    EXPECT_EQ(c.iteration_seconds, b.iteration_seconds);
    for (const SimEvent& e : c.timeline) EXPECT_NE(e.kind, SimEventKind::kWeightGradient);
  }
}

TEST(ZeroBubbleSimulation, EveryStageHoldsMinOfStagesAndMicrobatches) {
  for (int32_t num_stages : {1, 2, 3, 4, 6}) {
    for (int64_t microbatches : {1, 2, 3, 4, 5, 8, 12}) {
      SCOPED_TRACE("S " + std::to_string(num_stages) + " B " + std::to_string(microbatches));
      PipelineSimInput in = EqualStages(kZbH1, num_stages, microbatches, 1, 2, 0.75);
      for (PipelineSimStage& st : in.stages) {
        st.activation_bytes = 1000;
        st.persistent_bytes = 5;
      }
      const PipelineSimResult r = Simulate(in);
      CheckZeroBubbleTimeline(in, r);
      const int64_t expected = std::min<int64_t>(num_stages, microbatches);
      for (int32_t s = 0; s < num_stages; ++s) {
        const SimStageStats& st = r.stages[static_cast<size_t>(s)];
        EXPECT_EQ(st.peak_in_flight, expected) << "stage " << s;
        EXPECT_EQ(st.peak_in_flight, MicrobatchesInFlight(kZbH1, num_stages, s, microbatches));
        EXPECT_EQ(st.peak_memory_bytes, 5 + expected * 1000) << "stage " << s;
      }
    }
  }
}

// Two stages, one microbatch, f = b = w = 1; the gradient takes 0.5 s (2^19 bytes at 2^20
// bytes/s). Stage 1 runs F [1, 2], B [2, 3], W [3, 4] and sends the gradient at 3, the end of
// its input gradient; stage 0's B starts at 3.5, not at 4 + 0.5, and its W ends the iteration.
TEST(ZeroBubbleSimulation, GradientLeavesAfterTheInputGradient) {
  PipelineSimInput in = EqualStages(kZbH1, 2, 1, 1, 2, 1);
  in.transfers[1].bytes = 1 << 19;  // stage 1 -> stage 0, backward
  const PipelineSimResult r = Simulate(in);
  const SimEvent* b1 = FindEvent(r, 1, SimEventKind::kBackward, 0);
  const SimEvent* w1 = FindEvent(r, 1, SimEventKind::kWeightGradient, 0);
  const SimEvent* send = FindEvent(r, 1, SimEventKind::kSend, 0);
  const SimEvent* b0 = FindEvent(r, 0, SimEventKind::kBackward, 0);
  const SimEvent* w0 = FindEvent(r, 0, SimEventKind::kWeightGradient, 0);
  ASSERT_TRUE(b1 && w1 && send && b0 && w0);
  EXPECT_EQ(b1->start, 2);
  EXPECT_EQ(b1->end, 3);
  EXPECT_EQ(w1->start, 3);
  EXPECT_EQ(w1->end, 4);
  EXPECT_EQ(send->start, 3);
  EXPECT_EQ(send->end, 3.5);
  EXPECT_EQ(b0->start, 3.5);
  EXPECT_EQ(w0->end, 5.5);
  EXPECT_EQ(r.iteration_seconds, 5.5);
  EXPECT_EQ(r.stages[0].communication_wait_seconds, 0.5);
  // Without the transfer's time stage 0's input gradient starts exactly 0.5 s earlier.
  PipelineSimInput instant = in;
  instant.transfers[1].bytes = 0;
  const PipelineSimResult q = Simulate(instant);
  const SimEvent* b0_instant = FindEvent(q, 0, SimEventKind::kBackward, 0);
  ASSERT_NE(b0_instant, nullptr);
  EXPECT_EQ(b0->start - b0_instant->start, 0.5);
  // 1F1B sends after the whole backward: stage 0's starts at 4.5.
  PipelineSimInput one = in;
  one.schedule = k1F1B;
  const PipelineSimResult o = Simulate(one);
  const SimEvent* b0_one = FindEvent(o, 0, SimEventKind::kBackward, 0);
  ASSERT_NE(b0_one, nullptr);
  EXPECT_EQ(b0_one->start, 4.5);
  EXPECT_EQ(o.iteration_seconds, 6.5);
}

// In the steady state too: every gradient is sent when its input gradient ends, and the
// receiver's input gradient of that microbatch starts no earlier than its arrival.
TEST(ZeroBubbleSimulation, EveryGradientIsSentAtItsInputGradientsEnd) {
  PipelineSimInput in = EqualStages(kZbH1, 3, 6, 1, 2, 1);
  for (PipelineSimTransfer& t : in.transfers) t.bytes = 1 << 18;  // 0.25 s
  const PipelineSimResult r = Simulate(in);
  CheckZeroBubbleTimeline(in, r);
  int64_t sends = 0;
  for (const SimEvent& e : r.timeline) {
    if (e.kind != SimEventKind::kSend || e.peer_stage >= e.stage) continue;
    ++sends;
    const SimEvent* input_gradient = FindEvent(r, e.stage, SimEventKind::kBackward, e.microbatch);
    const SimEvent* receiver = FindEvent(r, e.peer_stage, SimEventKind::kBackward, e.microbatch);
    ASSERT_TRUE(input_gradient && receiver);
    // Links are FIFO: a move may start after the sender's end, never before.
    EXPECT_GE(e.start, input_gradient->end);
    EXPECT_LE(e.end, receiver->start);
  }
  EXPECT_EQ(sends, 2 * 6);
}

TEST(ZeroBubbleSimulation, WeightGradientLongerThanTheBackwardIsRejected) {
  PipelineSimInput in = EqualStages(kZbH1, 3, 4, 1, 2, 1);
  EXPECT_TRUE(ValidatePipelineSimInput(in).ok());
  in.stages[1].weight_gradient_seconds = 2.5;
  Status st = ValidatePipelineSimInput(in);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("stages[1].weight_gradient_seconds"), std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("backward_seconds"), std::string::npos) << st.message();
  // Under 1F1B as well: the figure is wrong whichever schedule runs it.
  in.schedule = k1F1B;
  EXPECT_EQ(SimulatePipeline(in).status().code(), StatusCode::kInvalidArgument);

  in.stages[1].weight_gradient_seconds = -0.5;
  st = ValidatePipelineSimInput(in);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("stages[1].weight_gradient_seconds"), std::string::npos)
      << st.message();

  in.stages[1].weight_gradient_seconds = 2;  // the whole backward: an input gradient of 0
  EXPECT_TRUE(ValidatePipelineSimInput(in).ok());
  in.schedule = static_cast<PipelineScheduleKind>(4);  // 3 is interleaved 1F1B
  st = ValidatePipelineSimInput(in);
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(st.message().find("schedule 4"), std::string::npos) << st.message();
}

TEST(ZeroBubbleSimulation, NamesAndTimeline) {
  EXPECT_STREQ(SimEventKindName(SimEventKind::kWeightGradient), "weight-gradient");
  EXPECT_EQ(static_cast<int32_t>(SimEventKind::kWeightGradient), 7);
  EXPECT_STREQ(ScheduleDisplayName(kZbH1), "ZB-H1");
  EXPECT_STREQ(ScheduleDisplayName(k1F1B), "1F1B");
  EXPECT_STREQ(ScheduleDisplayName(PipelineScheduleKind::kGPipe), "GPipe");

  const PipelineSimInput in = EqualStages(kZbH1, 3, 4, 1, 2, 1);
  const PipelineSimResult r = Simulate(in);
  TimelineSvgOptions options;
  options.width = 1200;
  const std::string svg = TimelineSvg(in, r, options);
  EXPECT_NE(svg.find("ZB-H1"), std::string::npos);
  EXPECT_NE(svg.find(">weight gradient</text>"), std::string::npos);
  EXPECT_NE(svg.find("fill=\"#fdd0a2\""), std::string::npos);  // weight-gradient blocks
  // 1F1B draws no weight gradients and names none in its legend.
  PipelineSimInput one = in;
  one.schedule = k1F1B;
  const std::string plain = TimelineSvg(one, Simulate(one), options);
  EXPECT_EQ(plain.find("weight gradient"), std::string::npos);
  EXPECT_NE(plain.find("1F1B"), std::string::npos);
}

}  // namespace
}  // namespace alpa
