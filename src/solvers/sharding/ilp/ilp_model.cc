#include "solvers/sharding/ilp/ilp_model.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

#include "core/util/wide_int.h"

namespace alpa {
namespace {

constexpr long double kInfinity = std::numeric_limits<long double>::infinity();

bool Finite(double cost) { return std::isfinite(cost); }

// Removes strategies that no finite assignment can use: forbidden node costs, and strategies
// with no finite partner on some edge (arc consistency, to a fixpoint). Returns the node left
// without any strategy, or -1.
int32_t PropagateForbidden(const WorkProblem& problem, std::vector<std::vector<char>>* allowed) {
  const size_t n = problem.cost.size();
  allowed->assign(n, {});
  for (size_t v = 0; v < n; ++v) {
    (*allowed)[v].resize(problem.cost[v].size());
    for (size_t i = 0; i < problem.cost[v].size(); ++i) {
      (*allowed)[v][i] = Finite(problem.cost[v][i]) ? 1 : 0;
    }
  }
  bool changed = true;
  while (changed) {
    changed = false;
    for (const WorkEdge& edge : problem.edges) {
      std::vector<char>& in_a = (*allowed)[static_cast<size_t>(edge.a)];
      std::vector<char>& in_b = (*allowed)[static_cast<size_t>(edge.b)];
      std::vector<char> support_a(in_a.size(), 0), support_b(in_b.size(), 0);
      for (size_t i = 0; i < in_a.size(); ++i) {
        if (!in_a[i]) continue;
        for (size_t j = 0; j < in_b.size(); ++j) {
          if (in_b[j] && Finite(edge.cost[i * in_b.size() + j])) support_a[i] = support_b[j] = 1;
        }
      }
      for (size_t i = 0; i < in_a.size(); ++i) changed |= in_a[i] && !support_a[i];
      for (size_t j = 0; j < in_b.size(); ++j) changed |= in_b[j] && !support_b[j];
      in_a = support_a;
      in_b = support_b;
    }
  }
  for (size_t v = 0; v < n; ++v) {
    if (std::find((*allowed)[v].begin(), (*allowed)[v].end(), 1) == (*allowed)[v].end()) {
      return static_cast<int32_t>(v);
    }
  }
  return -1;
}

using Allowed = std::vector<std::vector<char>>;  // per node, per strategy

// Marks the nodes with one allowed strategy as fixed; returns each node's costs, to which the
// edges to fixed nodes are then folded.
std::vector<std::vector<long double>> FixSingleStrategyNodes(const WorkProblem& problem,
                                                             const Allowed& allowed,
                                                             IlpModel* model) {
  const size_t n = problem.cost.size();
  model->fixed.assign(n, -1);
  std::vector<std::vector<long double>> node_cost(n);
  for (size_t v = 0; v < n; ++v) {
    node_cost[v].assign(problem.cost[v].begin(), problem.cost[v].end());
    if (std::count(allowed[v].begin(), allowed[v].end(), 1) == 1) {
      model->fixed[v] = static_cast<int32_t>(std::find(allowed[v].begin(), allowed[v].end(), 1) -
                                             allowed[v].begin());
    }
  }
  return node_cost;
}

// An edge with a fixed end folds into the offset (both fixed) or the other node's costs; the
// others are kept as model edges.
void FoldFixedEdges(const WorkProblem& problem, const Allowed& allowed,
                    std::vector<std::vector<long double>>& node_cost, IlpModel* model) {
  for (const WorkEdge& edge : problem.edges) {
    const size_t a = static_cast<size_t>(edge.a), b = static_cast<size_t>(edge.b);
    const size_t kb = allowed[b].size();
    const int32_t fa = model->fixed[a], fb = model->fixed[b];
    if (fa >= 0 && fb >= 0) {
      model->offset += edge.cost[static_cast<size_t>(fa) * kb + static_cast<size_t>(fb)];
    } else if (fa >= 0) {  // a single-strategy end folds into the other node's costs
      for (size_t j = 0; j < kb; ++j) {
        if (allowed[b][j]) node_cost[b][j] += edge.cost[static_cast<size_t>(fa) * kb + j];
      }
    } else if (fb >= 0) {
      for (size_t i = 0; i < allowed[a].size(); ++i) {
        if (allowed[a][i]) node_cost[a][i] += edge.cost[i * kb + static_cast<size_t>(fb)];
      }
    } else {  // (separable edges r[i] + c[j] are folded by the reductions already)
      model->e_edge.push_back(static_cast<int32_t>(&edge - problem.edges.data()));
      model->e_a.push_back(edge.a);
      model->e_b.push_back(edge.b);
    }
  }
}

// Node columns s[v][i], costs shifted so that each node's cheapest allowed strategy costs 0
// (exact: each node takes exactly one strategy; keeps the solver's numbers small next to the
// constant), and the rows sum_i s[v][i] = 1.
void AddNodeColumns(const Allowed& allowed, const std::vector<std::vector<long double>>& node_cost,
                    IlpModel* model) {
  const size_t n = allowed.size();
  model->s_col.assign(n, {});
  for (size_t v = 0; v < n; ++v) {
    long double low = kInfinity;
    for (size_t i = 0; i < allowed[v].size(); ++i) {
      if (allowed[v][i]) low = std::min(low, node_cost[v][i]);
    }
    model->offset += low;
    if (model->fixed[v] >= 0) continue;
    model->s_col[v].assign(allowed[v].size(), 0);
    for (size_t i = 0; i < allowed[v].size(); ++i) {
      if (allowed[v][i]) {
        model->s_col[v][i] =
            model->AddColumn(static_cast<double>(node_cost[v][i] - low), static_cast<int32_t>(v));
      }
    }
  }
  model->s_columns = model->columns;
  for (size_t v = 0; v < n; ++v) {
    if (model->fixed[v] >= 0) continue;
    const int32_t row = model->AddRow(1.0, RowSense::kEqual);
    for (int32_t c : model->s_col[v]) {
      if (c != 0) model->Add(row, c, 1.0);
    }
  }
}

// e[i][j] is continuous in [0, 1]: once the s are integral (one-hot at i*, j*), row i != i*
// forces e[i][.] = 0 and column j != j* forces e[.][j] = 0, so e[i*][j*] = 1 and every other
// entry is 0 (and a forbidden (i*, j*) has no variable, so the rows are infeasible). The solver
// then branches on the s only. Each edge's entries are shifted by their minimum (exact: exactly
// one entry is taken).
void AddEdgeColumns(const WorkProblem& problem, const Allowed& allowed, IlpModel* model) {
  model->e_col.resize(model->e_edge.size());
  for (size_t k = 0; k < model->e_edge.size(); ++k) {
    const WorkEdge& edge = problem.edges[static_cast<size_t>(model->e_edge[k])];
    const size_t a = static_cast<size_t>(edge.a), b = static_cast<size_t>(edge.b);
    const size_t ka = allowed[a].size(), kb = allowed[b].size();
    double low = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < ka; ++i) {
      for (size_t j = 0; j < kb; ++j) {
        if (allowed[a][i] && allowed[b][j]) low = std::min(low, edge.cost[i * kb + j]);
      }
    }
    model->offset += low;
    std::vector<int32_t>& cols = model->e_col[k];
    cols.assign(ka * kb, 0);
    std::vector<int32_t> row_a(ka, 0), row_b(kb, 0);
    for (size_t i = 0; i < ka; ++i) {
      if (allowed[a][i]) row_a[i] = model->AddRow(0.0, RowSense::kEqual);
    }
    for (size_t j = 0; j < kb; ++j) {
      if (allowed[b][j]) row_b[j] = model->AddRow(0.0, RowSense::kEqual);
    }
    for (size_t i = 0; i < ka; ++i) {
      for (size_t j = 0; j < kb; ++j) {
        const double c = edge.cost[i * kb + j];
        if (!allowed[a][i] || !allowed[b][j] || !Finite(c)) continue;
        const int32_t col =
            model->AddColumn(static_cast<double>(static_cast<long double>(c) - low), -1);
        cols[i * kb + j] = col;
        model->e_row_a.push_back(row_a[i]);
        model->e_row_b.push_back(row_b[j]);
      }
    }
    for (size_t i = 0; i < ka; ++i) {
      if (row_a[i] != 0) model->Add(row_a[i], model->s_col[a][i], -1.0);
    }
    for (size_t j = 0; j < kb; ++j) {
      if (row_b[j] != 0) model->Add(row_b[j], model->s_col[b][j], -1.0);
    }
  }
}

// Memory row `r`: each item's smallest allowed usage (and fixed nodes' usage) moves to the
// right-hand side and coefficients of one column combine. A column whose coefficient exceeds
// the right-hand side is fixed at 0 and leaves the row; the rest is divided by the gcd of its
// coefficients (exact for integers, and smaller numbers for LP tolerances). `coef` is scratch,
// one zero per column, left zero. Returns a message when the row cannot hold the smallest
// usages.
std::string AddMemoryRow(const WorkProblem& problem, const Allowed& allowed, size_t r,
                         std::vector<Int128>& coef, IlpModel* model) {
  const MemoryRow& mrow = problem.memory_rows[r];
  Int128 rhs = mrow.capacity;
  std::vector<int32_t> touched;
  for (int32_t item_index : mrow.items) {
    const MemoryItem& item = problem.memory_items[static_cast<size_t>(item_index)];
    const size_t v = static_cast<size_t>(item.node);
    if (model->fixed[v] >= 0) {
      rhs -= item.usage[static_cast<size_t>(model->fixed[v])];
      continue;
    }
    int64_t low = std::numeric_limits<int64_t>::max();
    for (size_t i = 0; i < allowed[v].size(); ++i) {
      if (allowed[v][i]) low = std::min(low, item.usage[i]);
    }
    rhs -= low;
    for (size_t i = 0; i < allowed[v].size(); ++i) {
      const int32_t c = model->s_col[v][i];
      if (c == 0 || item.usage[i] == low) continue;
      if (coef[static_cast<size_t>(c)] == 0) touched.push_back(c);
      coef[static_cast<size_t>(c)] += item.usage[i] - low;
    }
  }
  if (rhs < 0) {
    return "memory row " + std::to_string(r) + " cannot hold even the smallest usages";
  }
  std::vector<int32_t> kept;  // coefficients <= rhs, so they fit in int64
  for (int32_t c : touched) {
    if (coef[static_cast<size_t>(c)] > rhs) {
      model->column_upper[static_cast<size_t>(c)] = 0.0;
    } else {
      kept.push_back(c);
    }
  }
  // Group by node (a node's columns are consecutive) for the largest possible use.
  std::sort(kept.begin(), kept.end());
  int64_t divisor = 0;
  Int128 worst = 0;  // the row is redundant when even this fits
  for (size_t t = 0; t < kept.size();) {
    const int32_t node = model->column_node[static_cast<size_t>(kept[t])];
    int64_t node_max = 0;
    for (; t < kept.size() && model->column_node[static_cast<size_t>(kept[t])] == node; ++t) {
      const int64_t value = static_cast<int64_t>(coef[static_cast<size_t>(kept[t])]);
      node_max = std::max(node_max, value);
      divisor = std::gcd(divisor, value);
    }
    worst += node_max;
  }
  if (worst > rhs) {
    // Integer division on purpose: the left side is a multiple of divisor, so rounding the
    // capacity down is exact.
    const Int128 capacity = rhs / divisor;
    const int32_t row = model->AddRow(static_cast<double>(capacity), RowSense::kAtMost);
    for (int32_t c : kept) {
      const Int128 value = coef[static_cast<size_t>(c)] / divisor;  // exact
      model->Add(row, c, static_cast<double>(value));
    }
  }
  for (int32_t c : touched) coef[static_cast<size_t>(c)] = 0;
  return "";
}

// Fills *model. Returns a message when the problem is infeasible before any search.
std::string BuildModel(const WorkProblem& problem, IlpModel* model) {
  Allowed allowed;
  const int32_t dead = PropagateForbidden(problem, &allowed);
  if (dead >= 0) {
    return "node " + std::to_string(dead) + " has no strategy compatible with its costs and edges";
  }
  model->offset = problem.constant;
  std::vector<std::vector<long double>> node_cost = FixSingleStrategyNodes(problem, allowed, model);
  FoldFixedEdges(problem, allowed, node_cost, model);
  AddNodeColumns(allowed, node_cost, model);
  AddEdgeColumns(problem, allowed, model);
  std::vector<Int128> coef(static_cast<size_t>(model->columns) + 1, 0);
  for (size_t r = 0; r < problem.memory_rows.size(); ++r) {
    std::string infeasible = AddMemoryRow(problem, allowed, r, coef, model);
    if (!infeasible.empty()) return infeasible;
  }
  return "";
}

// Marks the columns that can appear in a solution costing at most `limit` (model units, where
// every cost is >= 0). A node strategy costs at least its own cost plus, on each of its edges, the
// cheapest entry of its row; an edge entry at least its own cost plus both ends' such bounds
// without this edge. Columns above the limit die, which raises the minima: a few rounds.
std::vector<char> LiveColumns(const IlpModel& model, double limit) {
  std::vector<char> live(static_cast<size_t>(model.columns) + 1, 1);
  if (!(limit < std::numeric_limits<double>::infinity())) return live;
  const size_t n = model.fixed.size();
  std::vector<std::vector<int32_t>> edges_at(n);
  for (size_t k = 0; k < model.e_edge.size(); ++k) {
    edges_at[static_cast<size_t>(model.e_a[k])].push_back(static_cast<int32_t>(k));
    edges_at[static_cast<size_t>(model.e_b[k])].push_back(static_cast<int32_t>(k));
  }
  const double kNone = std::numeric_limits<double>::infinity();
  auto cost = [&](int32_t c) {
    return c != 0 && live[static_cast<size_t>(c)] ? model.objective[static_cast<size_t>(c)] : kNone;
  };
  // Per e-edge: row minima (a's side) and column minima (b's side) over live entries.
  std::vector<std::vector<double>> row_min(model.e_edge.size()), col_min(model.e_edge.size());
  std::vector<std::vector<double>> node_bound(n);
  for (int round = 0; round < 3; ++round) {
    for (size_t k = 0; k < model.e_edge.size(); ++k) {
      const size_t ka = model.s_col[static_cast<size_t>(model.e_a[k])].size();
      const size_t kb = model.s_col[static_cast<size_t>(model.e_b[k])].size();
      row_min[k].assign(ka, kNone);
      col_min[k].assign(kb, kNone);
      for (size_t i = 0; i < ka; ++i) {
        for (size_t j = 0; j < kb; ++j) {
          const double c = cost(model.e_col[k][i * kb + j]);
          row_min[k][i] = std::min(row_min[k][i], c);
          col_min[k][j] = std::min(col_min[k][j], c);
        }
      }
    }
    for (size_t v = 0; v < n; ++v) {
      node_bound[v].assign(model.s_col[v].size(), kNone);
      for (size_t i = 0; i < model.s_col[v].size(); ++i) {
        long double bound = cost(model.s_col[v][i]);
        for (int32_t k : edges_at[v]) {
          const size_t e = static_cast<size_t>(k);
          bound += model.e_a[e] == static_cast<int32_t>(v) ? row_min[e][i] : col_min[e][i];
        }
        node_bound[v][i] = static_cast<double>(bound);
        if (bound > limit && model.s_col[v][i] != 0)
          live[static_cast<size_t>(model.s_col[v][i])] = 0;
      }
    }
    for (size_t k = 0; k < model.e_edge.size(); ++k) {
      const size_t a = static_cast<size_t>(model.e_a[k]), b = static_cast<size_t>(model.e_b[k]);
      const size_t kb = model.s_col[b].size();
      for (size_t i = 0; i < model.s_col[a].size(); ++i) {
        for (size_t j = 0; j < kb; ++j) {
          const int32_t c = model.e_col[k][i * kb + j];
          if (c == 0 || !live[static_cast<size_t>(c)]) continue;
          const long double bound = static_cast<long double>(node_bound[a][i]) - row_min[k][i] +
                                    node_bound[b][j] - col_min[k][j] + cost(c);
          if (!(bound <= limit)) live[static_cast<size_t>(c)] = 0;
        }
      }
    }
  }
  return live;
}

}  // namespace

IlpModel BuildIlpModel(const WorkProblem& problem) {
  IlpModel model;
  model.infeasible = BuildModel(problem, &model);
  return model;
}

IlpLp SelectLpColumns(const IlpModel& model, double limit,
                      const std::vector<char>& incumbent_uses) {
  IlpLp lp;
  const std::vector<char> live = LiveColumns(model, limit);
  for (int32_t c = 1; c <= model.columns; ++c) {
    const bool alive = live[static_cast<size_t>(c)] != 0;
    if (c > model.s_columns && !alive) continue;
    lp.model_of.push_back(c);
    lp.fixed_zero.push_back(model.column_upper[static_cast<size_t>(c)] <= 0 || !alive ? 1 : 0);
  }
  lp.ia.assign(model.ia.begin(), model.ia.end());  // s columns keep their numbers
  lp.ja.assign(model.ja.begin(), model.ja.end());
  lp.ar.assign(model.ar.begin(), model.ar.end());
  for (size_t k = static_cast<size_t>(model.s_columns) + 1; k < lp.model_of.size(); ++k) {
    const size_t e = static_cast<size_t>(lp.model_of[k] - model.s_columns - 1);
    for (const int32_t row : {model.e_row_a[e], model.e_row_b[e]}) {
      lp.ia.push_back(row);
      lp.ja.push_back(static_cast<int>(k));
      lp.ar.push_back(1.0);
    }
  }
  if (!incumbent_uses.empty()) {
    lp.incumbent_x.assign(lp.model_of.size(), 0.0);
    for (size_t k = 1; k < lp.model_of.size(); ++k) {
      lp.incumbent_x[k] = incumbent_uses[static_cast<size_t>(lp.model_of[k])];
    }
  }
  return lp;
}

// The incumbent's columns (per model column, 1-based), or empty when it is not a feasible
// assignment of this model.
std::vector<char> IncumbentColumns(const WorkProblem& problem, const IlpModel& model,
                                   const std::vector<int32_t>& incumbent) {
  const size_t n = problem.cost.size();
  if (incumbent.size() != n) return {};
  for (size_t v = 0; v < n; ++v) {
    if (incumbent[v] < 0 || incumbent[v] >= problem.strategy_count(static_cast<int32_t>(v))) {
      return {};
    }
  }
  if (!(WorkObjective(problem, incumbent) < kInfinity) || !WorkMemoryFeasible(problem, incumbent)) {
    return {};
  }
  std::vector<char> uses(static_cast<size_t>(model.columns) + 1, 0);
  for (size_t v = 0; v < n; ++v) {
    const size_t s = static_cast<size_t>(incumbent[v]);
    if (model.fixed[v] >= 0) {
      if (static_cast<size_t>(model.fixed[v]) != s) return {};
      continue;
    }
    const int32_t c = model.s_col[v][s];
    if (c == 0 || model.column_upper[static_cast<size_t>(c)] <= 0) return {};
    uses[static_cast<size_t>(c)] = 1;
  }
  for (size_t k = 0; k < model.e_edge.size(); ++k) {
    const WorkEdge& edge = problem.edges[static_cast<size_t>(model.e_edge[k])];
    const size_t kb = problem.cost[static_cast<size_t>(edge.b)].size();
    const size_t i = static_cast<size_t>(incumbent[static_cast<size_t>(edge.a)]);
    const size_t j = static_cast<size_t>(incumbent[static_cast<size_t>(edge.b)]);
    const int32_t c = model.e_col[k][i * kb + j];
    if (c == 0) return {};
    uses[static_cast<size_t>(c)] = 1;
  }
  return uses;
}

std::vector<int32_t> AssignmentFromColumns(const IlpModel& model,
                                           const std::vector<double>& value) {
  std::vector<int32_t> assignment(model.fixed.size(), 0);
  for (size_t v = 0; v < model.fixed.size(); ++v) {
    if (model.fixed[v] >= 0) {
      assignment[v] = model.fixed[v];
      continue;
    }
    double best = -1.0;
    for (size_t i = 0; i < model.s_col[v].size(); ++i) {
      const int32_t c = model.s_col[v][i];
      if (c != 0 && value[static_cast<size_t>(c)] > best) {
        best = value[static_cast<size_t>(c)];
        assignment[v] = static_cast<int32_t>(i);
      }
    }
  }
  return assignment;
}

}  // namespace alpa
