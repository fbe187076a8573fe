#include "solvers/sharding/ilp_glpk.h"

#include <glpk.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <csetjmp>
#include <cstddef>
#include <cstring>
#include <limits>
#include <mutex>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "core/wide_int.h"

// Thread safety: Debian's GLPK 5.0 is built with thread-local storage (glp_config("TLS") reports
// "_Thread_local"), so every thread has its own GLPK environment and concurrent solves on
// different threads do not share state. Everything installed here (error hook, terminal hook,
// terminal switch) is per thread and undone before returning (GLPK has no getters for the hooks,
// so they are reset to none). A GLPK built without TLS has one process-wide environment: calls
// are then serialized by a mutex.
//
// Error handling: GLPK calls abort() after an internal error unless the error hook leaves by
// longjmp. The hook jumps back into RunGlpk, which then must call glp_free_env() (the manual: the
// environment is unusable after an error). That also frees any other GLPK object the calling
// thread holds; the library itself keeps none between calls.

namespace alpa {
namespace {

constexpr long double kInfinity = std::numeric_limits<long double>::infinity();

// The ILP in GLPK's terms, built entirely in C++ before any GLPK call.
struct IlpModel {
  // Per node: its single allowed strategy (no column), or -1 when it has columns.
  std::vector<int32_t> fixed;
  // Per node and strategy: the GLPK column (1-based) of s[v][i]; 0 when the strategy is
  // forbidden or the node is fixed.
  std::vector<std::vector<int32_t>> s_col;
  // Edges with variables: the work edge and, per entry i * kb + j, the column of e[i][j] or 0.
  std::vector<int32_t> e_edge;
  std::vector<int32_t> e_a, e_b;  // its end nodes
  std::vector<std::vector<int32_t>> e_col;
  int32_t columns = 0;
  int32_t s_columns = 0;  // columns 1..s_columns are the s, the rest are e
  // Per e column (index column - s_columns - 1): its two rows (coefficient 1 in both).
  std::vector<int32_t> e_row_a, e_row_b;
  std::vector<double> objective{0.0};     // 1-based, per column
  std::vector<char> binary{0};            // 1-based, per column: s (binary) or e (continuous)
  std::vector<int32_t> column_node{-1};   // 1-based: the node of an s column, -1 for e columns
  std::vector<double> column_upper{0.0};  // 1-based: 1, or 0 when a memory row rules it out
  std::vector<double> row_rhs{0.0};       // 1-based, per row
  std::vector<char> row_is_memory{0};     // 1-based: <= rhs instead of = rhs
  std::vector<int> ia{0}, ja{0};          // triplets of the s columns, 1-based (index 0 unused)
  std::vector<double> ar{0.0};
  long double offset = 0;  // objective constant kept out of GLPK

  int32_t rows() const { return static_cast<int32_t>(row_rhs.size()) - 1; }
  int32_t AddRow(double rhs, bool memory) {
    row_rhs.push_back(rhs);
    row_is_memory.push_back(memory ? 1 : 0);
    return rows();
  }
  int32_t AddColumn(double cost, int32_t node) {
    objective.push_back(cost);
    binary.push_back(node >= 0 ? 1 : 0);
    column_node.push_back(node);
    column_upper.push_back(1.0);
    return ++columns;
  }
  void Add(int32_t row, int32_t column, double value) {
    ia.push_back(row);
    ja.push_back(column);
    ar.push_back(value);
  }
};

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

// Builds the model. Returns a message when the problem is infeasible before any search.
std::string BuildModel(const WorkProblem& problem, IlpModel* model) {
  const size_t n = problem.cost.size();
  std::vector<std::vector<char>> allowed;
  const int32_t dead = PropagateForbidden(problem, &allowed);
  if (dead >= 0) {
    return "node " + std::to_string(dead) + " has no strategy compatible with its costs and edges";
  }
  model->offset = problem.constant;
  model->fixed.assign(n, -1);
  model->s_col.assign(n, {});
  // Node costs, shifted so that each node's cheapest allowed strategy costs 0 (exact: each node
  // takes exactly one strategy); keeps GLPK's numbers small next to the constant.
  std::vector<std::vector<long double>> node_cost(n);
  for (size_t v = 0; v < n; ++v) {
    node_cost[v].assign(problem.cost[v].begin(), problem.cost[v].end());
    if (std::count(allowed[v].begin(), allowed[v].end(), 1) == 1) {
      model->fixed[v] = static_cast<int32_t>(std::find(allowed[v].begin(), allowed[v].end(), 1) -
                                             allowed[v].begin());
    }
  }
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
  // sum_i s[v][i] = 1
  for (size_t v = 0; v < n; ++v) {
    if (model->fixed[v] >= 0) continue;
    const int32_t row = model->AddRow(1.0, false);
    for (int32_t c : model->s_col[v]) {
      if (c != 0) model->Add(row, c, 1.0);
    }
  }
  // e[i][j] is continuous in [0, 1]: once the s are integral (one-hot at i*, j*), row i != i*
  // forces e[i][.] = 0 and column j != j* forces e[.][j] = 0, so e[i*][j*] = 1 and every other
  // entry is 0 (and a forbidden (i*, j*) has no variable, so the rows are infeasible). GLPK then
  // branches on the s only. Each edge's entries are shifted by their minimum (exact: exactly one
  // entry is taken).
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
      if (allowed[a][i]) row_a[i] = model->AddRow(0.0, false);
    }
    for (size_t j = 0; j < kb; ++j) {
      if (allowed[b][j]) row_b[j] = model->AddRow(0.0, false);
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
  // Memory rows: each item's smallest allowed usage (and fixed nodes' usage) moves to the
  // right-hand side and coefficients of one column combine. A column whose coefficient exceeds
  // the right-hand side is fixed at 0 and leaves the row; the rest is divided by the gcd of its
  // coefficients (exact for integers, and smaller numbers for GLPK's tolerances).
  std::vector<Int128> coef(static_cast<size_t>(model->columns) + 1, 0);
  for (size_t r = 0; r < problem.memory_rows.size(); ++r) {
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
      const int32_t row = model->AddRow(static_cast<double>(capacity), true);
      for (int32_t c : kept) {
        const Int128 value = coef[static_cast<size_t>(c)] / divisor;  // exact
        model->Add(row, c, static_cast<double>(value));
      }
    }
    for (int32_t c : touched) coef[static_cast<size_t>(c)] = 0;
  }
  return "";
}

// Everything the GLPK phase reads and writes. RunGlpk and the callbacks keep no other state, so
// that a longjmp out of GLPK skips no C++ destructor.
struct GlpkRun {
  const IlpModel* model = nullptr;
  const SolveControl* control = nullptr;
  const IlpOptions* options = nullptr;
  std::vector<char> incumbent_uses;  // per model column (1-based); empty: no incumbent
  double upper = std::numeric_limits<double>::infinity();  // incumbent objective, GLPK units
  // The LP: every s column, and the e columns that can still matter (model_of maps back).
  std::vector<int32_t> model_of{0};  // GLPK column -> model column
  std::vector<char> fixed_zero;      // per GLPK column: fixed at 0
  std::vector<int> ia, ja;           // triplets, 1-based
  std::vector<double> ar;
  std::vector<double> incumbent_x;  // per GLPK column, 1-based, for glp_ios_heur_sol
  glp_prob* lp = nullptr;
  std::jmp_buf jump;
  // Outputs.
  bool failed = false;  // GLPK raised an error (message holds its text)
  int simplex_ret = 0, lp_status = GLP_UNDEF, intopt_ret = -1, mip_status = GLP_UNDEF;
  bool proven_by_bound = false;  // the root LP bound already meets the incumbent
  double root_bound = -std::numeric_limits<double>::infinity();  // GLPK units
  double tree_bound = -std::numeric_limits<double>::infinity();  // best active node
  double reported_objective = std::numeric_limits<double>::infinity();
  double reported_bound = -std::numeric_limits<double>::infinity();
  double next_bound_check = 0;  // SolveControl seconds
  bool heuristic_offered = false;
  bool stopped = false;  // by the deadline, the cancel flag, the node limit or on_progress
  bool progress_threw = false;
  int64_t nodes = 0;
  std::vector<double> column_value;  // per model column, when mip_status is GLP_OPT/GLP_FEAS
  char message[512] = {};
  size_t message_length = 0;
};

void OnGlpkError(void* info) { std::longjmp(static_cast<GlpkRun*>(info)->jump, 1); }

// Keeps GLPK's terminal output (only the text of an error reaches it: output is off otherwise)
// for the message, and swallows it.
int CaptureTerminal(void* info, const char* text) {
  GlpkRun* run = static_cast<GlpkRun*>(info);
  const size_t room = sizeof(run->message) - 1 - run->message_length;
  const size_t length = std::min(room, std::strlen(text));
  std::memcpy(run->message + run->message_length, text, length);
  run->message_length += length;
  run->message[run->message_length] = '\0';
  return 1;
}

// GLPK's time limit, keeping `reserve` seconds for work that GLPK does not count against it.
int MillisecondsLeft(const SolveControl& control, double reserve = 0) {
  const double seconds = control.remaining_seconds() - reserve;
  if (!(seconds < 1e6)) return INT_MAX;
  return std::max(1, static_cast<int>(seconds * 1000.0));
}

// Relative tolerance on objective comparisons, as GLPK's own tol_obj.
double ObjectiveTolerance(double value) { return 1e-7 * (1.0 + std::fabs(value)); }

// Marks the columns that can appear in a solution costing at most `limit` (GLPK units, where
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

// Chooses the LP's columns and builds its triplets. Columns that cannot appear in a solution
// better than the incumbent (LiveColumns) are left out (e) or fixed at 0 (s).
void PrepareLp(GlpkRun* run) {
  const IlpModel& model = *run->model;
  const std::vector<char> live = LiveColumns(model, run->upper + ObjectiveTolerance(run->upper));
  run->fixed_zero.assign(1, 0);
  for (int32_t c = 1; c <= model.columns; ++c) {
    const bool alive = live[static_cast<size_t>(c)] != 0;
    if (c > model.s_columns && !alive) continue;
    run->model_of.push_back(c);
    run->fixed_zero.push_back(model.column_upper[static_cast<size_t>(c)] <= 0 || !alive ? 1 : 0);
  }
  run->ia.assign(model.ia.begin(), model.ia.end());  // s columns keep their numbers
  run->ja.assign(model.ja.begin(), model.ja.end());
  run->ar.assign(model.ar.begin(), model.ar.end());
  for (size_t k = static_cast<size_t>(model.s_columns) + 1; k < run->model_of.size(); ++k) {
    const size_t e = static_cast<size_t>(run->model_of[k] - model.s_columns - 1);
    for (const int32_t row : {model.e_row_a[e], model.e_row_b[e]}) {
      run->ia.push_back(row);
      run->ja.push_back(static_cast<int>(k));
      run->ar.push_back(1.0);
    }
  }
  if (!run->incumbent_uses.empty()) {
    run->incumbent_x.assign(run->model_of.size(), 0.0);
    for (size_t k = 1; k < run->model_of.size(); ++k) {
      run->incumbent_x[k] = run->incumbent_uses[static_cast<size_t>(run->model_of[k])];
    }
  }
}

void LoadLp(GlpkRun* run) {
  const IlpModel& model = *run->model;
  glp_prob* lp = run->lp;
  glp_set_obj_dir(lp, GLP_MIN);
  glp_add_rows(lp, model.rows());
  for (int32_t r = 1; r <= model.rows(); ++r) {
    const double rhs = model.row_rhs[static_cast<size_t>(r)];
    if (model.row_is_memory[static_cast<size_t>(r)]) {
      glp_set_row_bnds(lp, r, GLP_UP, 0.0, rhs);
    } else {
      glp_set_row_bnds(lp, r, GLP_FX, rhs, rhs);
    }
  }
  const int columns = static_cast<int>(run->model_of.size()) - 1;
  glp_add_cols(lp, columns);
  for (int k = 1; k <= columns; ++k) {
    const size_t c = static_cast<size_t>(run->model_of[static_cast<size_t>(k)]);
    // e is continuous, see BuildModel.
    if (model.binary[c]) glp_set_col_kind(lp, k, GLP_BV);
    if (run->fixed_zero[static_cast<size_t>(k)]) {
      glp_set_col_bnds(lp, k, GLP_FX, 0.0, 0.0);
    } else {
      glp_set_col_bnds(lp, k, GLP_DB, 0.0, 1.0);
    }
    glp_set_obj_coef(lp, k, model.objective[c]);
  }
  glp_load_matrix(lp, static_cast<int>(run->ia.size()) - 1, run->ia.data(), run->ja.data(),
                  run->ar.data());
  // The API does not scale by itself (glpsol does); memory rows mix byte counts with the 0/1
  // rows, and the basis is ill-conditioned without scaling.
  glp_scale_prob(lp, GLP_SF_AUTO);
}

void Terminate(GlpkRun* run, glp_tree* tree) {
  run->stopped = true;
  glp_ios_terminate(tree);
}

// Passes the reported objective and bound to on_progress; false when it asks to stop.
bool CallProgress(GlpkRun* run) {
  if (!run->options->on_progress) return true;
  try {
    return run->options->on_progress(run->reported_objective + run->model->offset,
                                     run->reported_bound + run->model->offset);
  } catch (...) {  // exceptions must not cross GLPK's C frames
    run->progress_threw = true;
    return false;
  }
}

// Reports an improved incumbent or bound from the tree.
void ReportProgress(GlpkRun* run, glp_tree* tree) {
  const int best = glp_ios_best_node(tree);
  // A fresh root's bound is -DBL_MAX until its LP is solved: not worth keeping.
  if (best != 0 && glp_ios_node_bound(tree, best) > -1e300) {
    run->tree_bound = std::max(run->tree_bound, glp_ios_node_bound(tree, best));
  }
  glp_prob* mip = glp_ios_get_prob(tree);
  const double objective =
      glp_mip_status(mip) == GLP_FEAS ? glp_mip_obj_val(mip) : run->reported_objective;
  // Without the left-out columns the tree's bounds hold only for solutions better than the
  // incumbent, hence the min.
  const double bound =
      std::min(std::max(run->tree_bound, run->root_bound), std::min(objective, run->upper));
  if (!(objective < run->reported_objective) && !(bound > run->reported_bound)) return;
  run->reported_objective = std::min(objective, run->reported_objective);
  run->reported_bound = std::max(bound, run->reported_bound);
  if (!CallProgress(run)) Terminate(run, tree);
}

// Reports the root LP bound (with the incumbent, if any); false when on_progress asks to stop.
bool ReportRoot(GlpkRun* run) {
  run->reported_objective = run->upper;
  run->reported_bound = std::min(run->root_bound, run->upper);
  run->stopped = !CallProgress(run);
  return !run->stopped;
}

void OnTree(glp_tree* tree, void* info) {
  GlpkRun* run = static_cast<GlpkRun*>(info);
  if (run->control->expired()) {
    Terminate(run, tree);
    return;
  }
  int total_nodes = 0;
  glp_ios_tree_size(tree, nullptr, nullptr, &total_nodes);
  run->nodes = total_nodes;
  if (run->options->node_limit > 0 && run->nodes > run->options->node_limit) {
    Terminate(run, tree);
    return;
  }
  switch (glp_ios_reason(tree)) {
    case GLP_IHEUR:
      // Offered once, at the first node; GLPK keeps the better of it and its own solutions.
      // glp_ios_heur_sol takes values of the tree's problem columns: with the intopt presolver
      // on those would be the presolved problem's, hence presolve off below.
      if (!run->heuristic_offered && !run->incumbent_x.empty()) {
        run->heuristic_offered = true;
        glp_ios_heur_sol(tree, run->incumbent_x.data());
      }
      break;
    case GLP_IBINGO:
      ReportProgress(run, tree);
      break;
    case GLP_ISELECT:
      // glp_ios_best_node scans the active list: at most every 20 ms, not at every node.
      if (run->control->elapsed_seconds() >= run->next_bound_check) {
        run->next_bound_check = run->control->elapsed_seconds() + 0.02;
        ReportProgress(run, tree);
      }
      break;
    default:
      break;
  }
}

// The GLPK phase: the root LP (simplex with presolve), then branch and cut unless the root bound
// already proves the incumbent optimal. Only trivially destructible locals: an error longjmps
// back to the setjmp.
void RunGlpk(GlpkRun* run) {
  if (setjmp(run->jump) != 0) {
    run->failed = true;
    run->lp = nullptr;
    glp_free_env();  // the manual: after an error only glp_free_env may be called
    return;
  }
  glp_error_hook(&OnGlpkError, run);
  glp_term_hook(&CaptureTerminal, run);
  run->lp = glp_create_prob();
  const double load_start = run->control->elapsed_seconds();
  LoadLp(run);
  // glp_simplex's time limit covers its iterations only. Its presolver (which makes the LP of
  // IOPDDL G about 4x faster) and the postsolve took up to 3.7x the loading time on G (0.7 s
  // there): it is used only when the deadline leaves room for that.
  const double load_seconds = run->control->elapsed_seconds() - load_start;
  const bool presolve = run->control->remaining_seconds() > 8 * load_seconds;
  const double reserve = (presolve ? 4 : 1) * load_seconds;
  if (run->control->remaining_seconds() <= reserve) {
    run->simplex_ret = GLP_ETMLIM;  // no time for an LP: stop at once
  } else {
    glp_smcp simplex;
    glp_init_smcp(&simplex);
    simplex.msg_lev = GLP_MSG_OFF;
    simplex.presolve = presolve ? GLP_ON : GLP_OFF;
    simplex.tm_lim = MillisecondsLeft(*run->control, reserve);
    run->simplex_ret = glp_simplex(run->lp, &simplex);
  }
  run->lp_status = run->simplex_ret == 0 ? glp_get_status(run->lp) : GLP_UNDEF;
  if (run->simplex_ret == GLP_ENOPFS) run->lp_status = GLP_NOFEAS;  // found by the presolver
  if (run->lp_status == GLP_OPT && !run->control->expired()) {
    run->root_bound = glp_get_obj_val(run->lp);
    const double gap = run->upper - run->root_bound;
    if (gap <= ObjectiveTolerance(run->root_bound) ||
        gap <= run->options->relative_gap * std::fabs(run->upper)) {
      run->proven_by_bound = true;
    } else if (ReportRoot(run)) {
      glp_iocp mip;
      glp_init_iocp(&mip);
      mip.msg_lev = GLP_MSG_OFF;
      mip.presolve = GLP_OFF;  // keeps the tree on our columns; the root LP is solved above
      mip.tm_lim = MillisecondsLeft(*run->control);
      mip.mip_gap = run->options->relative_gap;
      mip.cb_func = &OnTree;
      mip.cb_info = run;
      // Measured on random instances and on IOPDDL G without an incumbent: most-fractional
      // branching beats the default (Driebeck-Tomlin) by 1.2-3x and pseudocosts lose on G; the
      // cut generators (MIR, Gomory, cover, clique), the feasibility pump and the intopt
      // presolver all cost more time than they save. Best-bound backtracking stays.
      mip.br_tech = GLP_BR_MFV;
      mip.bt_tech = GLP_BT_BLB;
      run->intopt_ret = glp_intopt(run->lp, &mip);
      run->mip_status = glp_mip_status(run->lp);
      if (run->mip_status == GLP_OPT || run->mip_status == GLP_FEAS) {
        for (size_t k = 1; k < run->model_of.size(); ++k) {
          run->column_value[static_cast<size_t>(run->model_of[k])] =
              glp_mip_col_val(run->lp, static_cast<int>(k));
        }
      }
    }
  }
  glp_delete_prob(run->lp);
  run->lp = nullptr;
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

// Serializes GLPK use when the library has one process-wide environment (built without TLS).
std::mutex& GlpkWithoutTlsMutex() {
  static std::mutex mutex;
  return mutex;
}

}  // namespace

IlpResult SolveIlpGlpk(const WorkProblem& problem, const SolveControl& control,
                       const IlpOptions& options) {
  IlpResult result;
  result.objective = kInfinity;
  result.lower_bound = -kInfinity;
  if (problem.cost.empty()) {
    result.status = IlpStatus::kOptimal;
    result.objective = result.lower_bound = problem.constant;
    return result;
  }
  IlpModel model;
  const std::string infeasible = BuildModel(problem, &model);
  if (!infeasible.empty()) {
    result.status = IlpStatus::kInfeasible;
    result.lower_bound = kInfinity;
    result.message = infeasible;
    return result;
  }
  if (model.columns == 0) {  // every node is fixed and every memory row holds
    result.status = IlpStatus::kOptimal;
    result.assignment = model.fixed;
    result.objective = result.lower_bound = WorkObjective(problem, model.fixed);
    return result;
  }
  GlpkRun run;
  run.model = &model;
  run.control = &control;
  run.options = &options;
  run.incumbent_uses = IncumbentColumns(problem, model, options.incumbent);
  std::vector<int32_t> best;  // best feasible assignment known, checked independently
  long double best_objective = kInfinity;
  if (!run.incumbent_uses.empty()) {
    best = options.incumbent;
    best_objective = WorkObjective(problem, best);
    run.upper = static_cast<double>(best_objective - model.offset);
  }
  if (model.ia.size() + 2 * model.e_row_a.size() > static_cast<size_t>(INT_MAX / 2)) {
    result.status = IlpStatus::kError;
    result.message = "the ILP has too many nonzeros for GLPK";
    result.assignment = best;
    result.objective = best_objective;
    return result;
  }
  PrepareLp(&run);
  run.column_value.assign(static_cast<size_t>(model.columns) + 1, 0.0);
  if (!control.expired()) {
    std::unique_lock<std::mutex> lock;
    if (glp_config("TLS") == nullptr) lock = std::unique_lock<std::mutex>(GlpkWithoutTlsMutex());
    // Leave the thread's GLPK environment as found: free it when this call created it. After
    // an error it is gone either way (RunGlpk freed it).
    const int env = glp_init_env();
    if (env != 0 && env != 1) {
      run.failed = true;
      CaptureTerminal(&run, "could not initialize the environment");
    } else {
      const int previous_output = glp_term_out(GLP_OFF);
      RunGlpk(&run);
      if (!run.failed) {
        glp_error_hook(nullptr, nullptr);
        glp_term_hook(nullptr, nullptr);
        if (env == 0) {
          glp_free_env();
        } else {
          glp_term_out(previous_output);
        }
      }
    }
  }

  // GLPK's answer, checked by recomputing it (never trusting GLPK's own objective).
  bool glpk_feasible = false;
  if (!run.failed && (run.mip_status == GLP_OPT || run.mip_status == GLP_FEAS)) {
    std::vector<int32_t> assignment = AssignmentFromColumns(model, run.column_value);
    const long double objective = WorkObjective(problem, assignment);
    glpk_feasible = objective < kInfinity && WorkMemoryFeasible(problem, assignment);
    if (glpk_feasible && objective < best_objective) {
      best = std::move(assignment);
      best_objective = objective;
    }
  }
  result.nodes = run.nodes;
  const bool have = !best.empty();
  result.assignment = best;
  result.objective = best_objective;
  const long double bound = static_cast<long double>(std::max(run.root_bound, run.tree_bound));
  result.lower_bound = std::min(bound + model.offset, result.objective);
  if (run.failed) {
    result.status = IlpStatus::kError;
    result.message = "GLPK error: " + std::string(run.message, run.message_length);
    while (!result.message.empty() && result.message.back() == '\n') result.message.pop_back();
  } else if (run.lp_status == GLP_NOFEAS || (run.intopt_ret == 0 && run.mip_status == GLP_NOFEAS)) {
    // GLPK's infeasibility verdict is numerical; a checked incumbent outranks it.
    result.status = have ? IlpStatus::kFeasible : IlpStatus::kInfeasible;
    if (!have) result.lower_bound = kInfinity;
    result.message = have ? "GLPK reported infeasible, but the incumbent is feasible"
                          : "GLPK proved the ILP infeasible";
  } else if (run.proven_by_bound) {
    result.status = IlpStatus::kOptimal;  // the incumbent meets the root bound
    if (options.relative_gap <= 0) result.lower_bound = result.objective;
  } else if ((run.intopt_ret == 0 && run.mip_status == GLP_OPT) || run.intopt_ret == GLP_EMIPGAP) {
    if (glpk_feasible) {
      result.status = IlpStatus::kOptimal;
      if (run.intopt_ret == 0 && options.relative_gap <= 0) result.lower_bound = result.objective;
    } else {
      result.status = have ? IlpStatus::kFeasible : IlpStatus::kNoSolution;
      result.message = "GLPK's solution violates a constraint after rounding";
    }
  } else if (run.stopped || control.expired() || run.simplex_ret == GLP_ETMLIM ||
             run.intopt_ret == GLP_ETMLIM || run.intopt_ret == GLP_ESTOP) {
    result.status = have ? IlpStatus::kFeasible : IlpStatus::kNoSolution;
    if (control.cancelled()) {
      result.message = "cancelled";
    } else if (control.expired() || run.simplex_ret == GLP_ETMLIM || run.intopt_ret == GLP_ETMLIM) {
      result.message = "time limit reached";
    } else {
      result.message = "stopped by on_progress or the node limit";
    }
  } else {
    result.status = have ? IlpStatus::kFeasible : IlpStatus::kError;
    result.message = "GLPK failed: glp_simplex returned " + std::to_string(run.simplex_ret) +
                     ", glp_intopt returned " + std::to_string(run.intopt_ret);
  }
  if (run.progress_threw) result.message += " (on_progress threw an exception)";
  return result;
}

}  // namespace alpa
