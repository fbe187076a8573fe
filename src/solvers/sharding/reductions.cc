#include "solvers/sharding/reductions.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <deque>
#include <limits>
#include <utility>

#include "core/wide_int.h"
#include "solvers/sharding/memory_rows.h"

namespace alpa {
namespace {

// R2 costs k_u * k_v * k_w; above this the node stays in the core.
constexpr double kMaxR2Work = 5e7;
// Dominance compares strategy pairs (k^2 per node, each pair filtered in O(1), survivors cost the
// sum of the neighbours' k): nodes with more pairs are skipped, and all of it stops after a
// total amount of entry comparisons.
constexpr double kMaxDominancePairs = 1e6;
constexpr double kMaxDominanceWork = 3e8;

struct DynEdge {
  int32_t a = 0;
  int32_t b = 0;
  std::vector<double> m;  // rows = a's current strategies
  bool alive = true;
  bool dirty = true;  // not yet checked for unsupported strategies / separability
};

struct DynNode {
  std::vector<double> cost;
  std::vector<int32_t> strategies;  // current strategy -> input strategy
  std::vector<int32_t> adjacency;   // edge ids; may hold dead edges until compacted
  int32_t degree = 0;
  int32_t dead_in_adjacency = 0;
  int32_t fixed = -1;  // input strategy once eliminated with a fixed choice
  bool eliminated = false;
  bool pinned = false;  // used by a memory row: never eliminated by R0/R1/R2
  bool queued = false;
  bool dominance_dirty = true;
};

}  // namespace

// The reduction state: dynamic adjacency (edge slots with tombstones), a FIFO worklist of nodes
// whose degree, strategies or edges changed, and the elimination records.
class ReductionEngine {
 public:
  ReductionEngine(const WorkProblem& input, ReducedProblem* out) : input_(input), out_(*out) {}
  void Run();

 private:
  DynNode& node(int32_t v) { return nodes_[static_cast<size_t>(v)]; }
  DynEdge& edge(int32_t e) { return edges_[static_cast<size_t>(e)]; }
  size_t k(int32_t v) const { return nodes_[static_cast<size_t>(v)].cost.size(); }
  int32_t Other(const DynEdge& e, int32_t v) const { return e.a == v ? e.b : e.a; }
  // Cost of e when v takes i and the other end takes j.
  double At(const DynEdge& e, int32_t v, size_t i, size_t j) const {
    return e.a == v ? e.m[i * k(e.b) + j] : e.m[j * k(e.b) + i];
  }

  void Init();
  void Touch(int32_t v);
  const std::vector<int32_t>& LiveEdges(int32_t v);
  int32_t FindEdge(int32_t v, int32_t w);
  void RemoveEdge(int32_t e);
  void AddToEdge(int32_t v, int32_t w, std::vector<double> m);
  void RemoveStrategies(int32_t v, const std::vector<int32_t>& replacement);
  bool RemoveForbidden(int32_t v);
  void CheckEdge(int32_t e);
  void Process(int32_t v);
  void EliminateFixed(int32_t v, size_t strategy);
  void ReduceDegreeOne(int32_t u);
  void ReduceDegreeTwo(int32_t u);
  bool DominancePass();
  size_t DominateNode(int32_t u);
  void BuildCore();

  const WorkProblem& input_;
  ReducedProblem& out_;
  std::vector<DynNode> nodes_;
  std::vector<DynEdge> edges_;
  std::deque<int32_t> queue_;
  std::vector<std::vector<int32_t>> items_of_node_;  // memory items per node (pinned nodes)
  std::vector<uint8_t> item_used_;                   // per input item: some row uses it
  long double folded_ = 0;
  double dominance_work_ = 0;
};

void ReductionEngine::Init() {
  const size_t n = input_.cost.size();
  nodes_.resize(n);
  out_.redirect_.resize(n);
  items_of_node_.resize(n);
  for (size_t v = 0; v < n; ++v) {
    nodes_[v].cost = input_.cost[v];
    nodes_[v].strategies.resize(input_.cost[v].size());
    for (size_t s = 0; s < input_.cost[v].size(); ++s) {
      nodes_[v].strategies[s] = static_cast<int32_t>(s);
    }
  }
  item_used_.assign(input_.memory_items.size(), 0);
  for (const MemoryRow& row : input_.memory_rows) {
    for (int32_t x : row.items) item_used_[static_cast<size_t>(x)] = 1;
  }
  for (size_t x = 0; x < item_used_.size(); ++x) {
    if (item_used_[x] == 0) continue;
    const int32_t v = input_.memory_items[x].node;
    node(v).pinned = true;
    items_of_node_[static_cast<size_t>(v)].push_back(static_cast<int32_t>(x));
  }
  // The contract is one edge per pair, a < b; merge anyway so that the invariant holds here.
  std::vector<int32_t> order(input_.edges.size());
  for (size_t e = 0; e < order.size(); ++e) order[e] = static_cast<int32_t>(e);
  auto ends = [this](int32_t e) {
    const WorkEdge& we = input_.edges[static_cast<size_t>(e)];
    return std::make_pair(std::min(we.a, we.b), std::max(we.a, we.b));
  };
  std::stable_sort(order.begin(), order.end(),
                   [&ends](int32_t x, int32_t y) { return ends(x) < ends(y); });
  for (int32_t index : order) {
    const WorkEdge& we = input_.edges[static_cast<size_t>(index)];
    const auto [a, b] = ends(index);
    std::vector<double> m = we.cost;
    if (we.a > we.b) {  // transpose to rows = a
      for (size_t i = 0; i < k(a); ++i) {
        for (size_t j = 0; j < k(b); ++j) m[i * k(b) + j] = we.cost[j * k(a) + i];
      }
    }
    if (a == b) {  // only the diagonal can apply
      for (size_t s = 0; s < k(a); ++s) node(a).cost[s] += m[s * k(a) + s];
      continue;
    }
    if (!edges_.empty() && edges_.back().a == a && edges_.back().b == b) {
      std::vector<double>& into = edges_.back().m;
      for (size_t i = 0; i < m.size(); ++i) into[i] += m[i];
      continue;
    }
    const int32_t id = static_cast<int32_t>(edges_.size());
    edges_.push_back(DynEdge{a, b, std::move(m), true, true});
    for (int32_t v : {a, b}) {
      node(v).adjacency.push_back(id);
      ++node(v).degree;
    }
  }
}

void ReductionEngine::Touch(int32_t v) {
  DynNode& nd = node(v);
  nd.dominance_dirty = true;
  if (nd.eliminated || nd.queued) return;
  nd.queued = true;
  queue_.push_back(v);
}

const std::vector<int32_t>& ReductionEngine::LiveEdges(int32_t v) {
  DynNode& nd = node(v);
  if (nd.dead_in_adjacency > 0) {
    std::vector<int32_t>& adj = nd.adjacency;
    adj.erase(std::remove_if(adj.begin(), adj.end(), [this](int32_t e) { return !edge(e).alive; }),
              adj.end());
    nd.dead_in_adjacency = 0;
  }
  return nd.adjacency;
}

int32_t ReductionEngine::FindEdge(int32_t v, int32_t w) {
  if (node(w).adjacency.size() < node(v).adjacency.size()) std::swap(v, w);
  for (int32_t e : node(v).adjacency) {
    if (edge(e).alive && Other(edge(e), v) == w) return e;
  }
  return -1;
}

void ReductionEngine::RemoveEdge(int32_t e) {
  DynEdge& ed = edge(e);
  ed.alive = false;
  ed.m.clear();
  ed.m.shrink_to_fit();
  for (int32_t v : {ed.a, ed.b}) {
    --node(v).degree;
    ++node(v).dead_in_adjacency;
    Touch(v);
  }
}

// Adds m (rows = v's strategies) to the v-w edge, creating it when absent.
void ReductionEngine::AddToEdge(int32_t v, int32_t w, std::vector<double> m) {
  const int32_t e = FindEdge(v, w);
  if (e < 0) {
    const int32_t id = static_cast<int32_t>(edges_.size());
    edges_.push_back(DynEdge{v, w, std::move(m), true, true});
    for (int32_t x : {v, w}) {
      node(x).adjacency.push_back(id);
      ++node(x).degree;
    }
  } else {
    DynEdge& ed = edge(e);
    const size_t kw = k(w);
    for (size_t i = 0; i < k(v); ++i) {
      for (size_t j = 0; j < kw; ++j) {
        const double x = m[i * kw + j];
        if (ed.a == v) {
          ed.m[i * kw + j] += x;
        } else {
          ed.m[j * k(v) + i] += x;
        }
      }
    }
    ed.dirty = true;
  }
  Touch(v);
  Touch(w);
}

// replacement[s] < -1: strategy s stays; else it goes, with replacement[s] as its substitute
// (a current strategy that stays, or -1 when s is forbidden).
void ReductionEngine::RemoveStrategies(int32_t v, const std::vector<int32_t>& replacement) {
  DynNode& nd = node(v);
  const size_t old_k = nd.cost.size();
  std::vector<int32_t>& redirect = out_.redirect_[static_cast<size_t>(v)];
  if (redirect.empty()) {
    redirect.resize(input_.cost[static_cast<size_t>(v)].size());
    for (size_t s = 0; s < redirect.size(); ++s) redirect[s] = static_cast<int32_t>(s);
  }
  std::vector<size_t> keep;
  for (size_t s = 0; s < old_k; ++s) {
    if (replacement[s] < -1) {
      keep.push_back(s);
      continue;
    }
    const int32_t target =
        replacement[s] >= 0 ? nd.strategies[static_cast<size_t>(replacement[s])] : -1;
    redirect[static_cast<size_t>(nd.strategies[s])] = target;
  }
  for (size_t i = 0; i < keep.size(); ++i) {
    nd.cost[i] = nd.cost[keep[i]];
    nd.strategies[i] = nd.strategies[keep[i]];
  }
  nd.cost.resize(keep.size());
  nd.strategies.resize(keep.size());
  for (int32_t e : LiveEdges(v)) {
    DynEdge& ed = edge(e);
    const int32_t w = Other(ed, v);
    const size_t kw = k(w);
    std::vector<double> m;
    m.reserve(keep.size() * kw);
    if (ed.a == v) {
      for (size_t i : keep)
        m.insert(m.end(), ed.m.begin() + static_cast<std::ptrdiff_t>(i * kw),
                 ed.m.begin() + static_cast<std::ptrdiff_t>((i + 1) * kw));
    } else {
      for (size_t j = 0; j < kw; ++j) {
        for (size_t i : keep) m.push_back(ed.m[j * old_k + i]);
      }
    }
    ed.m = std::move(m);
    ed.dirty = true;
    Touch(w);
  }
  Touch(v);
}

// Removes +inf strategies; false when none would be left (the problem is infeasible).
bool ReductionEngine::RemoveForbidden(int32_t v) {
  const std::vector<double>& c = node(v).cost;
  std::vector<int32_t> replacement(c.size(), -2);
  bool any_left = false, any_removed = false;
  for (size_t s = 0; s < c.size(); ++s) {
    if (std::isinf(c[s])) {
      replacement[s] = -1;
      any_removed = true;
    } else {
      any_left = true;
    }
  }
  if (!any_left) return false;
  if (any_removed) RemoveStrategies(v, replacement);
  return true;
}

// Strategies that an edge forbids whatever the other end takes become +inf; an edge of the form
// r[i] + c[j] folds into the two node costs.
void ReductionEngine::CheckEdge(int32_t e) {
  DynEdge& ed = edge(e);
  const size_t ka = k(ed.a), kb = k(ed.b);
  std::vector<bool> row_ok(ka, false), col_ok(kb, false);
  bool any_inf = false;
  for (size_t i = 0; i < ka; ++i) {
    for (size_t j = 0; j < kb; ++j) {
      if (std::isinf(ed.m[i * kb + j])) {
        any_inf = true;
      } else {
        row_ok[i] = true;
        col_ok[j] = true;
      }
    }
  }
  ed.dirty = false;
  if (any_inf) {
    for (size_t i = 0; i < ka; ++i) {
      if (!row_ok[i] && !std::isinf(node(ed.a).cost[i])) {
        node(ed.a).cost[i] = kInfCost;
        Touch(ed.a);
      }
    }
    for (size_t j = 0; j < kb; ++j) {
      if (!col_ok[j] && !std::isinf(node(ed.b).cost[j])) {
        node(ed.b).cost[j] = kInfCost;
        Touch(ed.b);
      }
    }
    return;
  }
  const std::vector<double>& m = ed.m;
  for (size_t i = 0; i < ka; ++i) {
    for (size_t j = 0; j < kb; ++j) {
      if (m[i * kb] + (m[j] - m[0]) != m[i * kb + j]) return;
    }
  }
  for (size_t i = 0; i < ka; ++i) node(ed.a).cost[i] += m[i * kb];
  for (size_t j = 0; j < kb; ++j) node(ed.b).cost[j] += m[j] - m[0];
  ++out_.stats_.separable_edges;
  RemoveEdge(e);
}

void ReductionEngine::EliminateFixed(int32_t v, size_t strategy) {
  DynNode& nd = node(v);
  folded_ += nd.cost[strategy];
  nd.eliminated = true;
  nd.fixed = nd.strategies[strategy];
  ReducedProblem::Elimination record;
  record.node = v;
  record.fixed = nd.fixed;
  out_.eliminations_.push_back(std::move(record));
}

void ReductionEngine::ReduceDegreeOne(int32_t u) {
  const int32_t e = LiveEdges(u).front();
  DynEdge& ed = edge(e);
  const int32_t v = Other(ed, u);
  const size_t ku = k(u), kv = k(v);
  const std::vector<double>& cu = node(u).cost;
  std::vector<double> best(kv, kInfCost);
  for (size_t i = 0; i < ku; ++i) {
    for (size_t j = 0; j < kv; ++j) {
      const double x = cu[i] + At(ed, u, i, j);
      if (x < best[j]) best[j] = x;
    }
  }
  for (size_t j = 0; j < kv; ++j) node(v).cost[j] += best[j];
  ReducedProblem::Elimination record;
  record.node = u;
  record.strategies = std::move(node(u).strategies);  // u is gone: its lists move
  record.cost = std::move(node(u).cost);
  record.neighbour_count = 1;
  record.neighbour[0] = v;
  record.neighbour_strategies[0] = node(v).strategies;
  record.node_is_row[0] = ed.a == u;
  record.edge[0] = std::move(ed.m);
  out_.eliminations_.push_back(std::move(record));
  node(u).eliminated = true;
  RemoveEdge(e);
  ++out_.stats_.r1;
}

void ReductionEngine::ReduceDegreeTwo(int32_t u) {
  const std::vector<int32_t>& adj = LiveEdges(u);
  const int32_t e1 = adj[0], e2 = adj[1];
  const int32_t v = Other(edge(e1), u), w = Other(edge(e2), u);
  const size_t ku = k(u), kv = k(v), kw = k(w);
  if (static_cast<double>(ku) * static_cast<double>(kv) * static_cast<double>(kw) > kMaxR2Work) {
    return;
  }
  const std::vector<double>& cu = node(u).cost;
  // a[j][i] = c_u[i] + E1(i, j), b[k][i] = E2(i, k): the min-plus product runs over contiguous i.
  std::vector<double> a(kv * ku), b(kw * ku);
  for (size_t i = 0; i < ku; ++i) {
    for (size_t j = 0; j < kv; ++j) a[j * ku + i] = cu[i] + At(edge(e1), u, i, j);
    for (size_t j = 0; j < kw; ++j) b[j * ku + i] = At(edge(e2), u, i, j);
  }
  std::vector<double> m(kv * kw);
  for (size_t j = 0; j < kv; ++j) {
    const double* aj = &a[j * ku];
    for (size_t l = 0; l < kw; ++l) {
      const double* bl = &b[l * ku];
      double best = kInfCost;
      for (size_t i = 0; i < ku; ++i) {
        const double x = aj[i] + bl[i];
        best = x < best ? x : best;
      }
      m[j * kw + l] = best;
    }
  }
  ReducedProblem::Elimination record;
  record.node = u;
  record.strategies = std::move(node(u).strategies);  // u is gone: its lists move
  record.cost = std::move(node(u).cost);
  record.neighbour_count = 2;
  const int32_t ends[2] = {e1, e2};
  for (size_t t = 0; t < 2; ++t) {
    DynEdge& ed = edge(ends[t]);
    record.neighbour[t] = Other(ed, u);
    record.neighbour_strategies[t] = node(record.neighbour[t]).strategies;
    record.node_is_row[t] = ed.a == u;
    record.edge[t] = std::move(ed.m);
  }
  out_.eliminations_.push_back(std::move(record));
  node(u).eliminated = true;
  RemoveEdge(e1);
  RemoveEdge(e2);
  AddToEdge(v, w, std::move(m));
  ++out_.stats_.r2;
}

void ReductionEngine::Process(int32_t u) {
  if (node(u).eliminated) return;
  if (!RemoveForbidden(u)) {
    out_.infeasible_ = true;
    return;
  }
  // Edge checks may forbid strategies of u (handled when u is processed again: CheckEdge
  // touches it) or fold edges away.
  const std::vector<int32_t> adj = LiveEdges(u);
  for (int32_t e : adj) {
    if (edge(e).alive && edge(e).dirty) CheckEdge(e);
  }
  if (node(u).queued) return;  // its costs changed: come back after the others
  DynNode& nd = node(u);
  if (nd.cost.size() == 1) {
    // A single choice: its edges are plain costs of the neighbours (memory nodes too: the
    // core moves their constant usage into the rows' capacities).
    for (int32_t e : std::vector<int32_t>(LiveEdges(u))) {
      const int32_t v = Other(edge(e), u);
      for (size_t j = 0; j < k(v); ++j) node(v).cost[j] += At(edge(e), u, 0, j);
      RemoveEdge(e);
    }
    EliminateFixed(u, 0);
    ++out_.stats_.single_strategy;
    return;
  }
  if (nd.pinned) return;
  if (nd.degree == 0) {
    const size_t best =
        static_cast<size_t>(std::min_element(nd.cost.begin(), nd.cost.end()) - nd.cost.begin());
    EliminateFixed(u, best);
    ++out_.stats_.r0;
  } else if (nd.degree == 1) {
    ReduceDegreeOne(u);
  } else if (nd.degree == 2) {
    ReduceDegreeTwo(u);
  }
}

// Strategy i of u is dominated by j when switching i -> j never costs more, whatever the
// neighbours take: c[j] - c[i] + sum over edges of max_k (E[j][k] - E[i][k]) <= 0 (entries with
// E[i][k] = +inf never matter), and for memory nodes j uses no more memory in every item.
size_t ReductionEngine::DominateNode(int32_t u) {
  const size_t ku = k(u);
  const std::vector<int32_t>& adj = LiveEdges(u);
  double row_work = 1;
  for (int32_t e : adj) row_work += static_cast<double>(k(Other(edge(e), u)));
  const double pairs = static_cast<double>(ku) * static_cast<double>(ku);
  if (pairs > kMaxDominancePairs || dominance_work_ > kMaxDominanceWork) return 0;
  dominance_work_ += pairs + 2 * row_work * static_cast<double>(ku);
  // Edges as rows of u's strategies, +inf replaced by kBig: an l where i is forbidden counts as
  // -kBig (ignored); where only j is, the difference is about +kBig (no dominance). A row i that
  // is all kBig makes i dominated, rightly: it can never be chosen.
  constexpr double kBig = 1e200;
  std::vector<std::vector<double>> rows(adj.size());
  std::vector<size_t> width(adj.size());
  for (size_t t = 0; t < adj.size(); ++t) {
    const DynEdge& ed = edge(adj[t]);
    width[t] = k(Other(ed, u));
    rows[t].resize(ku * width[t]);
    for (size_t i = 0; i < ku; ++i) {
      for (size_t j = 0; j < width[t]; ++j) {
        const double x = ed.a == u ? ed.m[i * width[t] + j] : ed.m[j * ku + i];
        rows[t][i * width[t] + j] = std::isinf(x) ? kBig : x;
      }
    }
  }
  const DynNode& nd = node(u);
  const std::vector<int32_t>& items = items_of_node_[static_cast<size_t>(u)];
  auto usage_no_more = [&](size_t j, size_t i) {
    for (int32_t x : items) {
      const std::vector<int64_t>& usage = input_.memory_items[static_cast<size_t>(x)].usage;
      if (usage[static_cast<size_t>(nd.strategies[j])] >
          usage[static_cast<size_t>(nd.strategies[i])]) {
        return false;
      }
    }
    return true;
  };
  // Filters, all necessary conditions: j must be allowed wherever i is (bitsets of forbidden
  // entries); and for a few fixed neighbour choices (probes), j with them must cost no more
  // than i with them. Probe sums are inexact in the last bits: compared with a margin.
  constexpr size_t kProbes = 8;
  size_t entries = 0;
  for (size_t t = 0; t < rows.size(); ++t) entries += width[t];
  const size_t words = (entries + 63) / 64;
  std::vector<uint64_t> forbidden(ku * words, 0);
  std::vector<bool> any_forbidden(ku, false);
  std::vector<double> probe(ku * kProbes);
  for (size_t i = 0; i < ku; ++i) {
    size_t bit = 0;
    for (size_t t = 0; t < rows.size(); ++t) {
      for (size_t l = 0; l < width[t]; ++l, ++bit) {
        if (rows[t][i * width[t] + l] != kBig) continue;
        forbidden[i * words + bit / 64] |= uint64_t{1} << (bit % 64);
        any_forbidden[i] = true;
      }
    }
    for (size_t p = 0; p < kProbes; ++p) {
      double sum = nd.cost[i];
      for (size_t t = 0; t < rows.size(); ++t) {
        sum += rows[t][i * width[t] + (p * 7919 + t * 104729 + p * t) % width[t]];
      }
      probe[i * kProbes + p] = sum;
    }
  }
  auto dominates = [&](size_t j, size_t i) {
    for (size_t p = 0; p < kProbes; ++p) {
      const double vi = probe[i * kProbes + p], vj = probe[j * kProbes + p];
      if (vi < 0.5 * kBig && vj - vi > 1e-9 * (std::fabs(vi) + std::fabs(vj) + 1)) return false;
    }
    if (any_forbidden[i] || any_forbidden[j]) {
      const uint64_t* fi = &forbidden[i * words];
      const uint64_t* fj = &forbidden[j * words];
      for (size_t w = 0; w < words; ++w) {
        if ((fj[w] & ~fi[w]) != 0) return false;  // j forbidden where i is not
      }
    }
    dominance_work_ += row_work;
    double total = nd.cost[j] - nd.cost[i];
    for (size_t t = 0; t < rows.size(); ++t) {
      const double* ri = &rows[t][i * width[t]];
      const double* rj = &rows[t][j * width[t]];
      double worst = -kBig;
      for (size_t l = 0; l < width[t]; ++l) {
        const double d = ri[l] == kBig ? -kBig : rj[l] - ri[l];
        worst = d > worst ? d : worst;
      }
      if (worst > 0.5 * kBig) return false;  // j forbidden where i is not
      total += worst;
    }
    return total <= 0 && usage_no_more(j, i);
  };
  std::vector<int32_t> replacement(ku, -2);
  size_t removed = 0;
  // Highest index first, so that among equal strategies the lowest one survives.
  for (size_t i = ku; i-- > 0;) {
    for (size_t j = 0; j < ku; ++j) {
      if (j == i || replacement[j] >= -1) continue;
      if (dominates(j, i)) {
        replacement[i] = static_cast<int32_t>(j);
        ++removed;
        break;
      }
    }
  }
  if (removed > 0) RemoveStrategies(u, replacement);
  return removed;
}

bool ReductionEngine::DominancePass() {
  size_t removed = 0;
  for (size_t v = 0; v < nodes_.size(); ++v) {
    DynNode& nd = nodes_[v];
    if (nd.eliminated || !nd.dominance_dirty) continue;
    nd.dominance_dirty = false;
    if (nd.cost.size() < 2) continue;
    removed += DominateNode(static_cast<int32_t>(v));
  }
  out_.stats_.dominated_strategies += static_cast<int64_t>(removed);
  return removed > 0;
}

void ReductionEngine::BuildCore() {
  WorkProblem& core = out_.core_;
  std::vector<int32_t> core_of(nodes_.size(), -1);
  for (size_t v = 0; v < nodes_.size(); ++v) {
    if (nodes_[v].eliminated) continue;
    core_of[v] = static_cast<int32_t>(core.cost.size());
    out_.input_node_of_core_.push_back(static_cast<int32_t>(v));
    core.cost.push_back(std::move(nodes_[v].cost));
    out_.core_strategies_.push_back(std::move(nodes_[v].strategies));
  }
  for (DynEdge& ed : edges_) {
    if (!ed.alive) continue;
    const int32_t ca = core_of[static_cast<size_t>(ed.a)], cb = core_of[static_cast<size_t>(ed.b)];
    if (ca < cb) {
      core.edges.push_back(WorkEdge{ca, cb, std::move(ed.m)});
      continue;
    }
    const size_t ka = core.cost[static_cast<size_t>(ca)].size();
    const size_t kb = core.cost[static_cast<size_t>(cb)].size();
    std::vector<double> t(ka * kb);
    for (size_t i = 0; i < ka; ++i) {
      for (size_t j = 0; j < kb; ++j) t[j * ka + i] = ed.m[i * kb + j];
    }
    core.edges.push_back(WorkEdge{cb, ca, std::move(t)});
  }
  std::sort(core.edges.begin(), core.edges.end(), [](const WorkEdge& x, const WorkEdge& y) {
    return x.a != y.a ? x.a < y.a : x.b < y.b;
  });
  // Memory: items of fixed nodes become constants of their rows. When no memory node lost a
  // strategy, the rows stay as they were (a plain copy: they can hold tens of millions of
  // entries); otherwise they are simplified again.
  std::vector<int32_t> core_item(input_.memory_items.size(), -1);
  bool memory_changed = false;
  for (size_t x = 0; x < input_.memory_items.size(); ++x) {
    if (!item_used_[x]) continue;
    const MemoryItem& item = input_.memory_items[x];
    const int32_t c = core_of[static_cast<size_t>(item.node)];
    memory_changed =
        memory_changed || c < 0 || !out_.redirect_[static_cast<size_t>(item.node)].empty();
    if (c < 0) continue;
    MemoryItem mapped;
    mapped.node = c;
    for (int32_t s : out_.core_strategies_[static_cast<size_t>(c)]) {
      mapped.usage.push_back(item.usage[static_cast<size_t>(s)]);
    }
    core_item[x] = static_cast<int32_t>(core.memory_items.size());
    core.memory_items.push_back(std::move(mapped));
  }
  core.memory_rows.reserve(input_.memory_rows.size());
  for (const MemoryRow& row : input_.memory_rows) {
    MemoryRow mapped;
    mapped.items.reserve(row.items.size());
    Int128 capacity = row.capacity;
    for (int32_t x : row.items) {
      const int32_t c = core_item[static_cast<size_t>(x)];
      if (c >= 0) {
        mapped.items.push_back(c);
        continue;
      }
      const MemoryItem& item = input_.memory_items[static_cast<size_t>(x)];
      capacity -= item.usage[static_cast<size_t>(node(item.node).fixed)];
    }
    const Int128 lowest = std::numeric_limits<int64_t>::min();
    mapped.capacity = static_cast<int64_t>(capacity < lowest ? lowest : capacity);
    core.memory_rows.push_back(std::move(mapped));
  }
  if (memory_changed) SimplifyMemoryRows(&core.memory_items, &core.memory_rows, 0);
  core.constant = input_.constant + folded_;
}

void ReductionEngine::Run() {
  Init();
  out_.input_node_count_ = static_cast<int32_t>(nodes_.size());
  out_.stats_.nodes_before = static_cast<int32_t>(input_.cost.size());
  out_.stats_.edges_before = static_cast<int32_t>(input_.edges.size());
  for (size_t v = 0; v < nodes_.size(); ++v) Touch(static_cast<int32_t>(v));
  while (!out_.infeasible_) {
    while (!queue_.empty() && !out_.infeasible_) {
      const int32_t v = queue_.front();
      queue_.pop_front();
      node(v).queued = false;
      Process(v);
    }
    if (out_.infeasible_ || !DominancePass()) break;
  }
  BuildCore();
  out_.stats_.nodes_after = out_.core_.node_count();
  out_.stats_.edges_after = static_cast<int32_t>(out_.core_.edges.size());
}

ReducedProblem::ReducedProblem(const WorkProblem& input) {
  ReductionEngine engine(input, this);
  engine.Run();
}

std::vector<int32_t> ReducedProblem::Expand(const std::vector<int32_t>& core_assignment) const {
  std::vector<int32_t> result(static_cast<size_t>(input_node_count_), 0);
  for (size_t c = 0; c < core_strategies_.size(); ++c) {
    result[static_cast<size_t>(input_node_of_core_[c])] =
        core_strategies_[c][static_cast<size_t>(core_assignment[c])];
  }
  // Back-substitution: each record's neighbours were decided after it was eliminated.
  for (auto rec = eliminations_.rbegin(); rec != eliminations_.rend(); ++rec) {
    if (rec->fixed >= 0) {
      result[static_cast<size_t>(rec->node)] = rec->fixed;
      continue;
    }
    const size_t ku = rec->strategies.size();
    size_t chosen[2] = {0, 0};
    size_t width[2] = {0, 0};
    for (size_t t = 0; t < static_cast<size_t>(rec->neighbour_count); ++t) {
      const std::vector<int32_t>& list = rec->neighbour_strategies[t];
      const int32_t s = result[static_cast<size_t>(rec->neighbour[t])];
      const auto it = std::lower_bound(list.begin(), list.end(), s);
      chosen[t] = it != list.end() && *it == s ? static_cast<size_t>(it - list.begin()) : 0;
      width[t] = list.size();
    }
    auto entry = [&](size_t t, size_t i) {
      return rec->node_is_row[t] ? rec->edge[t][i * width[t] + chosen[t]]
                                 : rec->edge[t][chosen[t] * ku + i];
    };
    double best = kInfCost;
    size_t best_i = 0;
    for (size_t i = 0; i < ku; ++i) {
      double x = rec->cost[i] + entry(0, i);  // the same sums, in the same order, as the fold
      if (rec->neighbour_count == 2) x = x + entry(1, i);
      if (x < best) {
        best = x;
        best_i = i;
      }
    }
    result[static_cast<size_t>(rec->node)] = rec->strategies[best_i];
  }
  return result;
}

std::vector<int32_t> ReducedProblem::Restrict(const std::vector<int32_t>& input_assignment) const {
  std::vector<int32_t> result(core_strategies_.size(), 0);
  for (size_t c = 0; c < core_strategies_.size(); ++c) {
    const size_t v = static_cast<size_t>(input_node_of_core_[c]);
    const std::vector<int32_t>& list = core_strategies_[c];
    const std::vector<int32_t>& redirect = redirect_[v];
    int32_t s = v < input_assignment.size() ? input_assignment[v] : -1;
    bool found = false;
    // Follow replacements; each points at a strategy that was still there, so this ends.
    for (size_t step = 0; step <= redirect.size() && s >= 0; ++step) {
      const auto it = std::lower_bound(list.begin(), list.end(), s);
      if (it != list.end() && *it == s) {
        result[c] = static_cast<int32_t>(it - list.begin());
        found = true;
        break;
      }
      if (static_cast<size_t>(s) >= redirect.size()) break;
      s = redirect[static_cast<size_t>(s)];
    }
    if (!found) {  // unknown or forbidden: the cheapest strategy
      const std::vector<double>& cost = core_.cost[c];
      result[c] = static_cast<int32_t>(std::min_element(cost.begin(), cost.end()) - cost.begin());
    }
  }
  return result;
}

}  // namespace alpa
