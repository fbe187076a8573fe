#include "exec/runtime/host_collective.h"

#include <utility>
#include <vector>

#include "exec/runtime/tensor_boxes.h"

namespace alpa {
namespace {

ReduceOp ToReduceOp(CollectiveReduce r) {
  return r == CollectiveReduce::kMax ? ReduceOp::kMax : ReduceOp::kSum;
}

// Position of `device` in `group`.
int64_t PositionIn(const std::vector<int32_t>& group, int32_t device) {
  for (size_t i = 0; i < group.size(); ++i) {
    if (group[i] == device) return static_cast<int64_t>(i);
  }
  return -1;
}

// The box of piece `i` of `n` along `dim` of `shape`.
void PieceBox(const Dims& shape, int32_t dim, int64_t n, int64_t i, std::vector<int64_t>& offsets,
              std::vector<int64_t>& sizes) {
  offsets.assign(shape.size(), 0);
  sizes = shape;
  sizes[static_cast<size_t>(dim)] = shape[static_cast<size_t>(dim)] / n;
  offsets[static_cast<size_t>(dim)] = i * sizes[static_cast<size_t>(dim)];
}

// src cut into n pieces along `dim`, piece after piece (dense).
std::vector<double> PiecesAlong(const HostTensor& src, int32_t dim, int64_t n) {
  std::vector<double> chunks(src.data.size());
  std::vector<int64_t> offsets, sizes;
  const int64_t piece = src.size() / n;
  for (int64_t i = 0; i < n; ++i) {
    PieceBox(src.shape, dim, n, i, offsets, sizes);
    ExtractBox(src.data.data(), src.shape, offsets, sizes, chunks.data() + i * piece);
  }
  return chunks;
}

}  // namespace

Status RunCollectiveOnHost(Communicator& comm, const Instruction& in, int32_t device,
                           const HostTensor& src, HostTensor& out) {
  const int64_t n = static_cast<int64_t>(in.group.size());
  if (PositionIn(in.group, device) < 0) {
    return InternalError("the device is not in the collective's group");
  }
  const int64_t count = src.size();
  switch (in.kind) {
    case InstructionKind::kAllReduce: {
      std::vector<double> data = src.data;
      ALPA_RETURN_IF_ERROR(comm.AllReduce(in.group, ToReduceOp(in.reduce), data.data(), count));
      out.data = std::move(data);
      return Status::Ok();
    }
    case InstructionKind::kAllGather: {
      std::vector<double> chunks(static_cast<size_t>(count * n));
      ALPA_RETURN_IF_ERROR(comm.AllGather(in.group, src.data.data(), count, chunks.data()));
      std::vector<int64_t> offsets(src.shape.size(), 0);
      for (int64_t i = 0; i < n; ++i) {
        offsets[static_cast<size_t>(in.dim)] = i * src.shape[static_cast<size_t>(in.dim)];
        InsertBox(chunks.data() + i * count, offsets, src.shape, out.data.data(), out.shape);
      }
      return Status::Ok();
    }
    case InstructionKind::kReduceScatter: {
      const std::vector<double> chunks = PiecesAlong(src, in.dim, n);
      return comm.ReduceScatter(in.group, ToReduceOp(in.reduce), chunks.data(), count / n,
                                out.data.data());
    }
    case InstructionKind::kAllToAll: {
      const std::vector<double> chunks = PiecesAlong(src, in.split_dim, n);
      const int64_t piece = count / n;
      std::vector<double> received(static_cast<size_t>(count));
      ALPA_RETURN_IF_ERROR(comm.AllToAll(in.group, chunks.data(), piece, received.data()));
      // Each received chunk has sizes: src's shape cut along split_dim; it goes to position i
      // along dim.
      std::vector<int64_t> offsets, sizes;
      PieceBox(src.shape, in.split_dim, n, 0, offsets, sizes);
      std::vector<int64_t> at(src.shape.size(), 0);
      for (int64_t i = 0; i < n; ++i) {
        at[static_cast<size_t>(in.dim)] = i * sizes[static_cast<size_t>(in.dim)];
        InsertBox(received.data() + i * piece, at, sizes, out.data.data(), out.shape);
      }
      return Status::Ok();
    }
    default:
      return InternalError("not a collective");
  }
}

}  // namespace alpa
