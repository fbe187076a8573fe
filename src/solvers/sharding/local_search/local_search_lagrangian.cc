// Global restarts from a Lagrangian relaxation of the memory rows, solved by message passing.
//
// Row prices lambda_r >= 0 turn memory into node costs: a strategy costs its node cost plus,
// for each of the node's rows, lambda_r times its usage there. Sequential tree-reweighted
// message passing (local_search_trws.h) finds a low-energy labelling of that priced problem;
// projected subgradient steps move the prices. Each round also decodes a second, more heavily
// priced copy (prices times an inflation factor that adapts so that its labellings sit at the
// edge of feasibility), repairs it into the memory rows and polishes it by descent: these are the
// global restarts that local moves cannot reach. Without memory rows the same loop simply runs
// message passing on the costs.
#include <algorithm>
#include <cmath>
#include <limits>

#include "solvers/sharding/local_search/local_search_searcher.h"
#include "solvers/sharding/local_search/local_search_trws.h"

namespace alpa {
namespace {

constexpr int32_t kWarmSweeps = 30;  // first round: messages start from zero
constexpr int32_t kSweeps = 5;       // per price update
constexpr double kBudgetShare = 0.3;
constexpr int32_t kPatience = 50;  // rounds without a new best before handing over
constexpr double kInitialInflation = 1.3;
constexpr double kMaxInflation = 1e3;

// unary = node costs + factor * (price of each memory run * usage there).
void PricedCosts(const SearchGraph& graph, const MemoryTracker& memory,
                 const std::vector<double>& run_price, double factor, const MessagePassing& layout,
                 std::vector<double>* unary) {
  for (int32_t v = 0; v < graph.node_count(); ++v) {
    const size_t k = static_cast<size_t>(graph.strategy_count(v));
    double* u = unary->data() + layout.unary_offset(v);
    std::copy(graph.node_cost(v), graph.node_cost(v) + k, u);
    if (run_price.empty()) continue;
    for (const MemoryTracker::Run* run = memory.runs_begin(v); run != memory.runs_end(v); ++run) {
      const double price = factor * run_price[memory.run_index(run)];
      if (price == 0.0) continue;
      for (size_t s = 0; s < k; ++s) {
        u[s] += price * static_cast<double>(memory.RunUsage(*run, static_cast<int32_t>(s)));
      }
    }
  }
}

}  // namespace

void Searcher::Lagrangian(const std::vector<int32_t>& low_memory) {
  const size_t rows = static_cast<size_t>(memory_.row_count());
  const bool priced = rows > 0;
  MessagePassing dual_mp(graph_);
  MessagePassing primal_mp(graph_);
  std::vector<double> unary(dual_mp.unary_size());
  std::vector<double> primal_unary(unary.size());
  std::vector<double> lambda(rows, 0.0);
  std::vector<double> prefix(rows + 1, 0.0);
  std::vector<double> grad(rows, 0.0);
  std::vector<Int128> slack;
  std::vector<int32_t> decoded;
  auto sweep = [this](MessagePassing& mp, const std::vector<double>& costs, int32_t count) {
    // A sweep is a pass over every edge: the clock is read after each (StoppedNow), and inside
    // it, so that a cancel does not wait for the sweep.
    for (int32_t i = 0; i < count && !StoppedNow(); ++i) {
      mp.Iterate(costs, 1, control_);
      Count(2 * static_cast<int64_t>(n_));
    }
  };
  auto update_run_prices = [&]() {
    if (!priced) return;
    for (size_t r = 0; r < rows; ++r) prefix[r + 1] = prefix[r] + lambda[r];
    run_price_.assign(memory_.run_count(), 0.0);
    for (int32_t v = 0; v < n_; ++v) {
      for (const MemoryTracker::Run* run = memory_.runs_begin(v); run != memory_.runs_end(v);
           ++run) {
        run_price_[memory_.run_index(run)] =
            prefix[static_cast<size_t>(run->row_end)] - prefix[static_cast<size_t>(run->row_begin)];
      }
    }
  };

  double theta = 1.0;
  double inflation = kInitialInflation;
  long double best_dual = -std::numeric_limits<long double>::infinity();
  int32_t stall = 0;
  int32_t idle = 0;
  for (int32_t round = 0; !StoppedNow() && !BudgetSpent(kBudgetShare) && idle < kPatience;
       ++round) {
    update_run_prices();
    PricedCosts(graph_, memory_, run_price_, 1.0, dual_mp, &unary);
    sweep(dual_mp, unary, round == 0 ? kWarmSweeps : kSweeps);
    if (Stopped()) break;
    dual_mp.Decode(unary, &decoded);
    Assign(decoded);
    if (StoppedNow()) break;
    const long double best_before = best_cost_;
    if (!priced) {
      RepairAndPolish(low_memory);
      idle = best_cost_ < best_before ? 0 : idle + 1;
      continue;
    }
    // Subgradient of the dual at lambda: each row's usage minus capacity.
    memory_.RowSlacks(&slack);
    long double dual = cost_ + problem_.constant;
    double norm = 0;
    for (size_t r = 0; r < rows; ++r) {
      const double g = -static_cast<double>(slack[r]);
      dual += static_cast<long double>(lambda[r]) * g;
      grad[r] = (lambda[r] <= 0 && g < 0) ? 0.0 : g;  // projection onto lambda >= 0
      norm += grad[r] * grad[r];
    }
    // The primal candidate from the inflated prices.
    PricedCosts(graph_, memory_, run_price_, inflation, primal_mp, &primal_unary);
    sweep(primal_mp, primal_unary, kSweeps);
    if (Stopped()) break;
    primal_mp.Decode(primal_unary, &decoded);
    Assign(decoded);
    if (StoppedNow()) break;
    inflation =
        Feasible() ? std::max(1.0, inflation * 0.97) : std::min(kMaxInflation, inflation * 1.05);
    RepairAndPolish(low_memory);
    idle = best_cost_ < best_before ? 0 : idle + 1;

    // The decoded value only bounds the dual function from above (the messages lag behind the
    // prices), so the estimate may grow by 10% per round at most.
    if (round > 0 && dual > best_dual) {
      dual = std::min(dual, best_dual + 0.1L * std::fabs(static_cast<double>(best_dual)));
    }
    if (dual > best_dual) {
      best_dual = dual;
      stall = 0;
    } else if (++stall >= 10) {
      theta = std::max(0.01, theta * 0.5);
      stall = 0;
    }
    if (norm <= 0) continue;
    // Polyak step towards a target between the best dual estimate and the best feasible cost;
    // a target near the dual keeps early steps small while the incumbent is poor.
    long double target = best_dual + 0.2L * std::fabs(static_cast<double>(best_dual)) + 1;
    if (found_) target = std::min(target, best_cost_ + problem_.constant);
    long double gap = target - dual;
    if (gap <= 0) gap = 1e-3L * std::fabs(static_cast<double>(target)) + 1;
    const double step = theta * static_cast<double>(gap) / norm;
    for (size_t r = 0; r < rows; ++r) lambda[r] = std::max(0.0, lambda[r] + step * grad[r]);
  }
  update_run_prices();
}

}  // namespace alpa
