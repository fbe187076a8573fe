#include "solvers/sharding/ilp/ilp_model.h"

#include <cstdint>
#include <limits>
#include <vector>

#include <gtest/gtest.h>

#include "solvers/sharding/work_problem.h"

namespace alpa {
namespace {

constexpr double kInf = kInfCost;

// Column values (1-based) that select `assignment` on the s columns.
std::vector<double> SColumnValues(const IlpModel& model, const std::vector<int32_t>& assignment) {
  std::vector<double> value(static_cast<size_t>(model.columns) + 1, 0.0);
  for (size_t v = 0; v < assignment.size(); ++v) {
    if (model.fixed[v] >= 0) continue;
    value[static_cast<size_t>(model.s_col[v][static_cast<size_t>(assignment[v])])] = 1.0;
  }
  return value;
}

TEST(IlpModelTest, FoldsSingleStrategyNodeAndShiftsCosts) {
  WorkProblem p;
  p.constant = 10;
  p.cost = {{5, kInf}, {1, 2, 3}};
  p.edges = {{0, 1, {10, 0, 4, kInf, kInf, kInf}}};
  const IlpModel model = BuildIlpModel(p);
  ASSERT_TRUE(model.infeasible.empty()) << model.infeasible;
  EXPECT_EQ(model.fixed, (std::vector<int32_t>{0, -1}));
  EXPECT_TRUE(model.e_edge.empty());  // folded into node 1's costs: {11, 2, 7}
  EXPECT_EQ(model.columns, 3);
  EXPECT_EQ(model.s_columns, 3);
  EXPECT_EQ(model.objective, (std::vector<double>{0, 9, 0, 5}));
  EXPECT_EQ(model.offset, 17);  // 10 + 5 + the cheapest folded cost 2
  EXPECT_EQ(model.rows(), 1);   // sum_i s[1][i] = 1
  for (int32_t s = 0; s < 3; ++s) {
    const std::vector<int32_t> assignment =
        AssignmentFromColumns(model, SColumnValues(model, {0, s}));
    EXPECT_EQ(assignment, (std::vector<int32_t>{0, s}));
    const size_t c = static_cast<size_t>(model.s_col[1][static_cast<size_t>(s)]);
    EXPECT_EQ(model.objective[c] + model.offset, WorkObjective(p, assignment));
  }
}

TEST(IlpModelTest, ReportsInfeasibilityBeforeSearch) {
  WorkProblem p;
  p.cost = {{1, 2}, {1, 2}};
  p.edges = {{0, 1, {kInf, kInf, kInf, kInf}}};
  EXPECT_EQ(BuildIlpModel(p).infeasible,
            "node 0 has no strategy compatible with its costs and edges");

  WorkProblem m;
  m.cost = {{1, 2}};
  m.memory_items = {{0, {2, 3}}};
  m.memory_rows = {{1, {0}}};
  EXPECT_EQ(BuildIlpModel(m).infeasible, "memory row 0 cannot hold even the smallest usages");
}

TEST(IlpModelTest, MemoryRowIsShiftedAndDividedByGcd) {
  WorkProblem p;
  p.cost = {{1, 1}, {1, 1}, {1, 1}};
  p.memory_items = {{0, {0, 4}}, {1, {2, 8}}, {2, {0, 7}}};
  p.memory_rows = {{8, {0, 1, 2}}};
  const IlpModel model = BuildIlpModel(p);
  ASSERT_TRUE(model.infeasible.empty()) << model.infeasible;
  // rhs 8 - 2 = 6; coefficients 4, 6 and 7 (> 6: that column is fixed at 0); gcd 2.
  ASSERT_EQ(model.rows(), 4);
  EXPECT_TRUE(model.row_is_memory[4]);
  EXPECT_EQ(model.row_rhs[4], 3.0);
  EXPECT_EQ(model.column_upper[static_cast<size_t>(model.s_col[2][1])], 0.0);
  std::vector<double> row4(static_cast<size_t>(model.columns) + 1, 0.0);
  for (size_t t = 1; t < model.ia.size(); ++t) {
    if (model.ia[t] == 4) row4[static_cast<size_t>(model.ja[t])] = model.ar[t];
  }
  EXPECT_EQ(row4[static_cast<size_t>(model.s_col[0][1])], 2.0);
  EXPECT_EQ(row4[static_cast<size_t>(model.s_col[1][1])], 3.0);
  EXPECT_EQ(row4[static_cast<size_t>(model.s_col[2][1])], 0.0);

  // A row that holds even at the largest usages is left out.
  p.memory_rows = {{100, {0, 1, 2}}};
  EXPECT_EQ(BuildIlpModel(p).rows(), 3);
}

TEST(IlpModelTest, IncumbentPrunesEdgeColumns) {
  WorkProblem p;
  p.cost = {{0, 0}, {0, 0}};
  p.edges = {{0, 1, {0, 100, 100, 0}}};
  const IlpModel model = BuildIlpModel(p);
  ASSERT_TRUE(model.infeasible.empty()) << model.infeasible;
  ASSERT_EQ(model.columns, 8);  // s: 1-4, e: 5-8 in row-major order
  EXPECT_EQ(model.s_columns, 4);
  EXPECT_EQ(model.rows(), 6);

  const std::vector<char> uses = IncumbentColumns(p, model, {1, 1});
  EXPECT_EQ(uses, (std::vector<char>{0, 0, 1, 0, 1, 0, 0, 0, 1}));
  EXPECT_TRUE(IncumbentColumns(p, model, {1}).empty());
  EXPECT_TRUE(IncumbentColumns(p, model, {0, 2}).empty());

  const IlpLp all = SelectLpColumns(model, std::numeric_limits<double>::infinity(), uses);
  EXPECT_EQ(all.lp_columns(), 8);
  EXPECT_EQ(all.ia.size(), 1 + 4 + 4 + 8u);  // sum rows, -s in e rows, two 1s per e column

  const IlpLp pruned = SelectLpColumns(model, 50.0, uses);
  EXPECT_EQ(pruned.model_of, (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 8}));
  EXPECT_EQ(pruned.fixed_zero, (std::vector<char>{0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(pruned.incumbent_x, (std::vector<double>{0, 0, 1, 0, 1, 0, 1}));
  EXPECT_EQ(pruned.ia.size(), 1 + 4 + 4 + 4u);

  // Every strategy needs an edge entry above the limit: the s columns are fixed at 0.
  const IlpLp none = SelectLpColumns(model, -1.0, {});
  EXPECT_EQ(none.lp_columns(), 4);
  EXPECT_EQ(none.fixed_zero, (std::vector<char>{0, 1, 1, 1, 1}));
  EXPECT_TRUE(none.incumbent_x.empty());
}

}  // namespace
}  // namespace alpa
