#include "solvers/sharding/elimination/variable_elimination.h"

#include <algorithm>
#include <cstddef>
#include <limits>
#include <numeric>
#include <set>
#include <utility>

namespace alpa {
namespace {

constexpr int32_t kMaxDomain = std::numeric_limits<uint16_t>::max();
constexpr size_t kRowsBetweenChecks = size_t{1} << 16;

size_t TableSize(const std::vector<int32_t>& vars, const std::vector<int32_t>& domain) {
  size_t size = 1;
  for (int32_t v : vars) size *= static_cast<size_t>(domain[static_cast<size_t>(v)]);
  return size;
}

// Row-major strides of `vars` (the last varies fastest).
std::vector<int64_t> Strides(const std::vector<int32_t>& vars, const std::vector<int32_t>& domain) {
  std::vector<int64_t> strides(vars.size(), 1);
  for (size_t j = vars.size(); j-- > 1;) {
    strides[j - 1] = strides[j] * domain[static_cast<size_t>(vars[j])];
  }
  return strides;
}

// For each variable of `outer`, its stride in a table over `inner` (0 when `inner` lacks it).
std::vector<int64_t> StridesWithin(const std::vector<int32_t>& outer,
                                   const std::vector<int32_t>& inner,
                                   const std::vector<int32_t>& domain) {
  const std::vector<int64_t> inner_strides = Strides(inner, domain);
  std::vector<int64_t> strides(outer.size(), 0);
  for (size_t j = 0; j < outer.size(); ++j) {
    const auto it = std::find(inner.begin(), inner.end(), outer[j]);
    if (it != inner.end()) strides[j] = inner_strides[static_cast<size_t>(it - inner.begin())];
  }
  return strides;
}

// Calls visit(offsets) for every joint value of `vars` in row-major order, where offsets[t] is
// the matching entry of table t, whose strides over `vars` are strides[t * vars.size() + j].
template <typename Visit>
bool ForEachJointValue(const std::vector<int32_t>& vars, const std::vector<int32_t>& domain,
                       const std::vector<int64_t>& strides, size_t tables,
                       const SolveControl* control, Visit visit) {
  const size_t m = vars.size();
  const size_t rows = TableSize(vars, domain);
  std::vector<int32_t> digit(m, 0);
  std::vector<int64_t> offset(tables, 0);
  for (size_t row = 0; row < rows; ++row) {
    if (control != nullptr && row % kRowsBetweenChecks == kRowsBetweenChecks - 1 &&
        control->expired()) {
      return false;
    }
    visit(row, offset.data());
    for (size_t j = m; j-- > 0;) {
      const int32_t d = domain[static_cast<size_t>(vars[j])];
      if (++digit[j] < d) {
        for (size_t t = 0; t < tables; ++t) offset[t] += strides[t * m + j];
        break;
      }
      digit[j] = 0;
      for (size_t t = 0; t < tables; ++t) offset[t] -= strides[t * m + j] * (d - 1);
    }
  }
  return true;
}

// into += from, where from's variables are a subset of into's.
void AddInto(Factor* into, const Factor& from, const std::vector<int32_t>& domain) {
  const std::vector<int64_t> strides = StridesWithin(into->vars, from.vars, domain);
  double* out = into->table.data();
  const double* in = from.table.data();
  ForEachJointValue(into->vars, domain, strides, 1, nullptr,
                    [&](size_t row, const int64_t* offset) { out[row] += in[offset[0]]; });
}

// min over s < kv of sum over t < count of tables[t][offset[t] + s]: its value (into *lowest)
// and the first s that attains it. The sums are formed in `scratch` first, in loops the
// compiler vectorizes.
int32_t MinOfSum(const double* const* tables, const int64_t* offset, size_t count, int32_t kv,
                 double* __restrict scratch, double* lowest) {
  const size_t k = static_cast<size_t>(kv);
  const double* __restrict first = tables[0] + offset[0];
  if (count == 1) {
    for (size_t s = 0; s < k; ++s) scratch[s] = first[s];
  } else {
    const double* __restrict second = tables[1] + offset[1];
    for (size_t s = 0; s < k; ++s) scratch[s] = first[s] + second[s];
    for (size_t t = 2; t < count; ++t) {
      const double* __restrict next = tables[t] + offset[t];
      for (size_t s = 0; s < k; ++s) scratch[s] += next[s];
    }
  }
  double m = scratch[0];
  for (size_t s = 1; s < k; ++s) m = scratch[s] < m ? scratch[s] : m;
  *lowest = m;
  size_t arg = 0;
  while (!(scratch[arg] <= m)) ++arg;  // +inf rows: m is +inf and arg 0
  return static_cast<int32_t>(arg);
}

bool IsSubset(const std::vector<int32_t>& small, const std::vector<int32_t>& large) {
  return std::all_of(small.begin(), small.end(), [&](int32_t v) {
    return std::find(large.begin(), large.end(), v) != large.end();
  });
}

}  // namespace

Factor PermuteFactor(const Factor& f, const std::vector<int32_t>& vars,
                     const std::vector<int32_t>& domain) {
  Factor out;
  out.vars = vars;
  if (vars == f.vars) {
    out.table = f.table;
    return out;
  }
  out.table.resize(TableSize(vars, domain));
  const std::vector<int64_t> strides = StridesWithin(vars, f.vars, domain);
  ForEachJointValue(vars, domain, strides, 1, nullptr, [&](size_t row, const int64_t* offset) {
    out.table[row] = f.table[static_cast<size_t>(offset[0])];
  });
  return out;
}

EliminationPlan PlanElimination(const std::vector<int32_t>& domain,
                                const std::vector<Factor>& factors,
                                const std::vector<int32_t>& eliminate,
                                const EliminationLimits& limits, const SolveControl& control) {
  // Factors or eliminated variables between two reads of the control.
  constexpr int64_t kStepsBetweenChecks = 64;
  PeriodicCheck check(control, kStepsBetweenChecks);
  const size_t n = domain.size();
  std::vector<std::vector<int32_t>> neighbours(n);
  EliminationPlan plan;
  for (const Factor& f : factors) {
    if (check.stop()) {
      plan.within_limits = false;
      return plan;
    }
    for (int32_t a : f.vars) {
      for (int32_t b : f.vars) {
        if (a != b) neighbours[static_cast<size_t>(a)].push_back(b);
      }
    }
  }
  for (std::vector<int32_t>& list : neighbours) {
    std::sort(list.begin(), list.end());
    list.erase(std::unique(list.begin(), list.end()), list.end());
  }
  auto weight = [&](int32_t v) {
    double w = domain[static_cast<size_t>(v)];
    for (int32_t u : neighbours[static_cast<size_t>(v)]) w *= domain[static_cast<size_t>(u)];
    return w;
  };
  std::vector<double> current(n, 0);
  std::vector<bool> pending(n, false);
  std::set<std::pair<double, int32_t>> queue;
  for (int32_t v : eliminate) {
    pending[static_cast<size_t>(v)] = true;
    current[static_cast<size_t>(v)] = weight(v);
    queue.emplace(current[static_cast<size_t>(v)], v);
  }
  std::vector<int32_t> merged;
  while (!queue.empty()) {
    if (check.stop()) {
      plan.within_limits = false;
      return plan;
    }
    // Named copies, not structured bindings: C++17 lambdas cannot capture those (clang says so).
    const double w = queue.begin()->first;
    const int32_t v = queue.begin()->second;
    queue.erase(queue.begin());
    const double table = w / domain[static_cast<size_t>(v)];
    if (plan.work + w > limits.max_work || table > limits.max_table) {
      plan.within_limits = false;
      return plan;
    }
    plan.work += w;
    plan.largest_table = std::max(plan.largest_table, table);
    plan.order.push_back(v);
    pending[static_cast<size_t>(v)] = false;
    const std::vector<int32_t> around = std::move(neighbours[static_cast<size_t>(v)]);
    for (int32_t u : around) {
      std::vector<int32_t>& list = neighbours[static_cast<size_t>(u)];
      merged.clear();
      std::set_union(list.begin(), list.end(), around.begin(), around.end(),
                     std::back_inserter(merged));
      merged.erase(
          std::remove_if(merged.begin(), merged.end(), [&](int32_t x) { return x == u || x == v; }),
          merged.end());
      list.swap(merged);
      if (pending[static_cast<size_t>(u)]) {
        queue.erase({current[static_cast<size_t>(u)], u});
        current[static_cast<size_t>(u)] = weight(u);
        queue.emplace(current[static_cast<size_t>(u)], u);
      }
    }
  }
  return plan;
}

EliminationOutcome Eliminate(const std::vector<int32_t>& domain, std::vector<Factor> factors,
                             const std::vector<int32_t>& order, const SolveControl& control) {
  EliminationOutcome outcome;
  const size_t n = domain.size();
  // Tables are laid out with the variable eliminated first last (stride 1), so that each step
  // reads contiguous runs; variables that stay go first, by id.
  std::vector<int32_t> position(n, std::numeric_limits<int32_t>::max());
  for (size_t i = 0; i < order.size(); ++i) {
    position[static_cast<size_t>(order[i])] = static_cast<int32_t>(i);
    if (domain[static_cast<size_t>(order[i])] > kMaxDomain) return outcome;
  }
  auto layout_before = [&](int32_t a, int32_t b) {
    const int32_t pa = position[static_cast<size_t>(a)];
    const int32_t pb = position[static_cast<size_t>(b)];
    return pa != pb ? pa > pb : a > b;
  };
  std::vector<std::vector<int32_t>> mentions(n);  // per variable: factor indices
  std::vector<bool> alive;
  auto add_factor = [&](Factor f) {
    for (int32_t v : f.vars)
      mentions[static_cast<size_t>(v)].push_back(static_cast<int32_t>(factors.size()));
    alive.push_back(true);
    factors.push_back(std::move(f));
  };
  {
    std::vector<Factor> input = std::move(factors);
    factors.clear();
    for (Factor& f : input) {
      std::vector<int32_t> vars = f.vars;
      std::sort(vars.begin(), vars.end(), layout_before);
      add_factor(vars == f.vars ? std::move(f) : PermuteFactor(f, vars, domain));
    }
  }

  std::vector<double> sum;
  for (int32_t v : order) {
    if (control.expired()) return outcome;
    const int32_t kv = domain[static_cast<size_t>(v)];
    // The factors mentioning v, largest first; one whose variables another one holds is added
    // into it (cheaper than visiting it once per entry of the new table).
    std::vector<int32_t> bucket;
    for (int32_t id : mentions[static_cast<size_t>(v)]) {
      if (alive[static_cast<size_t>(id)]) bucket.push_back(id);
    }
    mentions[static_cast<size_t>(v)].clear();
    std::sort(bucket.begin(), bucket.end(), [&](int32_t a, int32_t b) {
      const size_t sa = factors[static_cast<size_t>(a)].table.size();
      const size_t sb = factors[static_cast<size_t>(b)].table.size();
      return sa != sb ? sa > sb : a < b;
    });
    std::vector<int32_t> kept;
    for (int32_t id : bucket) {
      Factor& f = factors[static_cast<size_t>(id)];
      alive[static_cast<size_t>(id)] = false;
      bool absorbed = false;
      for (int32_t into : kept) {
        if (IsSubset(f.vars, factors[static_cast<size_t>(into)].vars)) {
          AddInto(&factors[static_cast<size_t>(into)], f, domain);
          absorbed = true;
          break;
        }
      }
      if (absorbed) {
        f = Factor();
      } else {
        kept.push_back(id);
      }
    }

    EliminatedVariable step;
    step.var = v;
    Factor result;
    for (int32_t id : kept) {
      for (int32_t u : factors[static_cast<size_t>(id)].vars) {
        if (u != v) result.vars.push_back(u);
      }
    }
    std::sort(result.vars.begin(), result.vars.end(), layout_before);
    result.vars.erase(std::unique(result.vars.begin(), result.vars.end()), result.vars.end());
    const size_t rows = TableSize(result.vars, domain);
    result.table.assign(rows, 0.0);
    step.given = result.vars;
    for (int32_t u : step.given) step.given_domain.push_back(domain[static_cast<size_t>(u)]);
    step.best.assign(rows, 0);

    if (!kept.empty()) {
      std::vector<int64_t> strides;
      std::vector<const double*> tables;
      for (int32_t id : kept) {
        const Factor& f = factors[static_cast<size_t>(id)];
        const std::vector<int64_t> s = StridesWithin(result.vars, f.vars, domain);
        strides.insert(strides.end(), s.begin(), s.end());
        tables.push_back(f.table.data());
      }
      sum.resize(static_cast<size_t>(kv));
      double* out = result.table.data();
      uint16_t* best = step.best.data();
      const size_t count = tables.size();
      const bool finished = ForEachJointValue(
          result.vars, domain, strides, count, &control, [&](size_t row, const int64_t* offset) {
            best[row] = static_cast<uint16_t>(
                MinOfSum(tables.data(), offset, count, kv, sum.data(), &out[row]));
          });
      if (!finished) return outcome;
      for (int32_t id : kept) factors[static_cast<size_t>(id)] = Factor();
    }
    outcome.steps.push_back(std::move(step));
    add_factor(std::move(result));
  }
  for (size_t id = 0; id < factors.size(); ++id) {
    if (alive[id]) outcome.remaining.push_back(std::move(factors[id]));
  }
  outcome.completed = true;
  return outcome;
}

void BackSubstitute(const std::vector<EliminatedVariable>& steps,
                    std::vector<int32_t>* assignment) {
  for (size_t i = steps.size(); i-- > 0;) {
    const EliminatedVariable& step = steps[i];
    size_t index = 0;
    for (size_t j = 0; j < step.given.size(); ++j) {
      index = index * static_cast<size_t>(step.given_domain[j]) +
              static_cast<size_t>((*assignment)[static_cast<size_t>(step.given[j])]);
    }
    (*assignment)[static_cast<size_t>(step.var)] = step.best[index];
  }
}

}  // namespace alpa
