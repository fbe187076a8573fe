#include "solvers/sharding/local_search_trws.h"

#include <algorithm>
#include <cstdlib>
#include <limits>

namespace alpa {
namespace {
constexpr double kInf = std::numeric_limits<double>::infinity();
}  // namespace

MessagePassing::MessagePassing(const SearchGraph& graph) : graph_(graph) {
  const int32_t n = graph.node_count();
  // Breadth-first order: messages then travel along the graph's structure in each sweep.
  position_.assign(static_cast<size_t>(n), -1);
  order_.reserve(static_cast<size_t>(n));
  if (std::getenv("IDORDER")) {
    for (int32_t v = 0; v < n; ++v) { position_[static_cast<size_t>(v)] = v; order_.push_back(v); }
  }
  for (int32_t root = 0; root < n; ++root) {
    if (position_[static_cast<size_t>(root)] >= 0) continue;
    position_[static_cast<size_t>(root)] = static_cast<int32_t>(order_.size());
    order_.push_back(root);
    for (size_t i = order_.size() - 1; i < order_.size(); ++i) {
      const int32_t v = order_[i];
      for (const SearchArc* a = graph.arcs_begin(v); a != graph.arcs_end(v); ++a) {
        if (position_[static_cast<size_t>(a->other)] >= 0) continue;
        position_[static_cast<size_t>(a->other)] = static_cast<int32_t>(order_.size());
        order_.push_back(a->other);
      }
    }
  }
  gamma_.assign(static_cast<size_t>(n), 1.0);
  unary_offset_.assign(static_cast<size_t>(n) + 1, 0);
  for (int32_t v = 0; v < n; ++v) {
    int32_t before = 0;
    int32_t after = 0;
    for (const SearchArc* a = graph.arcs_begin(v); a != graph.arcs_end(v); ++a) {
      if (position_[static_cast<size_t>(a->other)] < position_[static_cast<size_t>(v)]) {
        ++before;
      } else {
        ++after;
      }
    }
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

long double MessagePassing::LowerBound(const std::vector<double>& unary) const {
  const int32_t n = graph_.node_count();
  // share[v][s] = belief_v(s) / degree_v, stored flat like the unary terms.
  std::vector<double> share(unary.size(), 0.0);
  long double bound = 0;
  for (int32_t v = 0; v < n; ++v) {
    const size_t kv = static_cast<size_t>(graph_.strategy_count(v));
    const double* u = unary.data() + unary_offset_[static_cast<size_t>(v)];
    double* sh = share.data() + unary_offset_[static_cast<size_t>(v)];
    const int32_t degree = graph_.degree(v);
    if (degree == 0) {
      double best = kInf;
      for (int32_t s : graph_.domain(v)) best = std::min(best, u[s]);
      bound += best;
      continue;
    }
    for (size_t s = 0; s < kv; ++s) {
      sh[s] = graph_.allowed(v, static_cast<int32_t>(s)) ? u[s] : kInf;
    }
    for (const SearchArc* a = graph_.arcs_begin(v); a != graph_.arcs_end(v); ++a) {
      const double* in = messages_.data() + message_offset_[a->reverse];
      for (size_t s = 0; s < kv; ++s) sh[s] += in[s];
    }
    for (size_t s = 0; s < kv; ++s) sh[s] /= degree;
  }
  std::vector<double> left(belief_.size());
  for (int32_t v = 0; v < n; ++v) {
    const size_t kv = static_cast<size_t>(graph_.strategy_count(v));
    for (const SearchArc* a = graph_.arcs_begin(v); a != graph_.arcs_end(v); ++a) {
      if (a->other < v) continue;  // each edge once
      const int32_t u = a->other;
      const size_t ku = static_cast<size_t>(graph_.strategy_count(u));
      // This edge's share of v minus the message v got over it (left), and the same for u.
      const double* sv = share.data() + unary_offset_[static_cast<size_t>(v)];
      const double* in_v = messages_.data() + message_offset_[a->reverse];
      for (size_t s = 0; s < kv; ++s) left[s] = sv[s] - in_v[s];
      const double* su = share.data() + unary_offset_[static_cast<size_t>(u)];
      const double* in_u = messages_.data() + message_offset_[graph_.arc_index(a)];
      double best = kInf;
      for (size_t t = 0; t < ku; ++t) {
        if (!graph_.allowed(u, static_cast<int32_t>(t))) continue;
        const double base = su[t] - in_u[t];
        const double* row = a->cost + t * kv;
        for (size_t s = 0; s < kv; ++s) best = std::min(best, base + left[s] + row[s]);
      }
      bound += best;
    }
  }
  return bound;
}

void MessagePassing::Reset() { std::fill(messages_.begin(), messages_.end(), 0.0); }

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

int64_t MessagePassing::Iterate(const std::vector<double>& unary, int32_t iterations) {
  int64_t work = 0;
  const int32_t n = graph_.node_count();
  for (int32_t it = 0; it < iterations; ++it) {
    for (int32_t pass = 0; pass < 2; ++pass) {
      const bool forward = pass == 0;
      for (int32_t i = 0; i < n; ++i) {
        const int32_t v = order_[static_cast<size_t>(forward ? i : n - 1 - i)];
        const int32_t pv = position_[static_cast<size_t>(v)];
        const size_t kv = static_cast<size_t>(graph_.strategy_count(v));
        const double* u = unary.data() + unary_offset_[static_cast<size_t>(v)];
        for (size_t s = 0; s < kv; ++s) {
          belief_[s] = graph_.allowed(v, static_cast<int32_t>(s)) ? u[s] : kInf;
        }
        for (const SearchArc* a = graph_.arcs_begin(v); a != graph_.arcs_end(v); ++a) {
          const double* in = messages_.data() + message_offset_[a->reverse];
          for (size_t s = 0; s < kv; ++s) belief_[s] += in[s];
        }
        for (const SearchArc* a = graph_.arcs_begin(v); a != graph_.arcs_end(v); ++a) {
          const int32_t pu = position_[static_cast<size_t>(a->other)];
          if (forward ? pu < pv : pu > pv) continue;
          Send(v, graph_.arc_index(a), belief_.data());
          work += static_cast<int64_t>(kv) * graph_.strategy_count(a->other);
        }
      }
    }
  }
  return work;
}

void MessagePassing::Score(int32_t v, const std::vector<double>& unary,
                           const std::vector<int32_t>& x, double* score) const {
  const size_t kv = static_cast<size_t>(graph_.strategy_count(v));
  const int32_t pv = position_[static_cast<size_t>(v)];
  const double* u = unary.data() + unary_offset_[static_cast<size_t>(v)];
  std::copy(u, u + kv, score);
  for (const SearchArc* a = graph_.arcs_begin(v); a != graph_.arcs_end(v); ++a) {
    if (position_[static_cast<size_t>(a->other)] < pv) {
      const double* row = a->cost + static_cast<size_t>(x[static_cast<size_t>(a->other)]) * kv;
      for (size_t s = 0; s < kv; ++s) score[s] += row[s];
    } else {
      const double* in = messages_.data() + message_offset_[a->reverse];
      for (size_t s = 0; s < kv; ++s) score[s] += in[s];
    }
  }
}

void MessagePassing::Decode(const std::vector<double>& unary, std::vector<int32_t>* x) const {
  x->assign(static_cast<size_t>(graph_.node_count()), 0);
  std::vector<double> score(belief_.size());
  for (int32_t v : order_) {
    Score(v, unary, *x, score.data());
    int32_t best = graph_.domain(v).front();
    for (int32_t s : graph_.domain(v)) {
      if (score[static_cast<size_t>(s)] < score[static_cast<size_t>(best)]) best = s;
    }
    (*x)[static_cast<size_t>(v)] = best;
  }
}

}  // namespace alpa
