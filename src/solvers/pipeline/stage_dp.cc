// The stage DP (REFERENCE §4); see stage_dp.h for the contract.
//
// The t_max search. Let G(t) be the least sum of (t_i + o_i) over the plans whose stages all have
// latency <= t, so T*(t) = G(t) + (B - 1) t and the optimum is the least T*(t) over the distinct
// latencies. G is a non-increasing step function (more candidates, smaller minimum). This holds
// for the computed doubles too: rounding is monotone, so the DP returns exactly the least
// computed path sum over the candidates it may use. T* is least at the first latency of a step,
// so rather than running the DP at every latency in ascending order (Alpa), we bisect: when
// G(a) == G(b), no step starts in (a, b]. Leaves come in ascending order, and Alpa's early stop
// prunes every latency t whose bound (B - 1) t + max(G(+inf), t) cannot beat the best T* (the
// second term only when no overhead is negative: a plan's sum then is at least its max), and
// every interval (a, b] with G(b) + (B - 1) t_{a+1} >= the best. The answer is the one the plain
// enumeration finds; the DP runs O(steps * log(latencies)) times.
//
// The DP for one t_max: F(s, k, d) over rows (s, k) of device counts in units of the gcd of the
// candidates' submesh sizes; only s <= L - k stages fit in layers k..L-1. A group is the
// candidates of one (first layer, last layer, device count); per s its best cost is the least
// t + o over the members with latency <= t_max and max_stages_after >= s - 1.
//
// Pools (mixed clusters): d counts the devices of the stages from layer k on, which fill the
// pools from the last of pool_order back, so a candidate of pool p may only take d from
// [begin_p, end_p - its devices], where [begin_p, end_p) is p's span counted from the end.
#include "solvers/pipeline/stage_dp.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

#include "core/util/number_text.h"

namespace alpa {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// DP table limit in doubles (256 MiB); bigger problems get kUnsupported.
constexpr int64_t kMaxTableEntries = int64_t{1} << 25;

std::string Range(int64_t lo, int64_t hi) { return std::to_string(lo) + ".." + std::to_string(hi); }

Status ValidatePools(const StageDpInput& in) {
  const int64_t total = in.hosts * in.devices_per_host;
  const auto pools = static_cast<int64_t>(in.pool_devices.size());
  int64_t sum = 0;
  for (int64_t p = 0; p < pools; ++p) {
    const int64_t devices = in.pool_devices[static_cast<size_t>(p)];
    if (devices < 1 || devices > total || devices % in.devices_per_host != 0) {
      return InvalidArgument("pool " + std::to_string(p) + ": " + std::to_string(devices) +
                             " devices is not a whole number of hosts of " +
                             std::to_string(in.devices_per_host) + " within the cluster's " +
                             std::to_string(total));
    }
    sum += devices;
  }
  if (pools > 0 && sum != total) {
    return InvalidArgument("pools: their " + std::to_string(sum) +
                           " devices are not the cluster's " + std::to_string(total));
  }
  const int64_t ids = std::max<int64_t>(pools, 1);
  std::vector<char> seen(static_cast<size_t>(ids), 0);
  for (int32_t p : in.pool_order) {
    if (p < 0 || p >= ids) {
      return InvalidArgument("pool_order: pool " + std::to_string(p) + " is outside " +
                             Range(0, ids - 1));
    }
    if (seen[static_cast<size_t>(p)] != 0) {
      return InvalidArgument("pool_order: pool " + std::to_string(p) + " appears twice");
    }
    seen[static_cast<size_t>(p)] = 1;
  }
  return Status::Ok();
}

}  // namespace

Status ValidateStageDpInput(const StageDpInput& in) {
  if (in.num_layers < 1) {
    return InvalidArgument("num_layers must be >= 1 (got " + std::to_string(in.num_layers) + ")");
  }
  if (in.microbatches < 1) {
    return InvalidArgument("microbatches must be >= 1 (got " + std::to_string(in.microbatches) +
                           ")");
  }
  if (in.max_stages < 0) {
    return InvalidArgument("max_stages must be >= 0 (got " + std::to_string(in.max_stages) + ")");
  }
  if (in.min_stages < 0) {
    return InvalidArgument("min_stages must be >= 0 (got " + std::to_string(in.min_stages) + ")");
  }
  ALPA_RETURN_IF_ERROR(SubmeshShapesTile(in.hosts, in.devices_per_host, in.submeshes));
  ALPA_RETURN_IF_ERROR(ValidatePools(in));
  const int32_t pools = in.pool_devices.empty() ? 1 : static_cast<int32_t>(in.pool_devices.size());
  const int32_t last = in.num_layers - 1;
  const int64_t num_submeshes = static_cast<int64_t>(in.submeshes.size());
  if (in.candidates.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
    return InvalidArgument("more than 2^31 - 1 stage candidates");
  }
  for (size_t j = 0; j < in.candidates.size(); ++j) {
    const StageCandidate& candidate = in.candidates[j];
    // Built on error only: this loop runs over tens of thousands of candidates.
    auto name = [j] { return "stage candidate " + std::to_string(j) + ": "; };
    if (candidate.first_layer < 0 || candidate.first_layer > last) {
      return InvalidArgument(name() + "first_layer " + std::to_string(candidate.first_layer) +
                             " is outside " + Range(0, last));
    }
    if (candidate.last_layer < candidate.first_layer || candidate.last_layer > last) {
      return InvalidArgument(name() + "last_layer " + std::to_string(candidate.last_layer) +
                             " is outside " + Range(candidate.first_layer, last));
    }
    if (candidate.submesh < 0 || candidate.submesh >= num_submeshes) {
      return InvalidArgument(name() + "submesh " + std::to_string(candidate.submesh) +
                             (num_submeshes == 0 ? " given, but there are no submeshes"
                                                 : " is outside " + Range(0, num_submeshes - 1)));
    }
    if (!std::isfinite(candidate.latency) || candidate.latency < 0) {
      return InvalidArgument(name() + "latency " + ExactDoubleText(candidate.latency) +
                             " is not a finite number >= 0");
    }
    if (!std::isfinite(candidate.iteration_overhead)) {
      return InvalidArgument(name() + "iteration_overhead " +
                             ExactDoubleText(candidate.iteration_overhead) + " is not finite");
    }
    if (candidate.pool < 0 || candidate.pool >= pools) {
      return InvalidArgument(name() + "pool " + std::to_string(candidate.pool) + " is outside " +
                             Range(0, pools - 1));
    }
  }
  return Status::Ok();
}

namespace {

int64_t CandidateDevices(const StageDpInput& in, const StageCandidate& c) {
  return in.submeshes[static_cast<size_t>(c.submesh)].num_devices();
}

// T of a plan, summed in pipeline order; also its max latency.
double PlanObjective(const StageDpInput& in, const std::vector<int32_t>& stages,
                     double* max_latency) {
  double sum = 0, worst = 0;
  for (int32_t j : stages) {
    const StageCandidate& c = in.candidates[static_cast<size_t>(j)];
    sum += c.latency + c.iteration_overhead;
    worst = std::max(worst, c.latency);
  }
  *max_latency = worst;
  return sum + static_cast<double>(in.microbatches - 1) * worst;
}

void FillPlan(const StageDpInput& in, std::vector<int32_t> stages, StageDpResult* r) {
  r->feasible = true;
  r->objective = PlanObjective(in, stages, &r->max_latency);
  r->stages = std::move(stages);
}

// Per pool id, the devices of the stages after it when its stages start and end: [begin, end)
// of the devices counted from the pipeline's end (see the top of the file); {0, 0} for a pool
// the plan does not use. Without pools, {0, all devices}.
std::vector<std::pair<int64_t, int64_t>> PoolSpans(const StageDpInput& in) {
  if (in.pool_devices.empty()) return {{0, in.hosts * in.devices_per_host}};
  std::vector<int32_t> order = in.pool_order;
  if (order.empty()) {
    order.resize(in.pool_devices.size());
    std::iota(order.begin(), order.end(), 0);
  }
  std::vector<std::pair<int64_t, int64_t>> spans(in.pool_devices.size(), {0, 0});
  int64_t end = 0;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const int64_t devices = in.pool_devices[static_cast<size_t>(*it)];
    spans[static_cast<size_t>(*it)] = {end, end + devices};
    end += devices;
  }
  return spans;
}

// Candidates that may appear in a plan: they fit somewhere, on a pool the plan uses.
bool Usable(const StageCandidate& c, const std::vector<std::pair<int64_t, int64_t>>& spans) {
  const auto& [begin, end] = spans[static_cast<size_t>(c.pool)];
  return c.max_stages_after >= 0 && end > begin;
}

int64_t DistinctLatencies(const StageDpInput& in, std::vector<double>* out) {
  const std::vector<std::pair<int64_t, int64_t>> spans = PoolSpans(in);
  std::vector<double> t;
  for (const StageCandidate& c : in.candidates) {
    if (Usable(c, spans)) t.push_back(c.latency);
  }
  std::sort(t.begin(), t.end());
  t.erase(std::unique(t.begin(), t.end()), t.end());
  const auto n = static_cast<int64_t>(t.size());
  if (out != nullptr) *out = std::move(t);
  return n;
}

struct Group {
  int32_t last = 0;
  int64_t units = 0;  // devices / unit
  int32_t pool = 0;
  int32_t begin = 0, end = 0;  // into Prepared::order, sorted by (latency, index)
  int64_t max_reach = 0;       // the largest max_stages_after + 1 of the members
};

struct Prepared {
  const StageDpInput* in = nullptr;
  int32_t layers = 0, max_stages = 0, min_stages = 0;
  int64_t slots = 0;  // device counts 0, unit, 2 unit, ..., total
  // Per pool id: the device counts (in units) its candidates may start from, [begin, end).
  std::vector<std::pair<int64_t, int64_t>> pool_units;
  std::vector<int64_t> units;  // per candidate
  std::vector<double> cost;    // t + o per candidate
  std::vector<int32_t> order;  // usable candidates by (first, last, units, latency, index)
  // Along `order`, for locality in the DP's inner loops: latency, t + o, max_stages_after + 1.
  std::vector<double> order_latency, order_cost;
  std::vector<int64_t> order_reach;
  std::vector<Group> groups;
  std::vector<int32_t> groups_from;    // groups of first layer k: [groups_from[k], [k + 1])
  std::vector<int32_t> by_first;       // usable candidates by (first, index) ...
  std::vector<int32_t> by_first_from;  // ... first layer k: [by_first_from[k], [k + 1])
  std::vector<double> latencies;       // sorted distinct
  bool overheads_nonnegative = true;
};

// Fills `p`; false when no plan can exist (no usable candidate, device counts that cannot sum to
// the cluster). kUnsupported when the DP table would be too big.
Result<bool> Prepare(const StageDpInput& in, Prepared* prepared) {
  prepared->in = &in;
  prepared->layers = in.num_layers;
  DistinctLatencies(in, &prepared->latencies);
  const std::vector<std::pair<int64_t, int64_t>> spans = PoolSpans(in);
  int64_t total = 0, unit = 0;
  for (const auto& [begin, end] : spans) {
    total = std::max(total, end);
    unit = std::gcd(unit, end - begin);
  }
  int64_t min_devices = total, usable = 0;
  for (const StageCandidate& c : in.candidates) {
    if (!Usable(c, spans)) continue;
    ++usable;
    unit = std::gcd(unit, CandidateDevices(in, c));
    min_devices = std::min(min_devices, CandidateDevices(in, c));
  }
  if (usable == 0 || total % unit != 0) return false;
  prepared->slots = total / unit + 1;
  for (const auto& [begin, end] : spans)
    prepared->pool_units.emplace_back(begin / unit, end / unit);
  const int64_t layers = in.num_layers;
  int64_t smax = layers;
  if (in.max_stages > 0) smax = std::min<int64_t>(smax, in.max_stages);
  smax = std::min(smax, total / min_devices);
  prepared->max_stages = static_cast<int32_t>(smax);
  prepared->min_stages = in.min_stages;
  // Rows (s, k) with s <= min(smax, L - k), k = 0..L: sum over r = L - k of min(smax, r) + 1.
  const int64_t rows = (layers + 1) + smax * (smax + 1) / 2 + (layers - smax) * smax;
  if (rows > kMaxTableEntries / prepared->slots) {
    return Status(StatusCode::kUnsupported, "stage DP table of " + std::to_string(rows) + " x " +
                                                std::to_string(prepared->slots) +
                                                " entries is too large (limit " +
                                                std::to_string(kMaxTableEntries) + ")");
  }
  const size_t n = in.candidates.size();
  prepared->units.resize(n);
  prepared->cost.resize(n);
  for (size_t j = 0; j < n; ++j) {
    const StageCandidate& c = in.candidates[j];
    prepared->units[j] = CandidateDevices(in, c) / unit;
    prepared->cost[j] = c.latency + c.iteration_overhead;
    if (c.iteration_overhead < 0) prepared->overheads_nonnegative = false;
    if (Usable(c, spans)) prepared->by_first.push_back(static_cast<int32_t>(j));
  }
  auto cand = [&](int32_t j) -> const StageCandidate& {
    return in.candidates[static_cast<size_t>(j)];
  };
  std::stable_sort(prepared->by_first.begin(), prepared->by_first.end(),
                   [&](int32_t a, int32_t b) { return cand(a).first_layer < cand(b).first_layer; });
  prepared->order = prepared->by_first;
  std::stable_sort(prepared->order.begin(), prepared->order.end(), [&](int32_t a, int32_t b) {
    const StageCandidate &x = cand(a), &y = cand(b);
    if (x.first_layer != y.first_layer) return x.first_layer < y.first_layer;
    if (x.last_layer != y.last_layer) return x.last_layer < y.last_layer;
    const int64_t ua = prepared->units[static_cast<size_t>(a)],
                  ub = prepared->units[static_cast<size_t>(b)];
    if (ua != ub) return ua < ub;
    if (x.pool != y.pool) return x.pool < y.pool;
    return x.latency < y.latency;
  });
  prepared->groups_from.assign(static_cast<size_t>(layers) + 1, 0);
  prepared->by_first_from.assign(static_cast<size_t>(layers) + 1, 0);
  for (int32_t j : prepared->by_first)
    ++prepared->by_first_from[static_cast<size_t>(cand(j).first_layer) + 1];
  for (size_t k = 0; k < static_cast<size_t>(layers); ++k) {
    prepared->by_first_from[k + 1] += prepared->by_first_from[k];
  }
  for (int32_t j : prepared->order) {
    prepared->order_latency.push_back(cand(j).latency);
    prepared->order_cost.push_back(prepared->cost[static_cast<size_t>(j)]);
    prepared->order_reach.push_back(int64_t{cand(j).max_stages_after} + 1);
  }
  for (size_t x = 0; x < prepared->order.size(); ++x) {
    const int32_t j = prepared->order[x];
    const auto pos = static_cast<int32_t>(x);
    if (x > 0) {
      const Group& g = prepared->groups.back();
      const StageCandidate& prev = cand(prepared->order[x - 1]);
      if (prev.first_layer == cand(j).first_layer && g.last == cand(j).last_layer &&
          g.units == prepared->units[static_cast<size_t>(j)] && g.pool == cand(j).pool) {
        prepared->groups.back().end = pos + 1;
        prepared->groups.back().max_reach =
            std::max(g.max_reach, prepared->order_reach[static_cast<size_t>(x)]);
        continue;
      }
    }
    prepared->groups.push_back({cand(j).last_layer, prepared->units[static_cast<size_t>(j)],
                                cand(j).pool, pos, pos + 1,
                                prepared->order_reach[static_cast<size_t>(x)]});
    ++prepared->groups_from[static_cast<size_t>(cand(j).first_layer) + 1];
  }
  for (size_t k = 0; k < static_cast<size_t>(layers); ++k) {
    prepared->groups_from[k + 1] += prepared->groups_from[k];
  }
  return true;
}

class DpTable {
 public:
  explicit DpTable(const Prepared& p) : p_(p), row_start_(static_cast<size_t>(p.layers) + 1) {
    int64_t r = 0;
    for (int32_t k = 0; k <= p.layers; ++k) {
      row_start_[static_cast<size_t>(k)] = r;
      r += MaxStages(k) + 1;
    }
    f_.assign(static_cast<size_t>(r * p.slots), kInf);
    lo_.assign(static_cast<size_t>(r), p.slots);
    hi_.assign(static_cast<size_t>(r), -1);
    w_.resize(static_cast<size_t>(p.max_stages) + 2);
    const int64_t end = Row(0, p.layers);  // F(0, L, 0) = 0
    f_[static_cast<size_t>(end * p.slots)] = 0;
    lo_[static_cast<size_t>(end)] = hi_[static_cast<size_t>(end)] = 0;
  }

  // G(t_max); best_stages() is then its fewest number of stages.
  double Evaluate(double t_max) {
    const int32_t layers = p_.layers;
    for (int32_t k = layers - 1; k >= 0; --k) {
      for (int32_t s = 0; s <= MaxStages(k); ++s) ResetRow(Row(s, k));
      for (int32_t gi = p_.groups_from[static_cast<size_t>(k)];
           gi < p_.groups_from[static_cast<size_t>(k) + 1]; ++gi) {
        Relax(k, p_.groups[static_cast<size_t>(gi)], t_max);
      }
    }
    double best = kInf;
    best_stages_ = 0;
    for (int32_t s = std::max<int32_t>(1, p_.min_stages); s <= MaxStages(0); ++s) {
      const double v = At(Row(s, 0), p_.slots - 1);
      if (v < best) best = v, best_stages_ = s;
    }
    return best;
  }
  int32_t best_stages() const { return best_stages_; }
  // After Evaluate: the least sum over the plans of exactly s stages (infinity: none).
  double Final(int32_t s) const { return At(Row(s, 0), p_.slots - 1); }
  int32_t MaxStages(int32_t k) const { return std::min(p_.max_stages, p_.layers - k); }

  // The plan of `stages` stages behind the last Evaluate(t_max) (Final(stages) finite): at each
  // step the lowest-index candidate that attains the table entry.
  Result<std::vector<int32_t>> Plan(double t_max, int32_t stage_count) const {
    const StageDpInput& in = *p_.in;
    std::vector<int32_t> stages;
    int32_t k = 0, s = stage_count;
    int64_t d = p_.slots - 1;
    while (k < p_.layers) {
      const double target = At(Row(s, k), d);
      int32_t found = -1;
      for (int32_t x = p_.by_first_from[static_cast<size_t>(k)];
           x < p_.by_first_from[static_cast<size_t>(k) + 1] && found < 0; ++x) {
        const int32_t j = p_.by_first[static_cast<size_t>(x)];
        const StageCandidate& c = in.candidates[static_cast<size_t>(j)];
        const int64_t u = p_.units[static_cast<size_t>(j)];
        const int32_t next = c.last_layer + 1;
        if (c.latency > t_max || c.max_stages_after < s - 1 || u > d) continue;
        const auto& [pool_begin, pool_end] = p_.pool_units[static_cast<size_t>(c.pool)];
        if (d - u < pool_begin || d > pool_end) continue;
        if ((next == p_.layers) != (s == 1) || s - 1 > MaxStages(next)) continue;
        if (p_.cost[static_cast<size_t>(j)] + At(Row(s - 1, next), d - u) == target) found = j;
      }
      if (found < 0) return InternalError("stage DP: no candidate attains the table entry");
      stages.push_back(found);
      const StageCandidate& c = in.candidates[static_cast<size_t>(found)];
      k = c.last_layer + 1;
      --s;
      d -= p_.units[static_cast<size_t>(found)];
    }
    return stages;
  }

 private:
  int64_t Row(int32_t s, int32_t k) const { return row_start_[static_cast<size_t>(k)] + s; }
  double At(int64_t row, int64_t d) const { return f_[static_cast<size_t>(row * p_.slots + d)]; }

  void ResetRow(int64_t row) {
    const auto r = static_cast<size_t>(row);
    if (hi_[r] >= lo_[r]) {
      double* f = &f_[static_cast<size_t>(row * p_.slots)];
      std::fill(f + lo_[r], f + hi_[r] + 1, kInf);
    }
    lo_[r] = p_.slots;
    hi_[r] = -1;
  }

  // F(s, k, .) = min(F(s, k, .), w_s + F(s - 1, last + 1, . - units)) for the group's w_s.
  void Relax(int32_t k, const Group& g, double t_max) {
    const int32_t next = g.last + 1;
    const int32_t s_lo = next == p_.layers ? 1 : 2;
    if (p_.order_latency[static_cast<size_t>(g.begin)] > t_max) return;
    const int32_t s_hi = next == p_.layers
                             ? 1
                             : static_cast<int32_t>(std::min<int64_t>(
                                   std::min(p_.max_stages, p_.layers - g.last), g.max_reach));
    if (s_lo > s_hi) return;
    std::fill(w_.begin() + s_lo, w_.begin() + s_hi + 1, kInf);
    bool any = false;
    for (int32_t x = g.begin; x < g.end; ++x) {
      const auto xs = static_cast<size_t>(x);
      if (p_.order_latency[xs] > t_max) break;
      const int64_t reach = p_.order_reach[xs];  // the most stages from k on
      if (reach < s_lo) continue;
      double& w = w_[static_cast<size_t>(std::min<int64_t>(reach, s_hi))];
      w = std::min(w, p_.order_cost[xs]);
      any = true;
    }
    if (!any) return;
    for (int32_t s = s_hi - 1; s >= s_lo; --s) {
      w_[static_cast<size_t>(s)] =
          std::min(w_[static_cast<size_t>(s)], w_[static_cast<size_t>(s) + 1]);
    }
    for (int32_t s = s_lo; s <= s_hi; ++s) {
      const double w = w_[static_cast<size_t>(s)];
      if (w == kInf) break;  // w_s never decreases with s
      const int64_t src = Row(s - 1, next), dst = Row(s, k);
      const auto& [pool_begin, pool_end] = p_.pool_units[static_cast<size_t>(g.pool)];
      const int64_t a = std::max(lo_[static_cast<size_t>(src)], pool_begin);
      const int64_t b = std::min(hi_[static_cast<size_t>(src)], pool_end - g.units);
      if (a > b) continue;
      const double* from = &f_[static_cast<size_t>(src * p_.slots)];
      double* to = &f_[static_cast<size_t>(dst * p_.slots + g.units)];
      for (int64_t d = a; d <= b; ++d) to[d] = std::min(to[d], w + from[d]);
      lo_[static_cast<size_t>(dst)] = std::min(lo_[static_cast<size_t>(dst)], a + g.units);
      hi_[static_cast<size_t>(dst)] = std::max(hi_[static_cast<size_t>(dst)], b + g.units);
    }
  }

  const Prepared& p_;
  std::vector<int64_t> row_start_;
  std::vector<double> f_;
  std::vector<int64_t> lo_, hi_;  // per row: bounds of the entries that may be finite
  std::vector<double> w_;
  int32_t best_stages_ = 0;
};

// The bisection over latency indices (see the top of the file), for one objective G (the least
// sum over any stage count) or one per stage count s (G_s: exactly s stages). Each G_s is a
// non-increasing step function too, so an interval is skipped when no objective can change in it
// or improve on its best; the search evaluates the union of the objectives' step starts it needs.
class TMaxSearch {
 public:
  using Values = std::vector<double>;

  TMaxSearch(const Prepared& p, bool per_stage_count)
      : p_(p),
        table_(p),
        bm1_(static_cast<double>(p.in->microbatches - 1)),
        per_stage_count_(per_stage_count),
        width_(per_stage_count ? static_cast<size_t>(table_.MaxStages(0)) + 1 : 1),
        best_(width_, kInf),
        best_index_(width_, -1) {}

  // Per objective (index 0: the overall G; per stage count: index s), the index of the best
  // t_max, -1 where no plan exists.
  const std::vector<int64_t>& Run() {
    const int64_t n = static_cast<int64_t>(p_.latencies.size());
    if (n == 0) return best_index_;
    stop_ = n - 1;
    g_all_ = Eval(n - 1);
    if (std::all_of(g_all_.begin(), g_all_.end(), [](double g) { return g == kInf; })) {
      return best_index_;
    }
    Explore(-1, n - 1, Values(width_, kInf), g_all_);
    return best_index_;
  }
  int64_t tried() const { return tried_; }
  DpTable& table() { return table_; }

 private:
  double Latency(int64_t q) const { return p_.latencies[static_cast<size_t>(q)]; }
  Values Eval(int64_t q) {
    ++tried_;
    const double g = table_.Evaluate(Latency(q));
    if (!per_stage_count_) return Values{g};
    Values v(width_, kInf);
    for (int32_t s = std::max<int32_t>(1, p_.min_stages); s < static_cast<int32_t>(width_); ++s) {
      v[static_cast<size_t>(s)] = table_.Final(s);
    }
    return v;
  }
  // No plan of objective i whose max latency is >= Latency(q) has a T* below this.
  double LowerBound(size_t i, int64_t q) const {
    const double sum = p_.overheads_nonnegative ? std::max(g_all_[i], Latency(q)) : g_all_[i];
    return bm1_ * Latency(q) + sum;
  }
  bool MayImprove(size_t i, int64_t q) const { return LowerBound(i, q) < best_[i]; }

  // Finds the step starts in (a, b] up to stop_; G(a) = ga, G(b) = gb.
  void Explore(int64_t a, int64_t b, const Values& ga, const Values& gb) {
    if (a >= stop_) return;
    // Every step start q in (a, b] of objective i has G_i(q) >= G_i(b) and latency >=
    // Latency(a + 1).
    bool open = false;
    for (size_t i = 0; i < width_ && !open; ++i) {
      open = ga[i] != gb[i] && gb[i] + bm1_ * Latency(a + 1) < best_[i];
    }
    if (!open) return;
    if (b > stop_) {
      const int64_t m = stop_;
      Explore(a, m, ga, Eval(m));
      return;
    }
    if (b == a + 1) {
      bool improved = false;
      for (size_t i = 0; i < width_; ++i) {
        if (ga[i] == gb[i]) continue;
        const double t = gb[i] + bm1_ * Latency(b);
        if (t < best_[i]) {
          best_[i] = t;
          best_index_[i] = b;
          improved = true;
        }
      }
      if (improved) {
        auto open_at = [&](int64_t q) {
          for (size_t i = 0; i < width_; ++i) {
            if (MayImprove(i, q)) return true;
          }
          return false;
        };
        while (stop_ >= 0 && !open_at(stop_)) --stop_;
      }
      return;
    }
    const int64_t m = a + (b - a) / 2;
    const Values gm = Eval(m);
    Explore(a, m, ga, gm);
    Explore(m, b, gm, gb);
  }

  const Prepared& p_;
  DpTable table_;
  const double bm1_;
  const bool per_stage_count_;
  const size_t width_;
  Values g_all_, best_;
  std::vector<int64_t> best_index_;
  int64_t stop_ = -1, tried_ = 0;
};

}  // namespace

Result<StageDpResult> SolveStageDp(const StageDpInput& input) {
  ALPA_RETURN_IF_ERROR(ValidateStageDpInput(input));
  StageDpResult result;
  Prepared p;
  Result<bool> possible = Prepare(input, &p);
  if (!possible.ok()) return possible.status();
  result.t_max_values = static_cast<int64_t>(p.latencies.size());
  if (!possible.value()) return result;
  TMaxSearch search(p, /*per_stage_count=*/false);
  const int64_t q = search.Run()[0];
  result.t_max_tried = search.tried();
  if (q < 0) return result;
  // The table holds a later evaluation: run the winner again to read its plan.
  const double t_max = p.latencies[static_cast<size_t>(q)];
  search.table().Evaluate(t_max);
  Result<std::vector<int32_t>> plan = search.table().Plan(t_max, search.table().best_stages());
  if (!plan.ok()) return plan.status();
  FillPlan(input, std::move(plan).value(), &result);
  return result;
}

Result<std::vector<StageDpResult>> SolveStageDpPerStageCount(const StageDpInput& input) {
  ALPA_RETURN_IF_ERROR(ValidateStageDpInput(input));
  Prepared p;
  Result<bool> possible = Prepare(input, &p);
  if (!possible.ok()) return possible.status();
  std::vector<StageDpResult> results;
  if (!possible.value()) return results;
  TMaxSearch search(p, /*per_stage_count=*/true);
  const std::vector<int64_t> best = search.Run();
  results.resize(best.size() - 1);
  for (StageDpResult& r : results) {
    r.t_max_values = static_cast<int64_t>(p.latencies.size());
    r.t_max_tried = search.tried();
  }
  // Read the plans back, one evaluation per distinct winning t_max.
  std::vector<std::pair<int64_t, int32_t>> winners;  // (latency index, stage count)
  for (size_t s = 1; s < best.size(); ++s) {
    if (best[s] >= 0) winners.emplace_back(best[s], static_cast<int32_t>(s));
  }
  std::sort(winners.begin(), winners.end());
  for (size_t w = 0; w < winners.size(); ++w) {
    const double t_max = p.latencies[static_cast<size_t>(winners[w].first)];
    if (w == 0 || winners[w].first != winners[w - 1].first) search.table().Evaluate(t_max);
    Result<std::vector<int32_t>> plan = search.table().Plan(t_max, winners[w].second);
    if (!plan.ok()) return plan.status();
    FillPlan(input, std::move(plan).value(), &results[static_cast<size_t>(winners[w].second) - 1]);
  }
  return results;
}

}  // namespace alpa
