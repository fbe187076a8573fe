// Wide-ResNet as in Alpa's benchmark (alpa/model/wide_resnet.py, from the Flax ImageNet
// example), NCHW layout. Channel rule: stage i (0-based) has filters f = channels * 2^i; each
// bottleneck block is conv1x1 (-> f), conv3x3 with the stage's stride (-> f * width),
// conv1x1 (-> 4 f), each followed by batch norm, relu after the first two and after the residual
// add; a conv1x1 + batch norm projection when the residual's shape changes. Stem: conv 7x7
// stride 2 (pad 3) -> batch norm -> relu -> max pool 3x3 stride 2 (SAME); head: global average
// pool -> dense (bias) -> softmax cross-entropy. Convolutions have no bias. Batch norm uses the
// batch statistics (training mode) with a learnable scale and bias. With these rules the
// presets match their names within 3 % (wresnet-13b: 101 / 320 / 16 = 12.6e9 parameters).
#include <sstream>

#include "models/layers.h"

namespace alpa {
namespace models {
namespace {

// Flax / XLA "SAME" padding of one spatial dim: output ceil(in / stride).
void SamePadding(int64_t in, int64_t k, int64_t stride, int64_t& lo, int64_t& hi) {
  // out = ceil(in / stride); written so that no intermediate exceeds `in` or `k`.
  const int64_t out = in / stride + (in % stride != 0 ? 1 : 0);
  const int64_t total = std::max<int64_t>(k - (in - (out - 1) * stride), 0);
  lo = total / 2;
  hi = total - lo;
}

int32_t Conv(GraphBuilder& b, int32_t x, int64_t out, int64_t k, int64_t stride,
             const std::string& name) {
  if (!b.ok()) return -1;
  const Dims s = b.shape(x);  // [N, C, H, W]
  int64_t lo_h = 0, hi_h = 0, lo_w = 0, hi_w = 0;
  SamePadding(s[2], k, stride, lo_h, hi_h);
  SamePadding(s[3], k, stride, lo_w, hi_w);
  int32_t kernel = Weight(b, {out, s[1], k, k}, b.dtype(x), name + ".w");
  return b.Convolution(x, kernel, {stride, stride}, {lo_h, lo_w}, {hi_h, hi_w}, {1, 1}, {1, 1});
}

int32_t BatchNorm(GraphBuilder& b, int32_t x, const std::string& name, double eps = 1e-5) {
  if (!b.ok()) return -1;
  const Dims shape = b.shape(x);
  const Dims reduced = {0, 2, 3};
  const double inv_n = 1.0 / (static_cast<double>(shape[0]) * static_cast<double>(shape[2]) *
                              static_cast<double>(shape[3]));
  int32_t mean = b.Scale(b.ReduceSum(x, reduced), inv_n);
  int32_t centered = b.Sub(x, Unreduce(b, mean, shape, reduced));
  int32_t var = b.Scale(b.ReduceSum(b.Mul(centered, centered), reduced), inv_n);
  int32_t rstd = b.Unary(OpKind::kRsqrt, b.Add(var, b.ScalarLike(eps, var)));
  int32_t gamma = Weight(b, {shape[1]}, b.dtype(x), name + ".g");
  int32_t beta = Weight(b, {shape[1]}, b.dtype(x), name + ".b");
  int32_t y = b.Mul(centered, Unreduce(b, b.Mul(rstd, gamma), shape, reduced));
  return b.Add(y, Unreduce(b, beta, shape, reduced));
}

int32_t Bottleneck(GraphBuilder& b, int32_t x, int64_t filters, int64_t width, int64_t stride,
                   const std::string& name) {
  int32_t y = b.Unary(OpKind::kRelu,
                      BatchNorm(b, Conv(b, x, filters, 1, 1, name + ".conv1"), name + ".bn1"));
  y = b.Unary(
      OpKind::kRelu,
      BatchNorm(b,
                Conv(b, y, b.CheckedProduct(filters, width, name + ".conv2 filters * width"), 3,
                     stride, name + ".conv2"),
                name + ".bn2"));
  const int64_t out = b.CheckedProduct(4, filters, name + " output 4 * filters");
  y = BatchNorm(b, Conv(b, y, out, 1, 1, name + ".conv3"), name + ".bn3");
  int32_t residual = x;
  if (b.ok() && b.shape(x) != b.shape(y)) {
    residual = BatchNorm(b, Conv(b, x, out, 1, stride, name + ".proj"), name + ".bn_proj");
  }
  return b.Unary(OpKind::kRelu, b.Add(residual, y));
}

}  // namespace

Result<Graph> BuildWideResNetForward(const ModelSpec& spec) {
  SpecReader reader(spec);
  const std::string depth = reader.String("layers");
  const int64_t channels = reader.PositiveInt("channels");
  const int64_t width = reader.PositiveInt("width");
  const int64_t image = reader.PositiveInt("image");
  const int64_t classes = reader.PositiveInt("classes");
  const int64_t batch = reader.PositiveInt("batch");
  const DType dtype = reader.Dtype("dtype");
  std::vector<int64_t> stages =
      depth == "101" ? std::vector<int64_t>{3, 4, 23, 3} : std::vector<int64_t>{3, 4, 6, 3};
  const std::string stage_text = reader.String("stages");
  if (!stage_text.empty()) {
    stages.clear();
    std::stringstream ss(stage_text);
    std::string item;
    while (std::getline(ss, item, '-')) {
      ModelSpec probe = spec;
      probe.keys["stages"] = item;
      SpecReader item_reader(probe);
      stages.push_back(item_reader.PositiveInt("stages"));
      if (!item_reader.ok()) reader.Fail("stages must be positive integers joined by '-'");
    }
  }
  if (depth != "50" && depth != "101")
    reader.Fail("layers must be 50 or 101 (got \"" + depth + "\")");
  if (!reader.ok()) return reader.status();

  GraphBuilder b;
  b.set_layer(0);
  int32_t images = Input(b, {batch, 3, image, image}, dtype, "images");
  int32_t labels = Input(b, {batch}, DType::kS32, "labels");
  int32_t x = BatchNorm(b,
                        b.Convolution(images, Weight(b, {channels, 3, 7, 7}, dtype, "stem.w"),
                                      {2, 2}, {3, 3}, {3, 3}, {1, 1}, {1, 1}),
                        "stem.bn");
  x = b.Unary(OpKind::kRelu, x);
  if (b.ok()) {
    int64_t lo_h = 0, hi_h = 0, lo_w = 0, hi_w = 0;
    SamePadding(b.shape(x)[2], 3, 2, lo_h, hi_h);
    SamePadding(b.shape(x)[3], 3, 2, lo_w, hi_w);
    x = b.ReduceWindow(ReduceKind::kMax, x, {1, 1, 3, 3}, {1, 1, 2, 2}, {0, 0, lo_h, lo_w},
                       {0, 0, hi_h, hi_w});
  }
  int32_t layer = 0;
  int64_t filters = channels;
  for (size_t i = 0; i < stages.size(); ++i) {
    if (i > 0) filters = b.CheckedProduct(filters, 2, "stage " + std::to_string(i) + " filters");
    for (int64_t j = 0; j < stages[i]; ++j) {
      b.set_layer(++layer);
      const int64_t stride = i > 0 && j == 0 ? 2 : 1;
      x = Bottleneck(b, x, filters, width, stride,
                     "s" + std::to_string(i) + ".b" + std::to_string(j));
    }
  }
  b.set_layer(layer + 1);
  int32_t loss = -1;
  if (b.ok()) {
    const Dims s = b.shape(x);
    int32_t pooled = b.Scale(b.ReduceSum(x, {2, 3}),
                             1.0 / (static_cast<double>(s[2]) * static_cast<double>(s[3])));
    loss = SoftmaxCrossEntropy(b, Dense(b, pooled, classes, Bias::kLearned, "fc"), labels);
  }
  b.SetName(loss, "loss");
  b.AddOutput(loss);
  return std::move(b).Finish();
}

}  // namespace models
}  // namespace alpa
