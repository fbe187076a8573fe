#include "solvers/sharding/elimination/block_elimination.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstring>
#include <map>
#include <optional>
#include <queue>
#include <thread>
#include <utility>

namespace alpa {
namespace {

// Separators: every node without a group, plus a greedy cover of the edges between groups
// (most uncovered edges per bit of domain first), less the nodes the others make redundant.
std::vector<bool> ChooseSeparators(const WorkProblem& core, const std::vector<int32_t>& groups) {
  const size_t n = static_cast<size_t>(core.node_count());
  std::vector<bool> separator(n, groups.size() != n);
  if (groups.size() != n) return separator;
  for (size_t v = 0; v < n; ++v) separator[v] = groups[v] < 0;
  std::vector<std::vector<int32_t>> crossing(n);  // per node: neighbours across a group border
  for (const WorkEdge& e : core.edges) {
    const size_t a = static_cast<size_t>(e.a);
    const size_t b = static_cast<size_t>(e.b);
    if (groups[a] == groups[b] || separator[a] || separator[b]) continue;
    crossing[a].push_back(e.b);
    crossing[b].push_back(e.a);
  }
  // Picks the best node by score, ties to the lowest id, from a heap whose entries go stale
  // when a neighbour is picked (scores only fall, so a stale entry is simply skipped).
  std::vector<int32_t> uncovered(n);
  auto score = [&](size_t v) {
    return uncovered[v] / std::log2(1.0 + core.strategy_count(static_cast<int32_t>(v)));
  };
  auto worse = [](const std::pair<double, int32_t>& x, const std::pair<double, int32_t>& y) {
    return x.first != y.first ? x.first < y.first : x.second > y.second;
  };
  std::priority_queue<std::pair<double, int32_t>, std::vector<std::pair<double, int32_t>>,
                      decltype(worse)>
      heap(worse);
  for (size_t v = 0; v < n; ++v) {
    uncovered[v] = static_cast<int32_t>(crossing[v].size());
    if (uncovered[v] > 0) heap.emplace(score(v), static_cast<int32_t>(v));
  }
  std::vector<int32_t> chosen;
  while (!heap.empty()) {
    const auto [entry_score, best] = heap.top();
    heap.pop();
    const size_t v = static_cast<size_t>(best);
    if (separator[v] || uncovered[v] == 0 || entry_score != score(v)) continue;
    separator[v] = true;
    chosen.push_back(best);
    for (int32_t u : crossing[v]) {
      const size_t w = static_cast<size_t>(u);
      if (separator[w]) continue;
      if (--uncovered[w] > 0) heap.emplace(score(w), u);
    }
  }
  std::stable_sort(chosen.begin(), chosen.end(), [&](int32_t a, int32_t b) {
    return core.strategy_count(a) > core.strategy_count(b);
  });
  for (int32_t v : chosen) {
    const std::vector<int32_t>& around = crossing[static_cast<size_t>(v)];
    if (std::all_of(around.begin(), around.end(),
                    [&](int32_t u) { return separator[static_cast<size_t>(u)]; })) {
      separator[static_cast<size_t>(v)] = false;
    }
  }
  return separator;
}

uint64_t Bits(double x) {
  uint64_t bits = 0;
  std::memcpy(&bits, &x, sizeof bits);
  return bits;
}

// A block as an elimination problem over local variables: interior nodes 0..ni-1, then its
// separators. `key` is its content (domains, costs, edges, all bit-exact): equal keys mean the
// same problem.
struct BlockProblem {
  int32_t interior = 0;
  std::vector<int32_t> domain;
  std::vector<Factor> factors;
  std::vector<uint64_t> key;
};

struct BlockInstance {
  int32_t distinct = 0;
  std::vector<int32_t> interior;  // core nodes, ascending
  std::vector<int32_t> boundary;  // separator core nodes, ascending
};

BlockProblem MakeBlockProblem(const WorkProblem& core,
                              const std::vector<std::vector<int32_t>>& adjacency,
                              const BlockInstance& block) {
  BlockProblem block_problem;
  block_problem.interior = static_cast<int32_t>(block.interior.size());
  auto local = [&](int32_t node) {
    auto it = std::lower_bound(block.interior.begin(), block.interior.end(), node);
    if (it != block.interior.end() && *it == node) {
      return static_cast<int32_t>(it - block.interior.begin());
    }
    it = std::lower_bound(block.boundary.begin(), block.boundary.end(), node);
    return block_problem.interior + static_cast<int32_t>(it - block.boundary.begin());
  };
  block_problem.key.push_back(block.interior.size());
  block_problem.key.push_back(block.boundary.size());
  for (const std::vector<int32_t>* list : {&block.interior, &block.boundary}) {
    for (int32_t v : *list) {
      block_problem.domain.push_back(core.strategy_count(v));
      block_problem.key.push_back(static_cast<uint64_t>(core.strategy_count(v)));
    }
  }
  for (int32_t v : block.interior) {
    Factor unary;
    unary.vars = {local(v)};
    unary.table = core.cost[static_cast<size_t>(v)];
    for (double c : unary.table) block_problem.key.push_back(Bits(c));
    block_problem.factors.push_back(std::move(unary));
  }
  std::vector<int32_t> edges;
  for (int32_t v : block.interior) {
    for (int32_t e : adjacency[static_cast<size_t>(v)]) edges.push_back(e);
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  std::vector<std::pair<std::pair<int32_t, int32_t>, int32_t>> local_edges;
  for (int32_t e : edges) {
    const WorkEdge& edge = core.edges[static_cast<size_t>(e)];
    local_edges.push_back({{local(edge.a), local(edge.b)}, e});
  }
  std::sort(local_edges.begin(), local_edges.end());
  for (const auto& [ends, e] : local_edges) {
    Factor f;
    f.vars = {ends.first, ends.second};
    f.table = core.edges[static_cast<size_t>(e)].cost;
    block_problem.key.push_back(static_cast<uint64_t>(ends.first));
    block_problem.key.push_back(static_cast<uint64_t>(ends.second));
    for (double c : f.table) block_problem.key.push_back(Bits(c));
    block_problem.factors.push_back(std::move(f));
  }
  return block_problem;
}

// Blocks: connected components of the non-separator nodes, each with its separator
// neighbours.
std::vector<BlockInstance> FindBlocks(const WorkProblem& core,
                                      const std::vector<std::vector<int32_t>>& adjacency,
                                      const std::vector<bool>& separator) {
  const int32_t n = core.node_count();
  std::vector<BlockInstance> blocks;
  std::vector<bool> seen(static_cast<size_t>(n), false);
  for (int32_t start = 0; start < n; ++start) {
    if (separator[static_cast<size_t>(start)] || seen[static_cast<size_t>(start)]) continue;
    BlockInstance block;
    std::vector<int32_t> stack = {start};
    seen[static_cast<size_t>(start)] = true;
    while (!stack.empty()) {
      const int32_t v = stack.back();
      stack.pop_back();
      block.interior.push_back(v);
      for (int32_t e : adjacency[static_cast<size_t>(v)]) {
        const WorkEdge& edge = core.edges[static_cast<size_t>(e)];
        const int32_t u = edge.a == v ? edge.b : edge.a;
        if (separator[static_cast<size_t>(u)]) {
          block.boundary.push_back(u);
        } else if (!seen[static_cast<size_t>(u)]) {
          seen[static_cast<size_t>(u)] = true;
          stack.push_back(u);
        }
      }
    }
    std::sort(block.interior.begin(), block.interior.end());
    std::sort(block.boundary.begin(), block.boundary.end());
    block.boundary.erase(std::unique(block.boundary.begin(), block.boundary.end()),
                         block.boundary.end());
    blocks.push_back(std::move(block));
  }
  return blocks;
}

// The distinct block problems: identical blocks share one (each block's `distinct` set).
std::vector<BlockProblem> DistinctBlockProblems(const WorkProblem& core,
                                                const std::vector<std::vector<int32_t>>& adjacency,
                                                std::vector<BlockInstance>& blocks) {
  std::vector<BlockProblem> distinct;
  std::map<std::vector<uint64_t>, int32_t> by_key;
  for (BlockInstance& block : blocks) {
    BlockProblem problem = MakeBlockProblem(core, adjacency, block);
    auto [it, inserted] = by_key.emplace(problem.key, static_cast<int32_t>(distinct.size()));
    block.distinct = it->second;
    if (inserted) {
      problem.key.clear();
      problem.key.shrink_to_fit();
      distinct.push_back(std::move(problem));
    }
  }
  return distinct;
}

// The separators (ascending) and the factors among them alone: their costs and the edges
// between two separators.
struct SeparatorProblem {
  std::vector<int32_t> separators;
  std::vector<Factor> factors;
};

SeparatorProblem SeparatorFactors(const WorkProblem& core, const std::vector<bool>& separator) {
  SeparatorProblem out;
  for (int32_t v = 0; v < core.node_count(); ++v) {
    if (!separator[static_cast<size_t>(v)]) continue;
    out.separators.push_back(v);
    out.factors.push_back(Factor{{v}, core.cost[static_cast<size_t>(v)]});
  }
  for (const WorkEdge& e : core.edges) {
    if (separator[static_cast<size_t>(e.a)] && separator[static_cast<size_t>(e.b)]) {
      out.factors.push_back(Factor{{e.a, e.b}, e.cost});
    }
  }
  return out;
}

// Plans everything before computing anything: the blocks, then the separators over one table
// per block spanning all its separators (an upper bound of what the blocks leave). Returns the
// block plans, or nullopt when the work exceeds the limits; adds the planned work to `work`.
std::optional<std::vector<EliminationPlan>> PlanBlocksAndSeparators(
    const std::vector<BlockProblem>& distinct, const std::vector<BlockInstance>& blocks,
    const std::vector<int32_t>& domain, const SeparatorProblem& top,
    const EliminationLimits& limits, const SolveControl& control, double& work) {
  std::vector<EliminationPlan> plans;
  for (const BlockProblem& problem : distinct) {
    if (control.expired()) return std::nullopt;
    std::vector<int32_t> interior(static_cast<size_t>(problem.interior));
    for (int32_t i = 0; i < problem.interior; ++i) interior[static_cast<size_t>(i)] = i;
    EliminationLimits left = limits;
    left.max_work = limits.max_work - work;
    plans.push_back(PlanElimination(problem.domain, problem.factors, interior, left, control));
    if (!plans.back().within_limits) return std::nullopt;
    work += plans.back().work;
  }
  std::vector<Factor> outline;  // the plan reads scopes only
  for (const Factor& f : top.factors) outline.push_back(Factor{f.vars, {}});
  for (const BlockInstance& block : blocks) outline.push_back(Factor{block.boundary, {}});
  EliminationLimits left = limits;
  left.max_work = limits.max_work - work;
  const EliminationPlan plan = PlanElimination(domain, outline, top.separators, left, control);
  if (!plan.within_limits) return std::nullopt;
  work += plan.work;
  return plans;
}

// The distinct blocks, side by side; a worker stops at its first incomplete elimination.
std::vector<EliminationOutcome> EliminateBlocks(const std::vector<BlockProblem>& distinct,
                                                const std::vector<EliminationPlan>& plans,
                                                const SolveControl& control, int32_t threads) {
  std::vector<EliminationOutcome> outcomes(distinct.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < distinct.size(); i = next++) {
      outcomes[i] = Eliminate(distinct[i].domain, distinct[i].factors, plans[i].order, control);
      if (!outcomes[i].completed) return;
    }
  };
  const size_t workers =
      std::min(distinct.size(), static_cast<size_t>(std::max<int32_t>(1, threads)));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < workers; ++t) pool.emplace_back(work);
  work();
  for (std::thread& worker : pool) worker.join();
  return outcomes;
}

// What each block left over its separators, as factors on core nodes, appended to `factors`.
void AddBlockRemainders(const std::vector<BlockInstance>& blocks,
                        const std::vector<BlockProblem>& distinct,
                        const std::vector<EliminationOutcome>& outcomes,
                        std::vector<Factor>& factors) {
  for (const BlockInstance& block : blocks) {
    const BlockProblem& problem = distinct[static_cast<size_t>(block.distinct)];
    for (const Factor& f : outcomes[static_cast<size_t>(block.distinct)].remaining) {
      Factor mapped{{}, f.table};
      for (int32_t local : f.vars) {
        mapped.vars.push_back(block.boundary[static_cast<size_t>(local - problem.interior)]);
      }
      factors.push_back(std::move(mapped));
    }
  }
}

// Back substitution: the separators from the top elimination, then each block's interior
// given its separators.
std::vector<int32_t> AssembleAssignment(int32_t node_count, const EliminationOutcome& top,
                                        const std::vector<BlockInstance>& blocks,
                                        const std::vector<BlockProblem>& distinct,
                                        const std::vector<EliminationOutcome>& outcomes) {
  std::vector<int32_t> assignment(static_cast<size_t>(node_count), 0);
  BackSubstitute(top.steps, &assignment);
  for (const BlockInstance& block : blocks) {
    const BlockProblem& problem = distinct[static_cast<size_t>(block.distinct)];
    std::vector<int32_t> local(problem.domain.size(), 0);
    for (size_t j = 0; j < block.boundary.size(); ++j) {
      local[static_cast<size_t>(problem.interior) + j] =
          assignment[static_cast<size_t>(block.boundary[j])];
    }
    BackSubstitute(outcomes[static_cast<size_t>(block.distinct)].steps, &local);
    for (size_t i = 0; i < block.interior.size(); ++i) {
      assignment[static_cast<size_t>(block.interior[i])] = local[i];
    }
  }
  return assignment;
}

}  // namespace

BlockEliminationResult SolveByBlockElimination(const WorkProblem& core,
                                               const std::vector<int32_t>& groups,
                                               const SolveControl& control, int32_t threads,
                                               const EliminationLimits& limits) {
  BlockEliminationResult result;
  const int32_t n = core.node_count();
  for (int32_t v = 0; v < n; ++v) {
    if (core.strategy_count(v) == 0) return result;
  }
  // Planning is not interruptible inside; the control is read between its steps.
  auto stopped = [&control, &result] {
    if (!control.expired()) return false;
    result.status = BlockEliminationStatus::kStopped;
    return true;
  };
  if (stopped()) return result;
  const std::vector<bool> separator = ChooseSeparators(core, groups);
  const std::vector<std::vector<int32_t>> adjacency = BuildAdjacency(core);
  std::vector<BlockInstance> blocks = FindBlocks(core, adjacency, separator);
  if (stopped()) return result;
  const std::vector<BlockProblem> distinct = DistinctBlockProblems(core, adjacency, blocks);
  if (stopped()) return result;
  result.stats.blocks = static_cast<int32_t>(blocks.size());
  result.stats.distinct_blocks = static_cast<int32_t>(distinct.size());
  result.stats.separator_nodes =
      static_cast<int32_t>(std::count(separator.begin(), separator.end(), true));

  std::vector<int32_t> domain(static_cast<size_t>(n));
  for (int32_t v = 0; v < n; ++v) domain[static_cast<size_t>(v)] = core.strategy_count(v);
  SeparatorProblem top = SeparatorFactors(core, separator);
  if (stopped()) return result;
  const std::optional<std::vector<EliminationPlan>> plans =
      PlanBlocksAndSeparators(distinct, blocks, domain, top, limits, control, result.stats.work);
  if (!plans || stopped()) return result;

  const std::vector<EliminationOutcome> outcomes =
      EliminateBlocks(distinct, *plans, control, threads);
  for (const EliminationOutcome& outcome : outcomes) {
    if (!outcome.completed) {
      result.status = BlockEliminationStatus::kStopped;
      return result;
    }
  }

  // The separators, over what the blocks left.
  AddBlockRemainders(blocks, distinct, outcomes, top.factors);
  const EliminationPlan plan =
      PlanElimination(domain, top.factors, top.separators, limits, control);
  if (!plan.within_limits || stopped()) return result;
  const EliminationOutcome top_outcome =
      Eliminate(domain, std::move(top.factors), plan.order, control);
  if (!top_outcome.completed) {
    result.status = BlockEliminationStatus::kStopped;
    return result;
  }
  result.assignment = AssembleAssignment(n, top_outcome, blocks, distinct, outcomes);
  result.status = BlockEliminationStatus::kSolved;
  return result;
}

}  // namespace alpa
