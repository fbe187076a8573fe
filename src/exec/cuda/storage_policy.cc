#include "exec/cuda/storage_policy.h"

namespace alpa {
namespace cuda {
namespace {

bool IsHalfFloat(DType dtype) { return dtype == DType::kF16 || dtype == DType::kBF16; }

// Instructions whose result is rounded to its dtype unless Instruction::round is false.
bool RoundsByFlag(InstructionKind kind) {
  switch (kind) {
    case InstructionKind::kRun:
    case InstructionKind::kAllReduce:
    case InstructionKind::kReduceScatter:
    case InstructionKind::kAccumulate:
    case InstructionKind::kScale:
      return true;
    default:
      return false;
  }
}

// Instructions that move their input's values into `out` as they are.
bool MovesUnrounded(InstructionKind kind) {
  switch (kind) {
    case InstructionKind::kSlice:
    case InstructionKind::kCopy:
    case InstructionKind::kAllGather:
    case InstructionKind::kAllToAll:
      return true;
    default:
      return false;
  }
}

}  // namespace

std::vector<DType> StorageDTypes(const DeviceProgram& program) {
  std::vector<DType> storage;
  for (const Buffer& b : program.buffers) storage.push_back(b.dtype);
  auto widen = [&](int32_t buffer) {
    if (buffer < 0 || static_cast<size_t>(buffer) >= storage.size()) return false;
    DType& s = storage[static_cast<size_t>(buffer)];
    if (!IsHalfFloat(s)) return false;
    s = DType::kF32;
    return true;
  };
  for (const Instruction& in : program.code) {
    if ((RoundsByFlag(in.kind) && !in.round) || in.kind == InstructionKind::kRecv) widen(in.out);
  }
  // Moves carry the widening forward; a move may precede (in code order) the write that widens
  // its source in a later step's terms, so iterate until nothing changes.
  for (bool changed = true; changed;) {
    changed = false;
    for (const Instruction& in : program.code) {
      if (!MovesUnrounded(in.kind) || in.in.empty()) continue;
      const int32_t src = in.in[0];
      if (src < 0 || static_cast<size_t>(src) >= storage.size()) continue;
      const Buffer& source = program.buffers[static_cast<size_t>(src)];
      const bool unrounded =
          IsHalfFloat(source.dtype) && storage[static_cast<size_t>(src)] == DType::kF32;
      if (unrounded && widen(in.out)) changed = true;
    }
  }
  return storage;
}

}  // namespace cuda
}  // namespace alpa
