// The buffer lifetimes of a device program run as the CUDA runner runs it with a fusion plan
// (exec/cuda/fusion_plan.h): skipped instructions, fused groups reading their inputs, the
// attention kernels reading and writing their views' buffers, products written transposed in
// their dots' place, deferred frees. For the tests of the plans, without a GPU.
#pragma once

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "exec/cuda/fusion_plan.h"
#include "exec/program/program.h"
#include "exec/runtime/tensor_boxes.h"

namespace alpa::cuda {

struct LifetimeReplay {
  std::string error;       // empty when every read finds its buffer live
  int64_t peak_bytes = 0;  // the most bytes of buffers live at once, as the runner counts them
};

// Runs the program's buffer lifetimes as the runner does with `plan` (an empty plan: every
// instruction alone, as the runner runs without fusion): an error for the first
// read of a buffer that is not live (the attention kernels read their views' buffers), or of a
// value the plan never computes; and the peak of the live buffers' bytes (elements times the
// value dtype's width, as CudaRunner's peak_bytes counts them; the kernels' scratch and row
// statistics not included).
inline LifetimeReplay ReplayBuffers(const DeviceProgram& p, const FusionPlan& plan) {
  LifetimeReplay replay;
  int64_t live_bytes = 0;
  auto bytes_of = [&](int32_t b) {
    const Buffer& buffer = p.buffers[static_cast<size_t>(b)];
    return ElementCountOf(buffer.shape) * DTypeBytes(buffer.dtype);
  };
  auto set_live = [&](std::vector<char>& live, int32_t b, char on) {
    char& state = live[static_cast<size_t>(b)];
    if (state == on) return;
    live_bytes += on ? bytes_of(b) : -bytes_of(b);
    replay.peak_bytes = std::max(replay.peak_bytes, live_bytes);
    state = on;
  };
  std::vector<char> live(p.buffers.size(), 0);
  std::set<int32_t> never;  // written only by replaced ops
  for (const AttentionRegion& r : plan.attention) {
    const std::vector<int32_t> out = {r.o.buffer, r.dq.buffer, r.dk.buffer, r.dv.buffer};
    for (int32_t m : r.members) {
      const int32_t b = p.code[static_cast<size_t>(m)].out;
      if (std::find(out.begin(), out.end(), b) == out.end()) never.insert(b);
    }
  }
  for (const FusedGroup& g : plan.groups) {
    for (int32_t m : g.members) never.insert(p.code[static_cast<size_t>(m)].out);
  }
  for (const FusedGroup& g : plan.groups) {
    for (int32_t b : FusedGroupWrites(g)) never.erase(b);
  }
  for (const TransposedProduct& t : plan.products)
    never.insert(p.code[static_cast<size_t>(t.dot_at)].out);
  for (size_t b = 0; b < p.buffers.size(); ++b) {
    if (p.buffers[b].persistent) set_live(live, static_cast<int32_t>(b), 1);
  }
  const bool fusing = !plan.empty();  // as the runner decides
  for (size_t i = 0; i < p.code.size(); ++i) {
    if (fusing && plan.skip[i]) continue;
    const Instruction& in = p.code[i];
    std::vector<int32_t> reads = in.in, writes = {in.out};
    if (fusing && plan.group_at[i] >= 0) {
      reads = plan.groups[static_cast<size_t>(plan.group_at[i])].inputs;
      writes = FusedGroupWrites(plan.groups[static_cast<size_t>(plan.group_at[i])]);
    }
    if (fusing && plan.product_at[i] >= 0) {
      const TransposedProduct& t = plan.products[static_cast<size_t>(plan.product_at[i])];
      writes = {p.code[static_cast<size_t>(t.transpose_at)].out};
    }
    if (fusing && plan.attention_at[i] >= 0) {
      const AttentionRegion& r = plan.attention[static_cast<size_t>(plan.attention_at[i])];
      const bool backward = r.backward_at == static_cast<int32_t>(i);
      reads = backward ? AttentionBackwardReads(r) : AttentionForwardReads(r);
      writes = AttentionWrites(r, backward);
    }
    if (in.kind == InstructionKind::kFree) {
      if (never.count(in.in[0]) != 0) {
        replay.error = "instruction " + std::to_string(i) + " (" + InstructionText(p, in) +
                       ") frees a value never computed";
        return replay;
      }
      set_live(live, in.in[0], 0);
      continue;
    }
    for (int32_t b : reads) {
      if (never.count(b) != 0) {
        replay.error =
            "instruction " + std::to_string(i) + " reads replaced buffer " + std::to_string(b);
        return replay;
      }
      if (!live[static_cast<size_t>(b)]) {
        replay.error = "instruction " + std::to_string(i) + " reads buffer " + std::to_string(b) +
                       " '" + p.buffers[static_cast<size_t>(b)].name + "', which is not live";
        return replay;
      }
    }
    for (int32_t b : writes) {
      if (b >= 0) set_live(live, b, 1);
    }
    if (fusing) {
      for (int32_t b : plan.free_after[i]) set_live(live, b, 0);
    }
  }
  return replay;
}

inline std::string ReplayLifetimes(const DeviceProgram& p, const FusionPlan& plan) {
  return ReplayBuffers(p, plan).error;
}

}  // namespace alpa::cuda
