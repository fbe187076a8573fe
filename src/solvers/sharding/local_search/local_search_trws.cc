#include "solvers/sharding/local_search/local_search_trws.h"

#include <algorithm>
#include <limits>

namespace alpa {
namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

// Sweeps follow node index order. Input order is usually the program's order, which the live
// intervals (memory rows) follow too; on the IOPDDL benchmarks it converges markedly better than
// a breadth-first order.
MessagePassing::MessagePassing(const SearchGraph& graph) : graph_(graph) {
  const int32_t n = graph.node_count();
  gamma_.assign(static_cast<size_t>(n), 1.0);
  unary_offset_.assign(static_cast<size_t>(n) + 1, 0);
  for (int32_t v = 0; v < n; ++v) {
    int32_t before = 0;
    int32_t after = 0;
    for (const SearchArc* a = graph.arcs_begin(v); a != graph.arcs_end(v); ++a) {
      if (a->other < v) {
        ++before;
      } else {
        ++after;
      }
    }
    // TRW-S weight: v lies on max(before, after) monotonic chains, sharing its unary term.
    gamma_[static_cast<size_t>(v)] = 1.0 / std::max(1, std::max(before, after));
    unary_offset_[static_cast<size_t>(v) + 1] =
        unary_offset_[static_cast<size_t>(v)] + static_cast<size_t>(graph.strategy_count(v));
  }
  message_offset_.assign(graph.arc_count() + 1, 0);
  for (size_t i = 0; i < graph.arc_count(); ++i) {
    message_offset_[i + 1] =
        message_offset_[i] + static_cast<size_t>(graph.strategy_count(graph.arc(i).other));
  }
  messages_.assign(message_offset_.back(), 0.0);
  belief_.assign(static_cast<size_t>(std::max(1, graph.max_strategy_count())), 0.0);
  scratch_.assign(belief_.size(), 0.0);
}

void MessagePassing::Send(int32_t v, size_t arc_index, const double* belief) {
  const SearchArc& arc = graph_.arc(arc_index);
  const size_t kv = static_cast<size_t>(graph_.strategy_count(v));
  const size_t ku = static_cast<size_t>(graph_.strategy_count(arc.other));
  const double gamma = gamma_[static_cast<size_t>(v)];
  const double* incoming = messages_.data() + message_offset_[arc.reverse];
  for (size_t s = 0; s < kv; ++s) scratch_[s] = gamma * belief[s] - incoming[s];
  double* out = messages_.data() + message_offset_[arc_index];
  double lowest = kInf;
  for (size_t t = 0; t < ku; ++t) {
    // Disallowed strategies (belief +inf) get a zero message, so that no inf - inf appears.
    if (!graph_.allowed(arc.other, static_cast<int32_t>(t))) {
      out[t] = 0.0;
      continue;
    }
    const double* row = arc.cost + t * kv;
    double best = kInf;
    for (size_t s = 0; s < kv; ++s) best = std::min(best, scratch_[s] + row[s]);
    out[t] = best;
    lowest = std::min(lowest, best);
  }
  if (lowest == kInf) lowest = 0.0;
  for (size_t t = 0; t < ku; ++t) {
    if (graph_.allowed(arc.other, static_cast<int32_t>(t))) out[t] -= lowest;
  }
}

void MessagePassing::Iterate(const std::vector<double>& unary, int32_t iterations,
                             const SolveControl& control) {
  // Message entries (arcs times strategies) between two reads of the control.
  constexpr int64_t kEntriesBetweenChecks = 1 << 16;
  PeriodicCheck check(control, kEntriesBetweenChecks);
  const int32_t n = graph_.node_count();
  for (int32_t it = 0; it < iterations; ++it) {
    for (int32_t pass = 0; pass < 2; ++pass) {
      const bool forward = pass == 0;
      for (int32_t i = 0; i < n; ++i) {
        const int32_t v = forward ? i : n - 1 - i;
        const size_t kv = static_cast<size_t>(graph_.strategy_count(v));
        if (check.stop((1 + graph_.degree(v)) * static_cast<int64_t>(kv * kv))) return;
        const double* u = unary.data() + unary_offset_[static_cast<size_t>(v)];
        for (size_t s = 0; s < kv; ++s) {
          belief_[s] = graph_.allowed(v, static_cast<int32_t>(s)) ? u[s] : kInf;
        }
        for (const SearchArc* a = graph_.arcs_begin(v); a != graph_.arcs_end(v); ++a) {
          const double* in = messages_.data() + message_offset_[a->reverse];
          for (size_t s = 0; s < kv; ++s) belief_[s] += in[s];
        }
        for (const SearchArc* a = graph_.arcs_begin(v); a != graph_.arcs_end(v); ++a) {
          if (forward ? a->other < v : a->other > v) continue;
          Send(v, graph_.arc_index(a), belief_.data());
        }
      }
    }
  }
}

void MessagePassing::Decode(const std::vector<double>& unary, std::vector<int32_t>* x) const {
  const int32_t n = graph_.node_count();
  x->assign(static_cast<size_t>(n), 0);
  std::vector<double> score(belief_.size());
  for (int32_t v = 0; v < n; ++v) {
    const size_t kv = static_cast<size_t>(graph_.strategy_count(v));
    const double* u = unary.data() + unary_offset_[static_cast<size_t>(v)];
    std::copy(u, u + kv, score.begin());
    for (const SearchArc* a = graph_.arcs_begin(v); a != graph_.arcs_end(v); ++a) {
      if (a->other < v) {
        const double* row = a->cost + static_cast<size_t>((*x)[static_cast<size_t>(a->other)]) * kv;
        for (size_t s = 0; s < kv; ++s) score[s] += row[s];
      } else {
        const double* in = messages_.data() + message_offset_[a->reverse];
        for (size_t s = 0; s < kv; ++s) score[s] += in[s];
      }
    }
    int32_t best = graph_.domain(v).front();
    for (int32_t s : graph_.domain(v)) {
      if (score[static_cast<size_t>(s)] < score[static_cast<size_t>(best)]) best = s;
    }
    (*x)[static_cast<size_t>(v)] = best;
  }
}

}  // namespace alpa
