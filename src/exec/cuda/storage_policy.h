// The element type a CUDA runner keeps each buffer of a program in (its storage dtype).
//
// The CPU runtime holds every value as a double and rounds it to its dtype only where the
// instruction says so (Instruction::round); a value left unrounded (a partial sum that a later
// reduction completes, a microbatch's gradient addend) keeps more precision than its dtype.
// On the GPU such a value of a 16-bit float dtype is kept in f32 instead, so that a partial sum
// is not rounded early; every other buffer is kept in its dtype. A buffer is kept in f32 when
// its dtype is f16 or bf16 and one of the instructions that write it
//  - computes with round == false (kRun, kAllReduce, kReduceScatter, kAccumulate, kScale);
//  - moves values without rounding (kSlice, kCopy, kAllGather, kAllToAll) out of a buffer kept
//    in f32 (followed through the program to a fixed point);
//  - receives them (kRecv): the sender's buffer may hold an unrounded value and the receiver
//    cannot know, so received 16-bit values are kept in f32 (a receive buffer is small: one
//    microbatch's boundary tensor).
// Live and peak bytes are counted in the buffers' dtypes whatever the storage, as the planner
// and the CPU runtime count them.
#pragma once

#include <vector>

#include "core/util/dtype.h"
#include "exec/program/program.h"

namespace alpa {
namespace cuda {

// Per buffer of `program`, its storage dtype.
std::vector<DType> StorageDTypes(const DeviceProgram& program);

}  // namespace cuda
}  // namespace alpa
