// Dominated strategies (see reductions.h and reduction_engine.h).
#include "solvers/sharding/reductions/reduction_engine.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace alpa {

// Strategy i of u is dominated by j when switching i -> j never costs more, whatever the
// neighbours take: c[j] - c[i] + sum over edges of max_k (E[j][k] - E[i][k]) <= 0 (entries with
// E[i][k] = +inf never matter), and for memory nodes j uses no more memory in every item.
size_t ReductionEngine::DominateNode(int32_t u) {
  const size_t ku = k(u);
  const std::vector<int32_t>& adj = LiveEdges(u);
  double row_work = 1;
  for (int32_t e : adj) row_work += static_cast<double>(k(Other(edge(e), u)));
  const double pairs = static_cast<double>(ku) * static_cast<double>(ku);
  if (pairs > reduction_internal::kMaxDominancePairs ||
      dominance_work_ > reduction_internal::kMaxDominanceWork) {
    return 0;
  }
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
    if (!KeepGoing()) break;
    nd.dominance_dirty = false;
    if (nd.cost.size() < 2) continue;
    removed += DominateNode(static_cast<int32_t>(v));
  }
  out_.stats_.dominated_strategies += static_cast<int64_t>(removed);
  return removed > 0;
}

}  // namespace alpa
