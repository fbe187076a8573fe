#include "exec/driver/synthetic_data.h"

#include <cmath>
#include <string>
#include <vector>

namespace alpa {
namespace {

uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Uniform in [0, 1) from a key.
double Unit(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  const uint64_t h = Mix(Mix(Mix(Mix(a) ^ b) ^ c) ^ d);
  return static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0);
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

HostTensor ZerosLike(const Op& op) {
  HostTensor t;
  t.shape = op.shape;
  t.dtype = op.dtype;
  int64_t n = 1;
  for (int64_t d : op.shape) n *= d;
  t.data.assign(static_cast<size_t>(n), 0.0);
  return t;
}

double FanIn(const Dims& shape) {
  if (shape.size() == 2) return static_cast<double>(shape[0]);
  if (shape.size() == 3) return static_cast<double>(shape[1]);
  if (shape.size() >= 4) {
    double f = 1;
    for (size_t d = 1; d < shape.size(); ++d) f *= static_cast<double>(shape[d]);
    return f;
  }
  return 1.0;
}

constexpr uint64_t kWeights = 1, kInputs = 2;

}  // namespace

int64_t IntegerInputRange(const Graph& graph, int32_t id) {
  std::vector<int32_t> frontier = {id};
  std::vector<char> seen(static_cast<size_t>(graph.size()), 0);
  while (!frontier.empty()) {
    const int32_t v = frontier.back();
    frontier.pop_back();
    for (int32_t u = v + 1; u < graph.size(); ++u) {
      const Op& op = graph.op(u);
      for (size_t k = 0; k < op.operands.size(); ++k) {
        if (op.operands[k] != v || seen[static_cast<size_t>(u)]) continue;
        if (op.kind == OpKind::kGather && k == 1) {
          return graph.op(op.operands[0]).shape[static_cast<size_t>(op.attrs.axis)];
        }
        if (op.kind == OpKind::kCompare) {
          int32_t other = op.operands[1 - k];
          while (graph.op(other).kind == OpKind::kBroadcastInDim ||
                 graph.op(other).kind == OpKind::kConvert ||
                 graph.op(other).kind == OpKind::kReshape) {
            other = graph.op(other).operands[0];
          }
          if (graph.op(other).kind == OpKind::kIota) {
            const Op& iota = graph.op(other);
            return iota.shape[static_cast<size_t>(iota.attrs.axis)];
          }
        }
        if (op.kind == OpKind::kConvert || op.kind == OpKind::kReshape ||
            op.kind == OpKind::kBroadcastInDim) {
          seen[static_cast<size_t>(u)] = 1;
          frontier.push_back(u);
        }
      }
    }
  }
  return 2;
}

std::map<int32_t, HostTensor> InitialParameters(const Graph& graph, uint64_t seed) {
  std::map<int32_t, HostTensor> values;
  for (int32_t id = 0; id < graph.size(); ++id) {
    const Op& op = graph.op(id);
    if (op.kind != OpKind::kParameter) continue;
    if (op.role != TensorRole::kParameter && op.role != TensorRole::kOptimizerState) continue;
    HostTensor t = ZerosLike(op);
    if (op.role == TensorRole::kParameter) {
      if (op.shape.size() == 1) {
        const bool scale =
            EndsWith(op.name, ".g") || EndsWith(op.name, ".gamma") || EndsWith(op.name, ".scale");
        for (double& v : t.data) v = scale ? 1.0 : 0.0;
      } else {
        const double a = std::sqrt(3.0 / FanIn(op.shape));
        for (size_t i = 0; i < t.data.size(); ++i) {
          t.data[i] = a * (2.0 * Unit(seed, kWeights, static_cast<uint64_t>(id), i) - 1.0);
        }
      }
    }
    values[id] = std::move(t);
  }
  // f32 master copies start as their half-precision parameter's value.
  for (auto& [id, t] : values) {
    const Op& op = graph.op(id);
    if (op.role != TensorRole::kOptimizerState || !EndsWith(op.name, ".master")) continue;
    const std::string param = op.name.substr(0, op.name.size() - 7);
    for (const auto& [p, pv] : values) {
      if (graph.op(p).role == TensorRole::kParameter && graph.op(p).name == param) t.data = pv.data;
    }
  }
  for (auto& [id, t] : values) {
    if (t.dtype != DType::kF64) {
      for (double& v : t.data) v = RoundToDType(v, t.dtype);
    }
  }
  return values;
}

std::map<int32_t, HostTensor> StepInputs(const Graph& graph, uint64_t seed, int64_t step) {
  std::map<int32_t, HostTensor> values;
  for (int32_t id = 0; id < graph.size(); ++id) {
    const Op& op = graph.op(id);
    if (op.kind != OpKind::kParameter || op.role != TensorRole::kInput) continue;
    HostTensor t = ZerosLike(op);
    const uint64_t s = static_cast<uint64_t>(step);
    if (IsInteger(op.dtype) || op.dtype == DType::kPred) {
      const int64_t range = IntegerInputRange(graph, id);
      for (size_t i = 0; i < t.data.size(); ++i) {
        t.data[i] = std::floor(Unit(seed ^ (s << 32), kInputs, static_cast<uint64_t>(id), i) *
                               static_cast<double>(range));
      }
    } else {
      // Box-Muller from two uniforms.
      for (size_t i = 0; i < t.data.size(); ++i) {
        const double u1 = Unit(seed ^ (s << 32), kInputs, static_cast<uint64_t>(id), 2 * i);
        const double u2 = Unit(seed ^ (s << 32), kInputs, static_cast<uint64_t>(id), 2 * i + 1);
        t.data[i] = std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(6.283185307179586 * u2);
      }
      if (t.dtype != DType::kF64) {
        for (double& v : t.data) v = RoundToDType(v, t.dtype);
      }
    }
    values[id] = std::move(t);
  }
  return values;
}

}  // namespace alpa
