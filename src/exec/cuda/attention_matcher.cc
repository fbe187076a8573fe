// The attention matcher's program index (attention_matcher.h).
#include "exec/cuda/attention_matcher.h"

namespace alpa {
namespace cuda {

ProgramIndex IndexProgram(const DeviceProgram& program) {
  ProgramIndex x;
  const size_t buffers = program.buffers.size();
  x.writer.assign(buffers, -1);
  x.readers.assign(buffers, {});
  x.write_count.assign(buffers, 0);
  x.last_write.assign(buffers, -1);
  x.free_at.assign(buffers, -1);
  for (size_t i = 0; i < program.code.size(); ++i) {
    const Instruction& in = program.code[i];
    const int32_t at = static_cast<int32_t>(i);
    if (in.kind == InstructionKind::kFree) {
      x.free_at[static_cast<size_t>(in.in[0])] = at;
      continue;
    }
    for (int32_t b : in.in) {
      std::vector<int32_t>& r = x.readers[static_cast<size_t>(b)];
      if (r.empty() || r.back() != at) r.push_back(at);
    }
    if (in.out < 0) continue;
    ++x.write_count[static_cast<size_t>(in.out)];
    x.last_write[static_cast<size_t>(in.out)] = at;
    x.writer[static_cast<size_t>(in.out)] = in.kind == InstructionKind::kRun ? at : -1;
  }
  for (size_t b = 0; b < buffers; ++b) {
    if (x.write_count[b] != 1 || program.buffers[b].persistent) x.writer[b] = -1;
  }
  return x;
}

int32_t OtherOperand(const Matcher& m, int32_t i, int32_t x) {
  const std::vector<int32_t>& in = m.at(i).in;
  if (in.size() != 2 || in[0] == in[1]) return -1;
  if (in[0] == x) return in[1];
  if (in[1] == x) return in[0];
  return -1;
}

}  // namespace cuda
}  // namespace alpa
