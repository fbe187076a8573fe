#include "exec/cuda/buffer_handover.h"

#include <algorithm>

#include "exec/runtime/tensor_boxes.h"

namespace alpa {
namespace cuda {
namespace {

// How far after a move its source's kFree is looked for (it is the next instruction or so).
constexpr size_t kLookahead = 64;

// Whether instruction i moves values without changing them: a kCopy, or a reshape.
bool IsMove(const DeviceProgram& program, const Instruction& in) {
  if (in.in.size() != 1 || in.out < 0) return false;
  if (in.kind == InstructionKind::kCopy) return true;
  if (in.kind != InstructionKind::kRun) return false;
  return LocalOpOf(program, in).kind == OpKind::kReshape;
}

// Whether instruction or group j (as the runner runs it) touches buffer b.
bool Touches(const DeviceProgram& program, const FusionPlan& fusion, size_t j, int32_t b) {
  const Instruction& in = program.code[j];
  if (in.out == b || std::find(in.in.begin(), in.in.end(), b) != in.in.end()) return true;
  const int32_t group = j < fusion.group_at.size() ? fusion.group_at[j] : -1;
  if (group >= 0) {
    const FusedGroup& g = fusion.groups[static_cast<size_t>(group)];
    const std::vector<int32_t> writes = FusedGroupWrites(g);
    if (std::find(g.inputs.begin(), g.inputs.end(), b) != g.inputs.end() ||
        std::find(writes.begin(), writes.end(), b) != writes.end()) {
      return true;
    }
  }
  const int32_t region = j < fusion.attention_at.size() ? fusion.attention_at[j] : -1;
  if (region >= 0) {
    const AttentionRegion& r = fusion.attention[static_cast<size_t>(region)];
    const bool backward = static_cast<int32_t>(j) == r.backward_at;
    std::vector<int32_t> touched = backward ? AttentionBackwardReads(r) : AttentionForwardReads(r);
    for (int32_t w : AttentionWrites(r, backward)) touched.push_back(w);
    if (std::find(touched.begin(), touched.end(), b) != touched.end()) return true;
  }
  if (j < fusion.free_after.size()) {
    const std::vector<int32_t>& freed = fusion.free_after[j];
    if (std::find(freed.begin(), freed.end(), b) != freed.end()) return true;
  }
  return false;
}

bool Skipped(const FusionPlan& fusion, size_t j) {
  return j < fusion.skip.size() && fusion.skip[j] != 0;
}

bool CanHandOver(const DeviceProgram& program, const std::vector<DType>& storage,
                 const FusionPlan& fusion, size_t i) {
  const Instruction& in = program.code[i];
  if (Skipped(fusion, i) || (i < fusion.group_at.size() && fusion.group_at[i] >= 0) ||
      (i < fusion.attention_at.size() && fusion.attention_at[i] >= 0)) {
    return false;
  }
  if (!IsMove(program, in)) return false;
  const int32_t src = in.in[0], dst = in.out;
  if (src == dst) return false;
  const Buffer& s = program.buffers[static_cast<size_t>(src)];
  const Buffer& d = program.buffers[static_cast<size_t>(dst)];
  if (s.persistent || s.dtype != d.dtype || ElementCountOf(s.shape) != ElementCountOf(d.shape) ||
      storage[static_cast<size_t>(src)] != storage[static_cast<size_t>(dst)]) {
    return false;
  }
  const size_t end = std::min(program.code.size(), i + 1 + kLookahead);
  for (size_t j = i + 1; j < end; ++j) {
    const Instruction& next = program.code[j];
    if (next.kind == InstructionKind::kFree && next.in[0] == src) return !Skipped(fusion, j);
    if (Touches(program, fusion, j, src)) return false;
  }
  return false;  // freed far later, or never (read by the next step)
}

}  // namespace

std::vector<char> PlanHandovers(const DeviceProgram& program, const std::vector<DType>& storage,
                                const FusionPlan& fusion) {
  std::vector<char> handover(program.code.size(), 0);
  for (size_t i = 0; i < program.code.size(); ++i) {
    handover[i] = CanHandOver(program, storage, fusion, i) ? 1 : 0;
  }
  return handover;
}

}  // namespace cuda
}  // namespace alpa
