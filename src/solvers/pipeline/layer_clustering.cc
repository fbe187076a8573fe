// Layer clustering (see layer_clustering.h). Steps:
//   1. Units: the forward ops' layer markers, or (without markers) the forward ops that compute
//      something, coarsened to at most kMaxOpUnits consecutive chunks.
//   2. Per unit: forward FLOPs, and the forward tensors it reads from earlier units.
//   3. The smallest FLOPs slack (delta, then relaxed) that admits a split into L groups.
//      Without markers a group also needs total / ((1 + slack) L) FLOPs: a chunk of trivial
//      ops (the final loss reduction) would otherwise form a layer of its own, its 4-byte
//      input being the cheapest crossing there is (Alpa asks a few heavy ops of each layer).
//   4. An exact DP for the lexicographic objective (largest crossing bytes, total crossing
//      bytes, sum of squared group FLOPs, earliest cuts): a min-max DP gives the best largest
//      value M; a suffix DP over groups that cross at most M bytes gives the least (total,
//      squares), and walking it from the front taking the first optimal cut each time gives
//      the earliest cuts. (One DP over (max, sum) would not be exact: the best prefix for the
//      max is not always the one that leads to the best sum.)
//   5. Every op's group.
#include "solvers/pipeline/layer_clustering.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <utility>

#include "core/ir/graph_stats.h"
#include "core/util/number_text.h"

namespace alpa {
namespace {

// Without markers the DP runs over at most this many chunks of consecutive forward ops:
// O(units^2) crossing sums and O(L units^2) DP steps stay in the milliseconds, and 256 chunks
// still leave each of (at most 16 by default) groups about 16 places to cut.
constexpr int32_t kMaxOpUnits = 256;
constexpr int32_t kDefaultMaxLayers = 16;
// When no split meets the slack, it doubles; from 0 it first becomes this.
constexpr long double kFirstRelaxedSlack = 1.0L / 16;
// FLOPs sums are compared with the bound up to this fraction of the total, so that e.g. two
// of six equal units fit total / 3 exactly despite rounding.
constexpr long double kFlopsTolerance = 1e-12L;
constexpr int32_t kUnresolved = -2;

bool IsSource(const Op& op) { return op.operands.empty(); }  // parameter, constant, iota

struct Units {
  bool from_markers = false;
  // Per op: its unit, or -1. With markers every op with a marker >= 0 has one (only forward
  // ops count for FLOPs and bytes); without, the forward ops the DP places.
  std::vector<int32_t> unit_of_op;
  std::vector<int32_t> first;      // per unit: marker value or first op id
  std::vector<long double> flops;  // per unit: forward FLOPs
};

Units MarkerUnits(const Graph& graph, const std::vector<int32_t>& markers) {
  Units units;
  units.from_markers = true;
  units.first = markers;
  units.flops.assign(markers.size(), 0);
  units.unit_of_op.assign(graph.ops.size(), -1);
  for (int32_t id = 0; id < graph.size(); ++id) {
    const Op& op = graph.op(id);
    if (op.layer < 0) continue;
    // A marker no forward op carries (a backward-only one) goes with the nearest lower one.
    auto it = std::upper_bound(markers.begin(), markers.end(), op.layer);
    int32_t unit = it == markers.begin() ? 0 : static_cast<int32_t>(it - markers.begin()) - 1;
    units.unit_of_op[static_cast<size_t>(id)] = unit;
    if (op.phase == Phase::kForward) units.flops[static_cast<size_t>(unit)] += OpFlops(graph, id);
  }
  return units;
}

// Chunk starts (0 first) for more than kMaxOpUnits unit ops. Ideal starts split the weight
// flops / total + 1 / count into kMaxOpUnits equal parts, so that a chunk holds about
// 2 / kMaxOpUnits of the FLOPs (or one bigger op) and of the ops; each start then moves, within
// half the distance to its neighbours, to where the fewest bytes are live (produced before,
// read at or after), so that chunk boundaries fall where a layer boundary would (e.g. after a
// transformer block's residual add, where one tensor crosses rather than two).
std::vector<int32_t> ChunkStarts(const std::vector<long double>& weight,
                                 const std::vector<long double>& live_bytes) {
  const int32_t n = static_cast<int32_t>(weight.size());
  long double total = 0;
  for (long double w : weight) total += w;
  std::vector<int32_t> ideal;
  long double before = 0;
  for (int32_t p = 0, c = 1; p < n && c < kMaxOpUnits; ++p) {
    for (; c < kMaxOpUnits && before >= total * c / kMaxOpUnits; ++c) {
      if (p > 0 && (ideal.empty() || ideal.back() != p)) ideal.push_back(p);
    }
    before += weight[static_cast<size_t>(p)];
  }
  std::vector<int32_t> starts{0};
  for (size_t c = 0; c < ideal.size(); ++c) {
    const int32_t lo = c == 0 ? 1 : (ideal[c - 1] + ideal[c]) / 2 + 1;
    const int32_t hi = c + 1 == ideal.size() ? n - 1 : (ideal[c] + ideal[c + 1]) / 2;
    int32_t best = ideal[c];
    for (int32_t p = lo; p <= hi; ++p) {
      const long double b = live_bytes[static_cast<size_t>(p)];
      const long double bb = live_bytes[static_cast<size_t>(best)];
      if (b < bb || (b == bb && std::abs(p - ideal[c]) < std::abs(best - ideal[c]))) best = p;
    }
    starts.push_back(best);
  }
  return starts;
}

// Forward ops as units: those that compute something (sources follow their first reader), or
// the sources themselves when nothing else is forward; more than kMaxOpUnits form chunks.
Units OpUnits(const Graph& graph) {
  std::vector<int32_t> ids;
  for (bool take_sources : {false, true}) {
    for (int32_t id = 0; id < graph.size(); ++id) {
      const Op& op = graph.op(id);
      if (op.phase == Phase::kForward && op.layer >= 0 && IsSource(op) == take_sources) {
        ids.push_back(id);
      }
    }
    if (!ids.empty()) break;
  }
  const size_t n = ids.size();
  std::vector<long double> op_flops(n);
  long double total = 0;
  for (size_t k = 0; k < n; ++k) {
    op_flops[k] = OpFlops(graph, ids[k]);
    total += op_flops[k];
  }
  std::vector<int32_t> chunk(n);
  if (n <= static_cast<size_t>(kMaxOpUnits)) {
    for (size_t k = 0; k < n; ++k) chunk[k] = static_cast<int32_t>(k);
  } else {
    std::vector<int32_t> pos(graph.ops.size(), -1), last_read(n, -1);
    for (size_t k = 0; k < n; ++k) pos[static_cast<size_t>(ids[k])] = static_cast<int32_t>(k);
    for (size_t k = 0; k < n; ++k) {
      for (int32_t p : graph.op(ids[k]).operands) {
        const int32_t a = pos[static_cast<size_t>(p)];
        if (a >= 0) last_read[static_cast<size_t>(a)] = static_cast<int32_t>(k);
      }
    }
    // live_bytes[p]: bytes produced before unit op p and read at or after it.
    std::vector<long double> diff(n + 1, 0), live_bytes(n, 0), weight(n);
    for (size_t a = 0; a < n; ++a) {
      if (last_read[a] <= static_cast<int32_t>(a)) continue;
      const long double bytes = static_cast<long double>(TensorBytes(graph.op(ids[a])));
      diff[a + 1] += bytes;
      diff[static_cast<size_t>(last_read[a]) + 1] -= bytes;
    }
    long double live = 0;
    for (size_t k = 0; k < n; ++k) {
      live += diff[k];
      live_bytes[k] = live;
      weight[k] = (total > 0 ? op_flops[k] / total : 0) + 1 / static_cast<long double>(n);
    }
    const std::vector<int32_t> starts = ChunkStarts(weight, live_bytes);
    for (size_t c = 0; c < starts.size(); ++c) {
      const size_t end = c + 1 < starts.size() ? static_cast<size_t>(starts[c + 1]) : n;
      for (size_t k = static_cast<size_t>(starts[c]); k < end; ++k) {
        chunk[k] = static_cast<int32_t>(c);
      }
    }
  }
  Units units;
  units.unit_of_op.assign(graph.ops.size(), -1);
  const int32_t count = n == 0 ? 0 : chunk[n - 1] + 1;
  units.first.assign(static_cast<size_t>(count), -1);
  units.flops.assign(static_cast<size_t>(count), 0);
  for (size_t k = 0; k < n; ++k) {
    const size_t c = static_cast<size_t>(chunk[k]);
    units.unit_of_op[static_cast<size_t>(ids[k])] = chunk[k];
    if (units.first[c] < 0) units.first[c] = ids[k];
    units.flops[c] += op_flops[k];
  }
  return units;
}

// A forward tensor read by a unit from an earlier unit (once per pair).
struct Crossing {
  int32_t producer_unit = 0;
  int32_t tensor = 0;
  long double bytes = 0;
};

// Per consumer unit, the tensors it reads from earlier units. Graph inputs (parameters,
// constants, iotas) do not count: they are no group's output (Alpa counts only variables
// that earlier equations define).
std::vector<std::vector<Crossing>> CrossingsByUnit(const Graph& graph, const Units& units) {
  std::vector<std::pair<int32_t, int32_t>> pairs;  // (consumer unit, tensor)
  for (int32_t id = 0; id < graph.size(); ++id) {
    const Op& op = graph.op(id);
    const int32_t unit = units.unit_of_op[static_cast<size_t>(id)];
    if (op.phase != Phase::kForward || unit < 0) continue;
    for (int32_t p : op.operands) {
      const Op& in = graph.op(p);
      const int32_t from = units.unit_of_op[static_cast<size_t>(p)];
      if (in.phase == Phase::kForward && !IsSource(in) && from >= 0 && from < unit) {
        pairs.emplace_back(unit, p);
      }
    }
  }
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
  std::vector<std::vector<Crossing>> crossings(units.first.size());
  for (const auto& [unit, tensor] : pairs) {
    crossings[static_cast<size_t>(unit)].push_back(
        {units.unit_of_op[static_cast<size_t>(tensor)], tensor,
         static_cast<long double>(TensorBytes(graph.op(tensor)))});
  }
  return crossings;
}

// The groups that may start at each unit: a group of units [i, j) needs min_end[i] <= j <=
// max_end[i] (FLOPs sums taken in unit order, the same sums the result reports).
struct GroupEnds {
  std::vector<int32_t> min_end, max_end;
};

GroupEnds Ends(const std::vector<long double>& flops, long double lower, long double upper) {
  const int32_t n = static_cast<int32_t>(flops.size());
  GroupEnds ends;
  ends.min_end.assign(static_cast<size_t>(n), n + 1);
  ends.max_end.assign(static_cast<size_t>(n), 0);
  for (int32_t i = 0; i < n; ++i) {
    long double sum = 0;
    int32_t j = i;
    while (j < n && sum + flops[static_cast<size_t>(j)] <= upper) {
      sum += flops[static_cast<size_t>(j++)];
      if (sum >= lower)
        ends.min_end[static_cast<size_t>(i)] = std::min(ends.min_end[static_cast<size_t>(i)], j);
    }
    ends.max_end[static_cast<size_t>(i)] = j;
  }
  return ends;
}

// Whether some split into exactly `groups` groups meets the ends: reachable unit positions
// after k groups, each step marking the interval [min_end, max_end] of every reachable start.
bool Feasible(const GroupEnds& ends, int32_t groups) {
  const size_t n = ends.min_end.size();
  std::vector<char> reachable(n + 1, 0);
  reachable[0] = 1;
  for (int32_t k = 0; k < groups; ++k) {
    std::vector<int32_t> marks(n + 2, 0);
    for (size_t i = 0; i < n; ++i) {
      const int32_t lo = ends.min_end[i], hi = ends.max_end[i];
      if (!reachable[i] || lo > hi) continue;
      ++marks[static_cast<size_t>(lo)];
      --marks[static_cast<size_t>(hi) + 1];
    }
    int32_t open = 0;
    for (size_t j = 0; j <= n; ++j) {
      open += marks[j];
      reachable[j] = open > 0 ? 1 : 0;
    }
  }
  return reachable[n] != 0;
}

// A suffix's objective after the largest crossing: total crossing bytes, then balance (Alpa
// breaks ties by an imbalance measure too).
struct Score {
  long double bytes = 0;
  long double squares = 0;  // sum over groups of (forward FLOPs)^2
  bool operator<(const Score& o) const {
    return bytes < o.bytes || (bytes == o.bytes && squares < o.squares);
  }
  bool operator==(const Score& o) const { return bytes == o.bytes && squares == o.squares; }
};

struct Split {
  std::vector<int32_t> cuts;       // groups + 1 unit positions, 0 first, unit count last
  std::vector<long double> bytes;  // per group: crossing bytes
  long double slack = 0;
};

Split ChooseSplit(const std::vector<long double>& flops,
                  const std::vector<std::vector<Crossing>>& crossings, int32_t num_tensors,
                  int32_t groups, long double delta, bool lower_bound) {
  const int32_t n = static_cast<int32_t>(flops.size());
  const size_t stride = static_cast<size_t>(n) + 1;
  long double total = 0;
  for (long double f : flops) total += f;

  // Relax the slack until some split fits. Without markers (`lower_bound`) a group also
  // needs total / ((1 + slack) groups) FLOPs, until the upper bound reaches the total; then
  // any split into non-empty groups fits.
  Split split;
  split.slack = delta;
  GroupEnds ends;
  for (bool use_lower = lower_bound;;) {
    const long double tolerance = kFlopsTolerance * total;
    const long double upper = (1 + split.slack) * total / groups;
    const long double lower = use_lower ? total / ((1 + split.slack) * groups) : 0;
    ends = Ends(flops, lower - tolerance, upper + tolerance);
    if (Feasible(ends, groups)) break;
    if (upper >= total) {
      use_lower = false;
    } else {
      split.slack = split.slack < kFirstRelaxedSlack ? kFirstRelaxedSlack : 2 * split.slack;
    }
  }
  const auto& min_end = ends.min_end;
  const auto& max_end = ends.max_end;

  // cost[i][j]: bytes crossing into the group of units [i, j), each tensor once. Sweeping j
  // from i adds the new unit's crossings from before i; stamps skip tensors already counted.
  std::vector<long double> cost(stride * stride, 0), squares(stride * stride, 0);
  std::vector<int32_t> stamp(static_cast<size_t>(num_tensors), -1);
  for (int32_t i = 0; i < n; ++i) {
    long double acc = 0, group_flops = 0;
    for (int32_t j = i + 1; j <= max_end[static_cast<size_t>(i)]; ++j) {
      group_flops += flops[static_cast<size_t>(j - 1)];
      squares[static_cast<size_t>(i) * stride + static_cast<size_t>(j)] = group_flops * group_flops;
      for (const Crossing& c : crossings[static_cast<size_t>(j - 1)]) {
        if (c.producer_unit < i && stamp[static_cast<size_t>(c.tensor)] != i) {
          stamp[static_cast<size_t>(c.tensor)] = i;
          acc += c.bytes;
        }
      }
      cost[static_cast<size_t>(i) * stride + static_cast<size_t>(j)] = acc;
    }
  }
  auto at = [stride](std::vector<long double>& table, int32_t a, int32_t b) -> long double& {
    return table[static_cast<size_t>(a) * stride + static_cast<size_t>(b)];
  };

  // Min-max: worst[k][j] = the least largest crossing over splits of units [0, j) into k.
  const long double inf = std::numeric_limits<long double>::infinity();
  std::vector<long double> worst((static_cast<size_t>(groups) + 1) * stride, inf);
  at(worst, 0, 0) = 0;
  for (int32_t k = 1; k <= groups; ++k) {
    for (int32_t i = k - 1; i < n; ++i) {
      const long double before = at(worst, k - 1, i);
      if (before == inf) continue;
      for (int32_t j = min_end[static_cast<size_t>(i)]; j <= max_end[static_cast<size_t>(i)]; ++j) {
        long double& w = at(worst, k, j);
        w = std::min(w, std::max(before, at(cost, i, j)));
      }
    }
  }
  const long double best_max = at(worst, groups, n);

  // Least (total bytes, sum of squared group FLOPs), lexicographically: both add up over
  // groups, so a suffix DP is exact. rest[k][i] covers units [i, n) with k groups, each
  // crossing at most best_max.
  std::vector<Score> rest((static_cast<size_t>(groups) + 1) * stride, Score{inf, inf});
  rest[static_cast<size_t>(n)] = Score{0, 0};
  auto rest_at = [&](int32_t k, int32_t i) -> Score& {
    return rest[static_cast<size_t>(k) * stride + static_cast<size_t>(i)];
  };
  auto usable = [&](int32_t k, int32_t i, int32_t j) {
    return at(cost, i, j) <= best_max && rest_at(k - 1, j).bytes != inf;
  };
  auto through = [&](int32_t k, int32_t i, int32_t j) {
    const Score& after = rest_at(k - 1, j);
    return Score{at(cost, i, j) + after.bytes, at(squares, i, j) + after.squares};
  };
  for (int32_t k = 1; k <= groups; ++k) {
    for (int32_t i = 0; i < n; ++i) {
      Score& r = rest_at(k, i);
      for (int32_t j = min_end[static_cast<size_t>(i)]; j <= max_end[static_cast<size_t>(i)]; ++j) {
        if (!usable(k, i, j)) continue;
        const Score s = through(k, i, j);
        if (s < r) r = s;
      }
    }
  }
  // Earliest cuts: the first j that keeps the optimum (recomputed the same way, so equal).
  split.cuts.push_back(0);
  for (int32_t k = groups, i = 0; k >= 1; --k) {
    int32_t j = min_end[static_cast<size_t>(i)];
    while (!(usable(k, i, j) && through(k, i, j) == rest_at(k, i))) ++j;
    split.bytes.push_back(at(cost, i, j));
    split.cuts.push_back(j);
    i = j;
  }
  return split;
}

// Without markers: forward ops take their unit's group; sources their first forward reader's.
// An update op that replaces a parameter joins that parameter's group. Another backward /
// update op joins the latest group among the forward tensors it reads, where a
// tensor counts in the group of its earliest forward reader (a tensor at a cut belongs to the
// group that reads it: the weight gradient of a group's first matmul reads the previous
// group's output), else the latest group among its operands; what is left (sources and ops
// fed by sources only) joins its first reader's group, else group 0.
std::vector<int32_t> AssignOpGroups(const Graph& graph, const Units& units,
                                    const std::vector<int32_t>& unit_group) {
  const size_t n = graph.ops.size();
  std::vector<int32_t> group(n, kUnresolved), use_group(n, kUnresolved);
  std::vector<int32_t> reader_count(n + 1, 0);
  for (size_t id = 0; id < n; ++id) {
    const Op& op = graph.ops[id];
    if (op.layer < 0) group[id] = -1;
    const int32_t unit = units.unit_of_op[id];
    if (unit >= 0) group[id] = unit_group[static_cast<size_t>(unit)];
    for (int32_t p : op.operands) ++reader_count[static_cast<size_t>(p) + 1];
  }
  // Readers of each op in increasing id order (CSR).
  for (size_t id = 0; id < n; ++id) reader_count[id + 1] += reader_count[id];
  std::vector<int32_t> readers(static_cast<size_t>(reader_count[n]));
  std::vector<int32_t> fill(reader_count.begin(), reader_count.end() - 1);
  for (size_t id = 0; id < n; ++id) {
    for (int32_t p : graph.ops[id].operands) {
      readers[static_cast<size_t>(fill[static_cast<size_t>(p)]++)] = static_cast<int32_t>(id);
    }
  }
  for (size_t id = 0; id < n; ++id) {
    const Op& op = graph.ops[id];
    if (op.phase != Phase::kForward || group[id] < 0) continue;
    for (int32_t p : op.operands) {
      const size_t ps = static_cast<size_t>(p);
      if (graph.ops[ps].phase != Phase::kForward) continue;
      if (use_group[ps] == kUnresolved) use_group[ps] = group[id];
      if (group[ps] == kUnresolved) group[ps] = group[id];  // a source's first forward reader
    }
  }
  for (size_t id = 0; id < n; ++id) {
    if (graph.ops[id].phase == Phase::kForward && use_group[id] == kUnresolved) {
      use_group[id] = group[id];  // read by no forward op: its own group
    }
  }
  for (size_t id = 0; id < n; ++id) {
    const Op& op = graph.ops[id];
    if (group[id] != kUnresolved || op.phase == Phase::kForward) continue;
    // An update goes with the weight it replaces (its forward readers' group), so that a stage
    // holds, reads and updates its own weights.
    if (op.alias_of >= 0 && group[static_cast<size_t>(op.alias_of)] >= 0) {
      group[id] = group[static_cast<size_t>(op.alias_of)];
      continue;
    }
    int32_t from_forward = -1, from_any = -1;
    for (int32_t p : op.operands) {
      const size_t ps = static_cast<size_t>(p);
      if (graph.ops[ps].phase == Phase::kForward)
        from_forward = std::max(from_forward, use_group[ps]);
      from_any = std::max(from_any, group[ps]);
    }
    if (from_forward >= 0) {
      group[id] = from_forward;
    } else if (from_any >= 0) {
      group[id] = from_any;
    }
  }
  for (size_t id = n; id-- > 0;) {
    if (group[id] != kUnresolved) continue;
    group[id] = 0;
    for (int32_t r = reader_count[id]; r < reader_count[id + 1]; ++r) {
      const int32_t g = group[static_cast<size_t>(readers[static_cast<size_t>(r)])];
      if (g >= 0) {
        group[id] = g;
        break;
      }
    }
  }
  return group;
}

}  // namespace

Result<LayerClustering> ClusterLayers(const Graph& graph, const LayerClusteringOptions& options) {
  if (options.num_layers < 0) {
    return InvalidArgument("layer clustering: num_layers must be >= 0 (0: automatic), got " +
                           std::to_string(options.num_layers));
  }
  if (!std::isfinite(options.delta) || options.delta < 0) {
    return InvalidArgument("layer clustering: delta must be finite and >= 0, got " +
                           ExactDoubleText(options.delta));
  }
  std::vector<int32_t> markers;
  bool any_forward = false;
  for (int32_t id = 0; id < graph.size(); ++id) {
    const Op& op = graph.op(id);
    for (int32_t p : op.operands) {
      if (p < 0 || p >= id) {
        return InvalidGraph("layer clustering: " + DescribeOp(graph, id) +
                            " reads an operand that is not an earlier op");
      }
    }
    if (op.phase == Phase::kForward && op.layer >= 0) {
      any_forward = true;
      markers.push_back(op.layer);
    }
  }
  if (!any_forward) {
    return InvalidArgument(
        "layer clustering: the graph has no forward op (with a layer marker >= 0) to cluster");
  }
  std::sort(markers.begin(), markers.end());
  markers.erase(std::unique(markers.begin(), markers.end()), markers.end());
  const Units units = markers.size() >= 2 ? MarkerUnits(graph, markers) : OpUnits(graph);
  const int32_t num_units = static_cast<int32_t>(units.first.size());
  const int32_t groups = options.num_layers == 0 ? std::min(num_units, kDefaultMaxLayers)
                                                 : std::min(num_units, options.num_layers);

  const Split split = ChooseSplit(units.flops, CrossingsByUnit(graph, units), graph.size(), groups,
                                  static_cast<long double>(options.delta), !units.from_markers);

  LayerClustering result;
  result.num_layers = groups;
  result.from_markers = units.from_markers;
  result.slack = static_cast<double>(split.slack);
  result.input_bytes = split.bytes;
  std::vector<int32_t> unit_group(static_cast<size_t>(num_units));
  for (int32_t g = 0; g < groups; ++g) {
    const int32_t begin = split.cuts[static_cast<size_t>(g)];
    const int32_t end = split.cuts[static_cast<size_t>(g) + 1];
    result.first_unit.push_back(units.first[static_cast<size_t>(begin)]);
    long double flops = 0;
    for (int32_t u = begin; u < end; ++u) {
      unit_group[static_cast<size_t>(u)] = g;
      flops += units.flops[static_cast<size_t>(u)];
    }
    result.flops.push_back(flops);
  }
  if (units.from_markers) {
    result.op_layer.assign(graph.ops.size(), -1);
    for (size_t id = 0; id < graph.ops.size(); ++id) {
      const int32_t unit = units.unit_of_op[id];
      if (unit >= 0) result.op_layer[id] = unit_group[static_cast<size_t>(unit)];
    }
  } else {
    result.op_layer = AssignOpGroups(graph, units, unit_group);
  }
  return result;
}

}  // namespace alpa
