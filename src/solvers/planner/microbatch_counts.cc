#include "solvers/planner/microbatch_counts.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace alpa {
namespace {

// The divisors of n up to `most`, ascending (trial division up to sqrt(n): n is a batch size).
std::vector<int64_t> DivisorsUpTo(int64_t n, int64_t most) {
  std::vector<int64_t> small, large;
  for (int64_t d = 1; d <= n / d; ++d) {
    if (n % d != 0) continue;
    if (d <= most) small.push_back(d);
    const int64_t pair = n / d;
    if (pair != d && pair <= most) large.push_back(pair);
  }
  small.insert(small.end(), large.rbegin(), large.rend());
  return small;
}

// The divisor nearest to `target` in ratio (ties: the larger); among those within half an octave
// of it, first the one whose microbatch splits over the most of `pow2_hosts` (a power of two).
int64_t CountForTarget(const std::vector<int64_t>& divisors, int64_t target, int64_t global_batch,
                       int64_t pow2_hosts) {
  constexpr double kWindowOctaves = 0.5;
  int64_t best = 1, best_split = 0;
  double best_distance = INFINITY;
  for (int64_t d : divisors) {  // ascending, so that "<=" prefers the larger on ties
    const double distance =
        std::abs(std::log2(static_cast<double>(d)) - std::log2(static_cast<double>(target)));
    const int64_t split = distance <= kWindowOctaves ? std::gcd(global_batch / d, pow2_hosts) : 0;
    if (split > best_split || (split == best_split && distance <= best_distance)) {
      best = d, best_split = split, best_distance = distance;
    }
  }
  return best;
}

}  // namespace

std::vector<int64_t> MicrobatchCounts(int64_t global_batch, int64_t max_microbatches,
                                      int64_t hosts) {
  std::vector<int64_t> counts;
  if (global_batch < 1 || max_microbatches < 1) return counts;
  const std::vector<int64_t> divisors = DivisorsUpTo(global_batch, max_microbatches);
  // The largest power of two dividing the host count (hosts < 1 counts as one host).
  const int64_t pow2_hosts = std::max<int64_t>(hosts, 1) & -std::max<int64_t>(hosts, 1);
  for (int64_t target = 1; target <= max_microbatches; target *= 2) {
    const int64_t best = CountForTarget(divisors, target, global_batch, pow2_hosts);
    if (counts.empty() || counts.back() != best) counts.push_back(best);
    if (target > max_microbatches / 2) break;  // the next target would overflow past the cap
  }
  std::reverse(counts.begin(), counts.end());
  return counts;
}

}  // namespace alpa
