#include "exec/driver/synthetic_data.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "core/util/parallel.h"

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

// t.data[i] = value(i) for every element, on every hardware thread in chunks: each value depends
// on its index alone, so the data are the same whatever the thread count (and a model-sized
// tensor takes a fraction of a second instead of seconds).
template <typename F>
void FillEach(HostTensor& t, const F& value) {
  constexpr int64_t kChunk = int64_t{1} << 16;
  const int64_t n = t.size();
  (void)RunParallel((n + kChunk - 1) / kChunk, ResolveThreadCount(0), [&](int64_t c) {
    const int64_t end = std::min(n, (c + 1) * kChunk);
    for (int64_t i = c * kChunk; i < end; ++i) t.data[static_cast<size_t>(i)] = value(i);
    return Status::Ok();
  });
}

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
        // Unrounded here: the f32 master copies below start from these values.
        FillEach(t, [&](int64_t i) {
          return a *
                 (2.0 * Unit(seed, kWeights, static_cast<uint64_t>(id), static_cast<uint64_t>(i)) -
                  1.0);
        });
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
      FillEach(t, [&](int64_t i) { return RoundToDType(t.data[static_cast<size_t>(i)], t.dtype); });
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
      FillEach(t, [&](int64_t i) {
        return std::floor(
            Unit(seed ^ (s << 32), kInputs, static_cast<uint64_t>(id), static_cast<uint64_t>(i)) *
            static_cast<double>(range));
      });
    } else {
      // Box-Muller from two uniforms, rounded to the input's dtype.
      FillEach(t, [&](int64_t i) {
        const uint64_t k = 2 * static_cast<uint64_t>(i);
        const double u1 = Unit(seed ^ (s << 32), kInputs, static_cast<uint64_t>(id), k);
        const double u2 = Unit(seed ^ (s << 32), kInputs, static_cast<uint64_t>(id), k + 1);
        return RoundToDType(std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(6.283185307179586 * u2),
                            t.dtype);
      });
    }
    values[id] = std::move(t);
  }
  return values;
}

}  // namespace alpa
