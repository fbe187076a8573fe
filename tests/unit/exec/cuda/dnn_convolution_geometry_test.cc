// The mapping of convolution ops onto cuDNN's forward convolution (exec/cuda/dnn_convolution_
// geometry.h), without a GPU: cuDNN's documented cross-correlation, evaluated here on the mapped
// geometry, equals the interpreter's convolution on random operands over 1 to 3 spatial dims,
// feature groups, asymmetric paddings, strides and dilations; what cuDNN cannot compute is
// refused with the reason; cuDNN itself (loaded, no GPU needed for this) accepts the tensor,
// convolution and operation descriptors of every geometry in every data type the runner asks
// for, and refuses an inconsistent one; and the convolutions of a WResNet training step are
// counted by the path they take.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/ir/graph_builder.h"
#include "exec/cpu/interpreter.h"
#include "exec/cuda/dnn_convolution.h"
#include "exec/cuda/dnn_convolution_geometry.h"
#include "exec/cuda/dnn_loader.h"
#include "support/small_plans.h"

namespace alpa::cuda {
namespace {

// cuDNN's forward problem as its documentation defines it, on dense row-major [N, C,
// spatial...] tensors: y[n, k, p] = sum over c < C / groups and the kernel positions r of
// x[n, g * C / groups + c, p * stride - pre + r * dilation] * w[k, c, r'], g = k / (K / groups),
// positions outside x reading zero, r' = r (cross-correlation: the forward operation) or the
// flipped position (convolution mode: the backward-data operation). Forward: returns y from x;
// backward data: returns dx = the problem's transpose applied to dy (passed as `in`).
std::vector<double> DnnReference(const DnnConvGeometry& g, const std::vector<double>& in,
                                 const std::vector<double>& w) {
  const bool forward = g.direction == DnnConvDirection::kForward;
  const size_t spatial = g.x_dims.size() - 2;
  const int64_t batch = g.x_dims[0], channels = g.x_dims[1], features = g.w_dims[0];
  const int64_t group_channels = g.w_dims[1], group_features = features / g.groups;
  int64_t x_count = 1, kernel_count = 1, y_count = 1;
  for (size_t i = 0; i < spatial; ++i) {
    x_count *= g.x_dims[i + 2];
    kernel_count *= g.w_dims[i + 2];
    y_count *= g.y_dims[i + 2];
  }
  std::vector<double> out(
      static_cast<size_t>(forward ? batch * features * y_count : batch * channels * x_count), 0.0);
  for (int64_t n = 0; n < batch; ++n) {
    for (int64_t k = 0; k < features; ++k) {
      const int64_t group = k / group_features;
      for (int64_t p = 0; p < y_count; ++p) {
        for (int64_t c = 0; c < group_channels; ++c) {
          for (int64_t r = 0; r < kernel_count; ++r) {
            // Spatial coordinates of p and r (row-major), and the x position they meet.
            int64_t pp = p, rr = r, offset = 0, stride = 1;
            bool inside = true;
            for (size_t i = spatial; i-- > 0;) {
              const int64_t y_i = pp % g.y_dims[i + 2], kernel_i = rr % g.w_dims[i + 2];
              pp /= g.y_dims[i + 2];
              rr /= g.w_dims[i + 2];
              const int64_t at = y_i * g.strides[i] - g.pre_padding[i] + kernel_i * g.dilations[i];
              inside = inside && at >= 0 && at < g.x_dims[i + 2];
              offset += at * stride;
              stride *= g.x_dims[i + 2];
            }
            if (!inside) continue;
            const int64_t channel = group * group_channels + c;
            const size_t xi = static_cast<size_t>((n * channels + channel) * x_count + offset);
            const size_t yi = static_cast<size_t>((n * features + k) * y_count + p);
            const int64_t tap = forward ? r : kernel_count - 1 - r;
            const double wv = w[static_cast<size_t>((k * group_channels + c) * kernel_count + tap)];
            if (forward) {
              out[yi] += in[xi] * wv;
            } else {
              out[xi] += in[yi] * wv;
            }
          }
        }
      }
    }
  }
  return out;
}

// The kernel [O, C, spatial...] with dims 0 and 1 swapped, as the runner passes it to cuDNN's
// backward-data operation.
std::vector<double> SwapKernelDims(const Dims& shape, const std::vector<double>& w) {
  const int64_t o = shape[0], c = shape[1];
  const int64_t rest = static_cast<int64_t>(w.size()) / (o * c);
  std::vector<double> swapped(w.size());
  for (int64_t i = 0; i < o; ++i) {
    for (int64_t j = 0; j < c; ++j) {
      for (int64_t r = 0; r < rest; ++r) {
        swapped[static_cast<size_t>((j * o + i) * rest + r)] =
            w[static_cast<size_t>((i * c + j) * rest + r)];
      }
    }
  }
  return swapped;
}

struct ConvCase {
  Dims x, w;
  Dims strides, lo, hi, lhs_dilation, rhs_dilation;
  int64_t groups = 1;
};

Graph ConvGraph(const ConvCase& c) {
  GraphBuilder b;
  const int32_t x = b.Parameter(c.x, DType::kF64, TensorRole::kInput, "x");
  const int32_t w = b.Parameter(c.w, DType::kF64, TensorRole::kParameter, "w");
  b.AddOutput(b.Convolution(x, w, c.strides, c.lo, c.hi, c.lhs_dilation, c.rhs_dilation, c.groups));
  Result<Graph> g = std::move(b).Finish();
  EXPECT_TRUE(g.ok()) << g.status().message();
  return g.ok() ? std::move(g).value() : Graph{};
}

HostTensor Random(const Dims& shape, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  HostTensor t{shape, DType::kF64, {}};
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  for (int64_t i = 0; i < n; ++i) t.data.push_back(u(rng));
  return t;
}

// Geometries cuDNN takes: 1 to 3 spatial dims, groups, paddings, strides, dilations.
std::vector<ConvCase> MappedCases() {
  return {
      // 1 spatial dim (a leading spatial dim of 1 is added), stride 2, asymmetric padding.
      {{2, 3, 9}, {4, 3, 3}, {2}, {1}, {2}, {1}, {1}},
      // 2 spatial dims, groups, both paddings, a dilation, odd sizes.
      {{1, 4, 5, 6}, {6, 2, 3, 2}, {1, 2}, {1, 0}, {0, 1}, {1, 1}, {1, 2}, 2},
      // A ResNet 3x3 with padding 1 and a strided 1x1.
      {{2, 8, 7, 7}, {5, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}},
      {{2, 8, 7, 7}, {6, 8, 1, 1}, {2, 2}, {0, 0}, {0, 0}, {1, 1}, {1, 1}},
      // Depthwise (groups = channels).
      {{1, 6, 5, 5}, {6, 1, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, 6},
      // 3 spatial dims with strides, dilations and uneven padding.
      {{1, 2, 5, 4, 6}, {3, 2, 2, 3, 2}, {2, 1, 2}, {0, 1, 1}, {1, 0, 2}, {1, 1, 1}, {2, 1, 1}},
      // A weight gradient's shape: the batch as channels, a dilation as large as a stride.
      {{4, 3, 8, 8}, {5, 3, 4, 4}, {1, 1}, {1, 1}, {0, 0}, {1, 1}, {2, 2}},
      // Input gradients of strided convolutions (backward data): a 3x3 of stride 2 and padding
      // 1 on 8 and on 7 (whose last row no output reads), a 1x1 of stride 2, 1 and 3 spatial
      // dims, a kernel dilation.
      {{2, 5, 4, 4}, {3, 5, 3, 3}, {1, 1}, {1, 1}, {2, 2}, {2, 2}, {1, 1}},
      {{2, 5, 3, 3}, {3, 5, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {2, 2}, {1, 1}},
      {{2, 6, 4, 4}, {3, 6, 1, 1}, {1, 1}, {0, 0}, {1, 1}, {2, 2}, {1, 1}},
      {{1, 4, 5}, {2, 4, 3}, {1}, {2}, {3}, {3}, {1}},
      {{1, 2, 3, 2, 3}, {3, 2, 2, 2, 3}, {1, 1, 1}, {1, 0, 2}, {1, 1, 2}, {2, 1, 2}, {1, 1, 2}},
  };
}

TEST(DnnConvolutionGeometry, CudnnsForwardConvolutionOnTheGeometryEqualsTheInterpreter) {
  std::mt19937_64 rng(11);
  for (const ConvCase& c : MappedCases()) {
    const Graph graph = ConvGraph(c);
    const int32_t id = graph.outputs[0];
    Result<DnnConvGeometry> g = DnnConvGeometryFor(graph, id);
    ASSERT_TRUE(g.ok()) << g.status().message();
    ASSERT_GE(g.value().x_dims.size(), 4u);
    ASSERT_EQ(g.value().x_dims.size(), g.value().w_dims.size());
    ASSERT_EQ(g.value().x_dims.size(), g.value().y_dims.size());
    const HostTensor x = Random(c.x, rng), w = Random(c.w, rng);
    Result<HostTensor> want = EvaluateOp(graph, id, {&x, &w});
    ASSERT_TRUE(want.ok()) << want.status().message();
    const bool forward = g.value().direction == DnnConvDirection::kForward;
    const bool dilated = c.lhs_dilation != Dims(c.lhs_dilation.size(), 1);
    EXPECT_EQ(forward, !dilated) << DnnConvGeometryKey(g.value());
    const std::vector<double> got =
        DnnReference(g.value(), x.data, forward ? w.data : SwapKernelDims(c.w, w.data));
    ASSERT_EQ(got.size(), want.value().data.size()) << DnnConvGeometryKey(g.value());
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_NEAR(got[i], want.value().data[i], 1e-12)
          << "element " << i << " of " << DnnConvGeometryKey(g.value());
    }
  }
}

TEST(DnnConvolutionGeometry, CudnnAcceptsTheOperationOfEveryGeometryAndRefusesABadOne) {
  Result<const DnnApi*> dnn = LoadDnn();
  if (!dnn.ok()) GTEST_SKIP() << "no cuDNN here: " << dnn.status().message();
  // The request types the runner makes: both operands in one type, the result in it or f32.
  const std::vector<std::pair<DType, DType>> types{{DType::kBF16, DType::kBF16},
                                                   {DType::kF16, DType::kF16},
                                                   {DType::kF32, DType::kF32},
                                                   {DType::kBF16, DType::kF32}};
  int64_t checked = 0;
  for (const ConvCase& c : MappedCases()) {
    const Graph graph = ConvGraph(c);
    Result<DnnConvGeometry> g = DnnConvGeometryFor(graph, graph.outputs[0]);
    ASSERT_TRUE(g.ok()) << g.status().message();
    for (const auto& [type, result_type] : types) {
      // Aligned to 16 bytes, or only to the element (a view into a buffer).
      for (bool packed : {true, false}) {
        DnnConvRequest r;
        r.geometry = g.value();
        r.type = type;
        r.result_type = result_type;
        r.input_alignment = r.kernel_alignment = packed ? 16 : DTypeBytes(type);
        r.result_alignment = packed ? 16 : DTypeBytes(result_type);
        const Status s = CheckDnnConvolutionOperation(r, "case");
        EXPECT_TRUE(s.ok()) << DnnConvGeometryKey(r.geometry) << " " << DTypeName(type) << ": "
                            << s.message();
        ++checked;
      }
    }
  }
  EXPECT_EQ(checked, static_cast<int64_t>(MappedCases().size() * types.size() * 2));
  // A result shape that does not follow from the input, kernel and convolution: cuDNN says no.
  const Graph graph = ConvGraph(MappedCases()[2]);
  DnnConvRequest bad;
  bad.geometry = DnnConvGeometryFor(graph, graph.outputs[0]).value();
  bad.geometry.y_dims[3] += 1;
  const Status s = CheckDnnConvolutionOperation(bad, "convolution op 2");
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_NE(s.message().find("convolution op 2: convolution operation: cuDNN CUDNN_STATUS_"),
            std::string::npos)
      << s.message();
}

TEST(DnnConvolutionGeometry, WhatCudnnCannotComputeIsRefusedWithTheReason) {
  struct Refused {
    ConvCase c;
    std::string reason;
  };
  const std::vector<Refused> refused{
      {{{1, 4, 5}, {4, 2, 2}, {1}, {1}, {1}, {2}, {1}, 2}, "an input dilation with feature groups"},
      {{{1, 2, 5}, {3, 2, 2}, {2}, {1}, {1}, {2}, {1}},
       "an input dilation with output stride 2 on spatial dim 0"},
      {{{1, 2, 5}, {3, 2, 2}, {1}, {2}, {1}, {2}, {1}},
       "an input dilation with padding 2, 1 on spatial dim 0 beyond the kernel's reach 1"},
      {{{1, 2, 6, 6}, {3, 2, 2, 2}, {1, 1}, {0, -1}, {0, 0}, {1, 1}, {1, 1}},
       "negative padding on spatial dim 1"},
      {{{1, 1, 3, 3, 3, 3},
        {1, 1, 1, 1, 1, 1},
        {1, 1, 1, 1},
        {0, 0, 0, 0},
        {0, 0, 0, 0},
        {1, 1, 1, 1},
        {1, 1, 1, 1}},
       "4 spatial dims (cuDNN takes 1 to 3)"},
      {{{0, 2, 5}, {3, 2, 2}, {1}, {0}, {0}, {1}, {1}}, "an empty dim"},
  };
  for (const Refused& r : refused) {
    const Graph graph = ConvGraph(r.c);
    Result<DnnConvGeometry> g = DnnConvGeometryFor(graph, graph.outputs[0]);
    ASSERT_FALSE(g.ok()) << r.reason;
    EXPECT_EQ(g.status().code(), StatusCode::kUnsupported);
    EXPECT_NE(g.status().message().find(r.reason), std::string::npos) << g.status().message();
    EXPECT_NE(g.status().message().find("convolution op 2"), std::string::npos)
        << g.status().message();
  }
}

TEST(DnnConvolutionGeometry, KeysTellGeometriesApart) {
  ConvCase a{{2, 8, 7, 7}, {5, 8, 3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {1, 1}};
  ConvCase b = a;
  b.hi = {1, 0};
  b.x = {2, 8, 7, 6};
  const Graph ga = ConvGraph(a), gb = ConvGraph(b);
  Result<DnnConvGeometry> ka = DnnConvGeometryFor(ga, ga.outputs[0]);
  Result<DnnConvGeometry> kb = DnnConvGeometryFor(gb, gb.outputs[0]);
  ASSERT_TRUE(ka.ok() && kb.ok());
  EXPECT_NE(DnnConvGeometryKey(ka.value()), DnnConvGeometryKey(kb.value()));
  EXPECT_EQ(DnnConvGeometryKey(ka.value()), DnnConvGeometryKey(DnnConvGeometryFor(ga, 2).value()));
}

TEST(DnnConvolutionGeometry, EveryConvolutionOfAWResNetStepMapsOntoCudnn) {
  // Forward convolutions and weight gradients map onto cuDNN's forward operation, the input
  // gradients of strided convolutions (an input dilation) onto its backward-data operation.
  Result<ProgramSet> programs = testing::LowerSmallModel(
      "wresnet:stages=1-1,channels=4,width=2,classes=10,image=16,batch=8,optimizer=momentum", 1);
  ASSERT_TRUE(programs.ok()) << programs.status().message();
  int64_t forward = 0, backward_data = 0;
  for (const DeviceProgram& p : programs.value().programs) {
    for (const Instruction& in : p.code) {
      if (in.kind != InstructionKind::kRun) continue;
      const Graph& local = p.local_ops[static_cast<size_t>(in.local_op)];
      const int32_t id = local.size() - 1;
      if (local.op(id).kind != OpKind::kConvolution) continue;
      Result<DnnConvGeometry> g = DnnConvGeometryFor(local, id);
      ASSERT_TRUE(g.ok()) << g.status().message();
      (g.value().direction == DnnConvDirection::kForward ? forward : backward_data) += 1;
      if (LoadDnn().ok()) {  // cuDNN accepts its operation (f32, as the model is)
        DnnConvRequest r;
        r.geometry = g.value();
        const Status s = CheckDnnConvolutionOperation(r, "wresnet");
        EXPECT_TRUE(s.ok()) << DnnConvGeometryKey(r.geometry) << ": " << s.message();
      }
    }
  }
  std::printf("WResNet convolutions: %lld forward, %lld backward data\n",
              static_cast<long long>(forward), static_cast<long long>(backward_data));
  EXPECT_GT(forward, 0);
  EXPECT_GT(backward_data, 0);
}

}  // namespace
}  // namespace alpa::cuda
