// The sharding ILP as plain data, independent of any solver library: binary s[v][i] per node
// strategy, e[uv][i][j] in [0, 1] per finite edge entry with the tight linearization
// (sum_j e[i][j] = s_u[i], sum_i e[i][j] = s_v[j]), and one row per binding memory row.
// Forbidden strategies are removed, single-strategy nodes are folded into their neighbours'
// costs, costs are shifted to be >= 0 (the shift goes to `offset`), and memory rows are reduced
// exactly (Int128, gcd). SelectLpColumns prunes the columns an incumbent makes useless;
// AssignmentFromColumns maps a column solution back to one strategy per node.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "solvers/sharding/work_problem.h"

namespace alpa {

// A row's sense: = rhs (one-hot and linearization rows) or <= rhs (memory rows).
enum class RowSense { kEqual, kAtMost };

// The ILP in a solver's terms (1-based rows and columns, as GLPK's API).
struct IlpModel {
  // Per node: its single allowed strategy (no column), or -1 when it has columns.
  std::vector<int32_t> fixed;
  // Per node and strategy: the column (1-based) of s[v][i]; 0 when the strategy is
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
  int32_t AddRow(double rhs, RowSense sense) {
    row_rhs.push_back(rhs);
    row_is_memory.push_back(sense == RowSense::kAtMost ? 1 : 0);
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
  // Non-empty when the problem is infeasible before any search (the rest is then unusable).
  std::string infeasible;
};

// Builds the model of `problem` (at least one node).
IlpModel BuildIlpModel(const WorkProblem& problem);

// The LP actually handed to the solver: every s column, and the e columns that can still appear
// in a solution costing at most the limit (the others are left out; dead s columns are fixed at
// 0). Columns are renumbered 1..lp_columns(); s columns keep their model numbers.
struct IlpLp {
  std::vector<int32_t> model_of{0};  // LP column -> model column
  std::vector<char> fixed_zero{0};   // per LP column: fixed at 0
  std::vector<int> ia{0}, ja{0};     // triplets, 1-based (index 0 unused)
  std::vector<double> ar{0.0};
  std::vector<double> incumbent_x;  // per LP column, 1-based; empty without an incumbent

  int32_t lp_columns() const { return static_cast<int32_t>(model_of.size()) - 1; }
};

// `limit` is in model units (objective without offset; +inf: keep everything), tolerance
// included. `incumbent_uses` is IncumbentColumns' answer (may be empty).
IlpLp SelectLpColumns(const IlpModel& model, double limit, const std::vector<char>& incumbent_uses);

// The incumbent's columns (per model column, 1-based), or empty when it is not a feasible
// assignment of this model.
std::vector<char> IncumbentColumns(const WorkProblem& problem, const IlpModel& model,
                                   const std::vector<int32_t>& incumbent);

// One strategy per node from per-model-column values (1-based): each node takes its largest s.
std::vector<int32_t> AssignmentFromColumns(const IlpModel& model, const std::vector<double>& value);

}  // namespace alpa
