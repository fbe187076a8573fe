// The memory check in interval form (work_problem.h's MemoryIntervals): when every item sits in
// consecutive rows, WorkMemoryFeasible sums a running total per row instead of walking every row
// entry. It must answer exactly as the walk does (WorkMemoryFeasibleByRows): on hand-made rows, on
// random interval rows with capacities at the boundary and usages near the 64-bit limit, after
// the rows change under it, and on the normalized and reduced IOPDDL problems the solver checks.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "core/problem/problem_io.h"
#include "core/util/wide_int.h"
#include "solvers/sharding/memory_rows.h"
#include "solvers/sharding/normalize.h"
#include "solvers/sharding/reductions/reductions.h"
#include "support/test_data.h"

namespace alpa {
namespace {

// Nodes of `strategies` strategies each; one item per node.
WorkProblem NodesWithItems(int32_t nodes, int32_t strategies) {
  WorkProblem w;
  w.cost.assign(static_cast<size_t>(nodes), std::vector<double>(static_cast<size_t>(strategies)));
  for (int32_t v = 0; v < nodes; ++v) {
    w.memory_items.push_back(MemoryItem{v, std::vector<int64_t>(static_cast<size_t>(strategies))});
  }
  return w;
}

// Every assignment of a small problem (strategies^nodes of them).
std::vector<std::vector<int32_t>> AllAssignments(int32_t nodes, int32_t strategies) {
  std::vector<std::vector<int32_t>> all;
  std::vector<int32_t> a(static_cast<size_t>(nodes), 0);
  while (true) {
    all.push_back(a);
    size_t k = 0;
    while (k < a.size() && ++a[k] == strategies) a[k++] = 0;
    if (k == a.size()) return all;
  }
}

TEST(MemoryIntervals, ConsecutiveRowsAreIndexedAndAnswerAsTheWalk) {
  WorkProblem w = NodesWithItems(3, 2);
  w.memory_items[0].usage = {0, 5};
  w.memory_items[1].usage = {1, 4};
  w.memory_items[2].usage = {0, 7};
  w.memory_rows = {MemoryRow{6, {0, 1}}, MemoryRow{8, {0, 1, 2}}, MemoryRow{7, {2}}};
  IndexMemoryIntervals(&w, SolveControl());
  ASSERT_TRUE(w.memory_intervals.valid);
  EXPECT_EQ(w.memory_intervals.first, (std::vector<int32_t>{0, 0, 1}));
  EXPECT_EQ(w.memory_intervals.last, (std::vector<int32_t>{1, 1, 2}));
  int feasible = 0;
  for (const std::vector<int32_t>& a : AllAssignments(3, 2)) {
    EXPECT_EQ(WorkMemoryFeasible(w, a), WorkMemoryFeasibleByRows(w, a));
    feasible += WorkMemoryFeasible(w, a) ? 1 : 0;
  }
  EXPECT_GT(feasible, 0);
  EXPECT_LT(feasible, 8);
}

TEST(MemoryIntervals, AnItemThatLeavesAndComesBackIsNotIndexed) {
  WorkProblem w = NodesWithItems(2, 2);
  w.memory_items[0].usage = {0, 5};
  w.memory_items[1].usage = {0, 5};
  w.memory_rows = {MemoryRow{6, {0}}, MemoryRow{6, {1}}, MemoryRow{6, {0, 1}}};
  IndexMemoryIntervals(&w, SolveControl());
  EXPECT_FALSE(w.memory_intervals.valid);
  for (const std::vector<int32_t>& a : AllAssignments(2, 2)) {
    EXPECT_EQ(WorkMemoryFeasible(w, a), WorkMemoryFeasibleByRows(w, a));
  }
}

TEST(MemoryIntervals, RowsChangedAfterIndexingAreWalked) {
  WorkProblem w = NodesWithItems(2, 2);
  w.memory_items[0].usage = {0, 5};
  w.memory_items[1].usage = {0, 5};
  w.memory_rows = {MemoryRow{6, {0}}, MemoryRow{6, {1}}};
  IndexMemoryIntervals(&w, SolveControl());
  ASSERT_TRUE(w.memory_intervals.valid);
  w.memory_rows[0].items.push_back(1);  // row 0 now holds both: {1, 1} breaks it
  EXPECT_FALSE(WorkMemoryFeasible(w, {1, 1}));
  EXPECT_TRUE(WorkMemoryFeasible(w, {0, 1}) == WorkMemoryFeasibleByRows(w, {0, 1}));
}

TEST(MemoryIntervals, AStoppedIndexLeavesTheRowsToBeWalked) {
  WorkProblem w = NodesWithItems(1, 2);
  w.memory_rows = {MemoryRow{6, {0}}};
  std::atomic<bool> cancel{true};
  IndexMemoryIntervals(&w, SolveControl::WithTimeLimit(1e9, &cancel, nullptr));
  EXPECT_FALSE(w.memory_intervals.valid);
}

TEST(MemoryIntervals, RandomIntervalRowsAnswerAsTheWalk) {
  std::mt19937_64 rng(5);
  for (int round = 0; round < 200; ++round) {
    const int32_t nodes = 1 + static_cast<int32_t>(rng() % 12);
    const int32_t strategies = 1 + static_cast<int32_t>(rng() % 3);
    const int32_t rows = 1 + static_cast<int32_t>(rng() % 10);
    WorkProblem w = NodesWithItems(nodes, strategies);
    // Half the rounds use usages near the 64-bit limit (sums need more than 64 bits).
    const bool huge = round % 2 == 1;
    for (MemoryItem& item : w.memory_items) {
      for (int64_t& u : item.usage) {
        u = huge ? std::numeric_limits<int64_t>::max() - static_cast<int64_t>(rng() % 1000)
                 : static_cast<int64_t>(rng() % 100);
      }
    }
    w.memory_rows.assign(static_cast<size_t>(rows), MemoryRow{});
    for (int32_t i = 0; i < nodes; ++i) {
      const int32_t first = static_cast<int32_t>(rng() % static_cast<uint64_t>(rows));
      const int32_t last =
          first + static_cast<int32_t>(rng() % static_cast<uint64_t>(rows - first));
      for (int32_t r = first; r <= last; ++r)
        w.memory_rows[static_cast<size_t>(r)].items.push_back(i);
    }
    // Capacities around the sum under a random reference assignment.
    std::vector<int32_t> reference(static_cast<size_t>(nodes));
    for (int32_t& s : reference)
      s = static_cast<int32_t>(rng() % static_cast<uint64_t>(strategies));
    for (MemoryRow& row : w.memory_rows) {
      Int128 sum = 0;
      for (int32_t i : row.items) {
        sum += w.memory_items[static_cast<size_t>(i)]
                   .usage[static_cast<size_t>(reference[static_cast<size_t>(i)])];
      }
      const Int128 jitter = static_cast<Int128>(static_cast<int64_t>(rng() % 21) - 10);
      const Int128 cap = sum + jitter;
      const Int128 top = std::numeric_limits<int64_t>::max();
      row.capacity = static_cast<int64_t>(cap > top ? top : (cap < 0 ? Int128(0) : cap));
    }
    IndexMemoryIntervals(&w, SolveControl());
    ASSERT_TRUE(w.memory_intervals.valid);
    for (int k = 0; k < 50; ++k) {
      std::vector<int32_t> a(static_cast<size_t>(nodes));
      for (int32_t& s : a) s = static_cast<int32_t>(rng() % static_cast<uint64_t>(strategies));
      if (k == 0) a = reference;
      ASSERT_EQ(WorkMemoryFeasible(w, a), WorkMemoryFeasibleByRows(w, a)) << "round " << round;
    }
  }
}

// The IOPDDL problems' rows come from liveness intervals: the normalized problem and the
// reduced core are indexed, and the check answers as the walk for random assignments and for
// the cheapest strategy of every node.
TEST(MemoryIntervals, IopddlProblemsAreIndexedAndAnswerAsTheWalk) {
  for (const char* name : {"G", "M"}) {
    const std::string path =
        testing::SharedDataPath(std::string("asplos-2025-iopddl-") + name + ".json.gz");
    if (path.empty()) GTEST_SKIP() << "shared IOPDDL data not present";
    Result<ShardingProblem> problem = ReadProblemFile(path);
    ASSERT_TRUE(problem.ok()) << problem.status().message();
    Result<NormalizedProblem> normalized = Normalize(problem.value());
    ASSERT_TRUE(normalized.ok()) << normalized.status().message();
    const ReducedProblem reduced(normalized.value().work);
    std::mt19937_64 rng(9);
    const WorkProblem& work = normalized.value().work;
    for (const WorkProblem* w : {&work, &reduced.core()}) {
      EXPECT_TRUE(w->memory_intervals.valid) << name;
      int feasible = 0;
      for (int k = 0; k < 12; ++k) {
        std::vector<int32_t> a(static_cast<size_t>(w->node_count()), 0);
        for (int32_t v = 0; v < w->node_count(); ++v) {
          // k == 0: strategy 0 everywhere; else random.
          if (k > 0)
            a[static_cast<size_t>(v)] =
                static_cast<int32_t>(rng() % static_cast<uint64_t>(w->strategy_count(v)));
        }
        const bool fast = WorkMemoryFeasible(*w, a);
        EXPECT_EQ(fast, WorkMemoryFeasibleByRows(*w, a)) << name << " assignment " << k;
        feasible += fast ? 1 : 0;
      }
      (void)feasible;
    }
  }
}

}  // namespace
}  // namespace alpa
