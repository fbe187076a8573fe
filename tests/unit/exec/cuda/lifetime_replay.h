// The buffer lifetimes of a device program run as the CUDA runner runs it with a fusion plan
// (exec/cuda/fusion_plan.h): skipped instructions, fused groups reading their inputs, the
// attention kernels reading and writing their views' buffers, deferred frees. For the tests of
// the plans, without a GPU.
#pragma once

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "exec/cuda/fusion_plan.h"
#include "exec/program/program.h"

namespace alpa::cuda {

// Runs the program's buffer lifetimes as the runner does with `plan`: an error for the first
// read of a buffer that is not live (the attention kernels read their views' buffers), or of a
// value the plan never computes.
inline std::string ReplayLifetimes(const DeviceProgram& p, const FusionPlan& plan) {
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
  for (size_t b = 0; b < p.buffers.size(); ++b) live[b] = p.buffers[b].persistent ? 1 : 0;
  for (size_t i = 0; i < p.code.size(); ++i) {
    if (plan.skip[i]) continue;
    const Instruction& in = p.code[i];
    std::vector<int32_t> reads = in.in, writes = {in.out};
    if (plan.group_at[i] >= 0) reads = plan.groups[static_cast<size_t>(plan.group_at[i])].inputs;
    if (plan.attention_at[i] >= 0) {
      const AttentionRegion& r = plan.attention[static_cast<size_t>(plan.attention_at[i])];
      const bool backward = r.backward_at == static_cast<int32_t>(i);
      reads = backward ? AttentionBackwardReads(r) : AttentionForwardReads(r);
      writes = AttentionWrites(r, backward);
    }
    if (in.kind == InstructionKind::kFree) {
      if (never.count(in.in[0]) != 0) {
        return "instruction " + std::to_string(i) + " (" + InstructionText(p, in) +
               ") frees a value never computed";
      }
      live[static_cast<size_t>(in.in[0])] = 0;
      continue;
    }
    for (int32_t b : reads) {
      if (never.count(b) != 0)
        return "instruction " + std::to_string(i) + " reads replaced buffer " + std::to_string(b);
      if (!live[static_cast<size_t>(b)]) {
        return "instruction " + std::to_string(i) + " reads buffer " + std::to_string(b) + " '" +
               p.buffers[static_cast<size_t>(b)].name + "', which is not live";
      }
    }
    for (int32_t b : writes) {
      if (b >= 0) live[static_cast<size_t>(b)] = 1;
    }
    for (int32_t b : plan.free_after[i]) live[static_cast<size_t>(b)] = 0;
  }
  return "";
}

}  // namespace alpa::cuda
