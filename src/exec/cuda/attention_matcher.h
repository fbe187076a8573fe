// The attention matcher's view of a device program (attention_plan.h): each buffer's writer,
// readers and kFree, and accessors that answer only for rounded kRun instructions of one kind,
// so that a pattern never mistakes a collective's result or a partial sum for an op's.
// Internal to exec/cuda's attention planning (and the transposed products', transposed_product.h).
#pragma once

#include <cstdint>
#include <vector>

#include "core/ir/graph.h"
#include "exec/cuda/kernel_math.h"
#include "exec/cuda/op_rounding.h"
#include "exec/program/program.h"

namespace alpa {
namespace cuda {

// What a dim of a region's buffer stands for.
enum class Label : int8_t { kBatch0, kBatch1, kQuery, kKey, kHead, kUnknown };
using Labels = std::vector<Label>;

struct ProgramIndex {
  std::vector<int32_t> writer;                // per buffer: its one writing kRun, else -1
  std::vector<std::vector<int32_t>> readers;  // per buffer: reading instructions (no kFree)
  std::vector<int32_t> write_count;           // per buffer
  std::vector<int32_t> last_write;            // per buffer: its last writing instruction, or -1
  std::vector<int32_t> free_at;               // per buffer: its kFree, or -1
};

// The program's buffers: writers, readers, write counts and kFrees.
ProgramIndex IndexProgram(const DeviceProgram& program);

// Walks the program's instructions as the attention's ops: each accessor answers "no" (-1, a
// null op) for anything that is not a rounded kRun with one writer.
class Matcher {
 public:
  Matcher(const DeviceProgram& program, const std::vector<DType>& storage)
      : program_(program), storage_(storage), index_(IndexProgram(program)) {}

  const DeviceProgram& program() const { return program_; }
  const ProgramIndex& index() const { return index_; }
  DType storage(int32_t b) const { return storage_[static_cast<size_t>(b)]; }
  const Dims& shape(int32_t b) const { return program_.buffers[static_cast<size_t>(b)].shape; }
  const Instruction& at(int32_t i) const { return program_.code[static_cast<size_t>(i)]; }
  const std::vector<int32_t>& readers(int32_t b) const {
    return index_.readers[static_cast<size_t>(b)];
  }

  // The op of the instruction writing buffer b, when it is a rounded kRun of `kind`.
  const Op* Producer(int32_t b, OpKind kind, int32_t* instruction = nullptr) const {
    if (b < 0) return nullptr;
    const int32_t w = index_.writer[static_cast<size_t>(b)];
    if (w < 0) return nullptr;
    const Op* op = RunOf(w, kind);
    if (op != nullptr && instruction != nullptr) *instruction = w;
    return op;
  }
  // The op of instruction i, when it is a rounded kRun of `kind`.
  const Op* RunOf(int32_t i, OpKind kind) const {
    const Instruction& in = at(i);
    if (in.kind != InstructionKind::kRun || !in.round || in.out < 0) return nullptr;
    const Op& op = LocalOpOf(program_, in);
    return op.kind == kind ? &op : nullptr;
  }
  // The only reader of buffer b, when b has one and it is a rounded kRun of `kind`; -1 else.
  int32_t OnlyReader(int32_t b, OpKind kind) const {
    const std::vector<int32_t>& r = readers(b);
    if (r.size() != 1 || RunOf(r[0], kind) == nullptr) return -1;
    return r[0];
  }
  // The value of constant buffer b as its storage holds it; false when b is not a constant's.
  bool ConstantValue(int32_t b, float* value) const {
    int32_t w = -1;
    const Op* op = Producer(b, OpKind::kConstant, &w);
    if (op == nullptr) return false;
    const OutputRounding rounding = ForStorage(RoundingFor(*op, true), storage(b));
    unsigned char element[8] = {};
    StoreElement(element, storage(b), 0, FinishValue(op->attrs.value, rounding));
    *value = LoadFloat(element, storage(b), 0);
    return true;
  }

 private:
  const DeviceProgram& program_;
  const std::vector<DType>& storage_;
  ProgramIndex index_;
};

// The one operand of binary instruction i that is not `x`, or -1 when neither or both are x.
int32_t OtherOperand(const Matcher& m, int32_t i, int32_t x);

}  // namespace cuda
}  // namespace alpa
