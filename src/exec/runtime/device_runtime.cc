#include "exec/runtime/device_runtime.h"

#include <chrono>
#include <string>
#include <utility>

#include "exec/runtime/host_collective.h"
#include "exec/runtime/masked_indexing.h"
#include "exec/runtime/runner_inputs.h"
#include "exec/runtime/tensor_boxes.h"

namespace alpa {
namespace {

using Clock = std::chrono::steady_clock;

int64_t BytesOf(const HostTensor& t) {
  return static_cast<int64_t>(t.data.size()) * DTypeBytes(t.dtype);
}

void Round(HostTensor& t) {
  if (t.dtype == DType::kF64) return;
  for (double& v : t.data) v = RoundToDType(v, t.dtype);
}

}  // namespace

DeviceRuntime::DeviceRuntime(const DeviceProgram& program)
    : program_(program), buffers_(program.buffers.size()), allocated_(program.buffers.size(), 0) {}

HostTensor& DeviceRuntime::Allocate(int32_t buffer) {
  HostTensor& t = buffers_[static_cast<size_t>(buffer)];
  if (allocated_[static_cast<size_t>(buffer)]) live_bytes_ -= BytesOf(t);
  const Buffer& b = program_.buffers[static_cast<size_t>(buffer)];
  t.shape = b.shape;
  t.dtype = b.dtype;
  t.data.assign(static_cast<size_t>(ElementCountOf(b.shape)), 0.0);
  allocated_[static_cast<size_t>(buffer)] = 1;
  live_bytes_ += BytesOf(t);
  peak_bytes_ = std::max(peak_bytes_, live_bytes_);
  return t;
}

void DeviceRuntime::Release(int32_t buffer) {
  if (!allocated_[static_cast<size_t>(buffer)]) return;
  HostTensor& t = buffers_[static_cast<size_t>(buffer)];
  live_bytes_ -= BytesOf(t);
  std::vector<double>().swap(t.data);
  allocated_[static_cast<size_t>(buffer)] = 0;
}

Status DeviceRuntime::LoadParameters(const ParameterValue& value, const Graph& graph,
                                     int32_t tensor) {
  for (const ParameterBinding& b : program_.parameters) {
    if (tensor >= 0 && b.tensor != tensor) continue;
    Result<const HostTensor*> checked =
        CheckedParameterValue(value, graph, b.tensor, program_.device);
    if (!checked.ok()) return checked.status();
    const HostTensor* full = checked.value();
    HostTensor& t = Allocate(b.buffer);
    if (b.owner) ExtractBox(full->data.data(), full->shape, b.offsets, b.sizes, t.data.data());
    Round(t);
  }
  return Status::Ok();
}

Result<std::vector<ParameterTile>> DeviceRuntime::FetchParameters() const {
  std::vector<ParameterTile> tiles;
  for (const ParameterBinding& b : program_.parameters) {
    if (!b.owner) continue;
    tiles.push_back({b.tensor, b.offsets, b.sizes, Get(b.buffer).data, b.fetch});
  }
  return tiles;
}

Result<StepReport> DeviceRuntime::RunStep(Communicator& comm, const MicrobatchInput& input,
                                          const Graph& graph) {
  StepReport report;
  report.seconds_by_kind.assign(static_cast<size_t>(InstructionKind::kReportLoss) + 1, 0.0);
  peak_bytes_ = live_bytes_;
  const Clock::time_point start = Clock::now();
  for (size_t i = 0; i < program_.code.size(); ++i) {
    const Instruction& in = program_.code[i];
    const Clock::time_point t0 = Clock::now();
    Status s = Execute(comm, in, input, graph, report);
    if (!s.ok()) {
      if (s.code() == StatusCode::kCancelled) return s;  // another device failed: its message
      return Status(s.code(), "device " + std::to_string(program_.device) + " instruction " +
                                  std::to_string(i) + " (" + InstructionText(program_, in) +
                                  "): " + s.message());
    }
    report.seconds_by_kind[static_cast<size_t>(in.kind)] +=
        std::chrono::duration<double>(Clock::now() - t0).count();
  }
  report.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  report.peak_bytes = peak_bytes_;
  return report;
}

Status DeviceRuntime::Execute(Communicator& comm, const Instruction& in,
                              const MicrobatchInput& input, const Graph& graph,
                              StepReport& report) {
  switch (in.kind) {
    case InstructionKind::kRun: {
      const Graph& local = program_.local_ops[static_cast<size_t>(in.local_op)];
      const int32_t id = local.size() - 1;
      std::vector<const HostTensor*> operands;
      for (int32_t b : in.in) operands.push_back(&Get(b));
      const Op& op = local.op(id);
      HostTensor& out = Allocate(in.out);
      if (in.axis_size >= 0 && op.kind == OpKind::kGather) {
        MaskedGather(op, *operands[0], *operands[1], in.axis_offset, in.axis_size, out);
      } else if (in.axis_size >= 0 && op.kind == OpKind::kScatterAdd) {
        MaskedScatterAdd(op, *operands[0], *operands[1], *operands[2], in.axis_offset, in.axis_size,
                         out);
        if (in.round) Round(out);
      } else {
        out = EvaluateValidatedOp(local, id, operands,
                                  in.round ? ResultRounding::kRound : ResultRounding::kKeepExact);
      }
      return Status::Ok();
    }
    case InstructionKind::kAllReduce:
    case InstructionKind::kAllGather:
    case InstructionKind::kReduceScatter:
    case InstructionKind::kAllToAll:
      return RunCollective(comm, in, report);
    case InstructionKind::kSlice: {
      const HostTensor& src = Get(in.in[0]);
      if (!BoxInside(src.shape, in.offsets, in.sizes)) {
        return InternalError("the slice box lies outside its buffer");
      }
      HostTensor& out = Allocate(in.out);
      ExtractBox(src.data.data(), src.shape, in.offsets, in.sizes, out.data.data());
      return Status::Ok();
    }
    case InstructionKind::kSend: {
      const HostTensor& src = Get(in.in[0]);
      if (!BoxInside(src.shape, in.offsets, in.sizes)) {
        return InternalError("the sent box lies outside its buffer");
      }
      std::vector<double> box(static_cast<size_t>(ElementCountOf(in.sizes)));
      ExtractBox(src.data.data(), src.shape, in.offsets, in.sizes, box.data());
      ALPA_RETURN_IF_ERROR(
          comm.Send(in.peer, in.tag, box.data(), static_cast<int64_t>(box.size())));
      report.moves.push_back(MoveOf(in));
      return Status::Ok();
    }
    case InstructionKind::kRecv: {
      HostTensor& dst = buffers_[static_cast<size_t>(in.out)];
      if (!BoxInside(dst.shape, in.offsets, in.sizes)) {
        return InternalError("the received box lies outside its buffer");
      }
      std::vector<double> box(static_cast<size_t>(ElementCountOf(in.sizes)));
      ALPA_RETURN_IF_ERROR(
          comm.Recv(in.peer, in.tag, box.data(), static_cast<int64_t>(box.size())));
      InsertBox(box.data(), in.offsets, in.sizes, dst.data.data(), dst.shape);
      report.moves.push_back(MoveOf(in));
      return Status::Ok();
    }
    case InstructionKind::kFeed: {
      Result<const HostTensor*> checked =
          CheckedMicrobatchInput(input, graph, in.tensor, in.microbatch, in.offsets, in.sizes);
      if (!checked.ok()) return checked.status();
      const HostTensor* full = checked.value();
      HostTensor& out = Allocate(in.out);
      ExtractBox(full->data.data(), full->shape, in.offsets, in.sizes, out.data.data());
      Round(out);
      return Status::Ok();
    }
    case InstructionKind::kAccumulate: {
      const HostTensor& src = Get(in.in[0]);
      HostTensor& dst = buffers_[static_cast<size_t>(in.out)];
      if (src.data.size() != dst.data.size()) {
        return InternalError("accumulating a buffer of another size");
      }
      for (size_t i = 0; i < src.data.size(); ++i) dst.data[i] += src.data[i];
      if (in.round) Round(dst);
      return Status::Ok();
    }
    case InstructionKind::kZero:
      Allocate(in.out);
      return Status::Ok();
    case InstructionKind::kScale: {
      const std::vector<double> src = Get(in.in[0]).data;
      HostTensor& out = Allocate(in.out);
      for (size_t i = 0; i < src.size(); ++i) out.data[i] = src[i] * in.value;
      if (in.round) Round(out);
      return Status::Ok();
    }
    case InstructionKind::kCopy: {
      const std::vector<double> src = Get(in.in[0]).data;
      HostTensor& out = allocated_[static_cast<size_t>(in.out)]
                            ? buffers_[static_cast<size_t>(in.out)]
                            : Allocate(in.out);
      if (src.size() != out.data.size()) return InternalError("copying a buffer of another size");
      out.data = src;
      return Status::Ok();
    }
    case InstructionKind::kFree:
      Release(in.in[0]);
      return Status::Ok();
    case InstructionKind::kReportLoss:
      report.losses.push_back({in.microbatch, Get(in.in[0]).data.at(0)});
      return Status::Ok();
  }
  return InternalError("unknown instruction kind");
}

Status DeviceRuntime::RunCollective(Communicator& comm, const Instruction& in, StepReport& report) {
  // The source is copied first: the output may reuse the input's buffer.
  const HostTensor src = Get(in.in[0]);
  HostTensor& out = Allocate(in.out);
  ALPA_RETURN_IF_ERROR(RunCollectiveOnHost(comm, in, program_.device, src, out));
  const bool reduces =
      in.kind == InstructionKind::kAllReduce || in.kind == InstructionKind::kReduceScatter;
  if (reduces && in.round) Round(out);
  report.moves.push_back(MoveOf(in));
  return Status::Ok();
}

}  // namespace alpa
