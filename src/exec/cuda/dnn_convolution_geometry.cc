#include "exec/cuda/dnn_convolution_geometry.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace alpa {
namespace cuda {
namespace {

constexpr int64_t kMaxDnnDim = INT32_MAX;

Status Unsupported(const Graph& graph, int32_t id, const std::string& why) {
  return Status(StatusCode::kUnsupported,
                "convolution op " + std::to_string(id) +
                    (graph.op(id).name.empty() ? "" : " '" + graph.op(id).name + "'") +
                    " is not a cuDNN convolution: " + why);
}

// A convolution of 1 spatial dim as one of 2: a leading spatial dim of size 1 (memory layout
// unchanged), with no padding, stride 1 and dilation 1.
void AddLeadingSpatialDim(DnnConvGeometry* g) {
  for (std::vector<int64_t>* dims : {&g->x_dims, &g->w_dims, &g->y_dims}) {
    dims->insert(dims->begin() + 2, 1);
  }
  g->pre_padding.insert(g->pre_padding.begin(), 0);
  g->post_padding.insert(g->post_padding.begin(), 0);
  g->strides.insert(g->strides.begin(), 1);
  g->dilations.insert(g->dilations.begin(), 1);
}

Status CheckDims(const Graph& graph, int32_t id) {
  const Op& op = graph.op(id);
  for (const Dims* dims :
       {&graph.op(op.operands[0]).shape, &graph.op(op.operands[1]).shape, &op.shape}) {
    for (int64_t d : *dims) {
      if (d == 0) return Unsupported(graph, id, "an empty dim");
      if (d > kMaxDnnDim) return Unsupported(graph, id, "a dim beyond int32");
    }
  }
  return Status::Ok();
}

Result<DnnConvGeometry> ForwardGeometry(const Graph& graph, int32_t id) {
  const Op& op = graph.op(id);
  const OpAttrs& at = op.attrs;
  const size_t spatial = op.shape.size() - 2;
  DnnConvGeometry g;
  g.x_dims = graph.op(op.operands[0]).shape;
  g.w_dims = graph.op(op.operands[1]).shape;
  g.y_dims = op.shape;
  g.groups = at.feature_group_count;
  for (size_t i = 0; i < spatial; ++i) {
    if (at.padding_lo[i] < 0 || at.padding_hi[i] < 0) {
      return Unsupported(graph, id, "negative padding on spatial dim " + std::to_string(i));
    }
    g.pre_padding.push_back(at.padding_lo[i]);
    g.post_padding.push_back(at.padding_hi[i]);
    g.strides.push_back(at.strides[i]);
    g.dilations.push_back(at.rhs_dilation[i]);
  }
  return g;
}

// The op out[t] = sum over r of x[(t - lo + r * rd) / ld] * w[r] (where the division is exact)
// is the gradient of the forward problem y[p] = sum over r of dx[p * ld - pre + r * rd] *
// w[R - 1 - r] with pre = (R - 1) * rd - lo: both sum the products where t = p * ld + lo - r *
// rd. cuDNN sizes y from dx: floor((T + pre + post - (R - 1) * rd - 1) / ld) + 1 must be S, x's
// size, which holds for post in [(R - 1) * rd - hi, (R - 1) * rd - hi + ld - 1].
Result<DnnConvGeometry> BackwardDataGeometry(const Graph& graph, int32_t id) {
  const Op& op = graph.op(id);
  const OpAttrs& at = op.attrs;
  const size_t spatial = op.shape.size() - 2;
  if (at.feature_group_count != 1) {
    return Unsupported(graph, id, "an input dilation with feature groups");
  }
  const Dims& ks = graph.op(op.operands[1]).shape;
  DnnConvGeometry g;
  g.direction = DnnConvDirection::kBackwardData;
  g.x_dims = op.shape;
  g.y_dims = graph.op(op.operands[0]).shape;
  g.w_dims = ks;
  std::swap(g.w_dims[0], g.w_dims[1]);
  for (size_t i = 0; i < spatial; ++i) {
    if (at.strides[i] != 1) {
      return Unsupported(graph, id,
                         "an input dilation with output stride " + std::to_string(at.strides[i]) +
                             " on spatial dim " + std::to_string(i));
    }
    const int64_t reach = (ks[i + 2] - 1) * at.rhs_dilation[i];
    const int64_t pre = reach - at.padding_lo[i];
    const int64_t post = std::max<int64_t>(0, reach - at.padding_hi[i]);
    if (pre < 0 || post > reach - at.padding_hi[i] + at.lhs_dilation[i] - 1) {
      return Unsupported(graph, id,
                         "an input dilation with padding " + std::to_string(at.padding_lo[i]) +
                             ", " + std::to_string(at.padding_hi[i]) + " on spatial dim " +
                             std::to_string(i) + " beyond the kernel's reach " +
                             std::to_string(reach));
    }
    g.pre_padding.push_back(pre);
    g.post_padding.push_back(post);
    g.strides.push_back(at.lhs_dilation[i]);
    g.dilations.push_back(at.rhs_dilation[i]);
  }
  return g;
}

}  // namespace

Result<DnnConvGeometry> DnnConvGeometryFor(const Graph& graph, int32_t id) {
  const Op& op = graph.op(id);
  const size_t spatial = op.shape.size() - 2;
  if (spatial < 1 || spatial > 3) {
    return Unsupported(graph, id, std::to_string(spatial) + " spatial dims (cuDNN takes 1 to 3)");
  }
  ALPA_RETURN_IF_ERROR(CheckDims(graph, id));
  const std::vector<int64_t>& lhs = op.attrs.lhs_dilation;
  const bool dilated = std::any_of(lhs.begin(), lhs.end(), [](int64_t d) { return d != 1; });
  Result<DnnConvGeometry> g =
      dilated ? BackwardDataGeometry(graph, id) : ForwardGeometry(graph, id);
  if (!g.ok()) return g;
  if (spatial == 1) AddLeadingSpatialDim(&g.value());
  return g;
}

std::string DnnConvGeometryKey(const DnnConvGeometry& g) {
  return std::string(g.direction == DnnConvDirection::kForward ? "forward" : "backward-data") +
         " x" + ShapeString(g.x_dims) + " w" + ShapeString(g.w_dims) + " y" +
         ShapeString(g.y_dims) + " pre" + ShapeString(g.pre_padding) + " post" +
         ShapeString(g.post_padding) + " stride" + ShapeString(g.strides) + " dilation" +
         ShapeString(g.dilations) + " groups " + std::to_string(g.groups);
}

}  // namespace cuda
}  // namespace alpa
