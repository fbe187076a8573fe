#include "exec/sim/timeline_rows.h"

#include <algorithm>

namespace alpa::timeline_internal {
namespace {

DrawKind ToDrawKind(SimEventKind k) {
  switch (k) {
    case SimEventKind::kForward:
      return DrawKind::kForward;
    case SimEventKind::kBackward:
      return DrawKind::kBackward;
    case SimEventKind::kWeightGradient:
      return DrawKind::kWeightGradient;
    case SimEventKind::kSend:
      return DrawKind::kSend;
    case SimEventKind::kRecv:
      return DrawKind::kRecv;
    case SimEventKind::kSync:
      return DrawKind::kSync;
    case SimEventKind::kUpdate:
      return DrawKind::kUpdate;
    case SimEventKind::kIdle:
      break;
  }
  return DrawKind::kIdle;
}

// An event in fractional pixels.
struct Span {
  DrawKind kind = DrawKind::kIdle;
  double x0 = 0, x1 = 0;
  int64_t microbatch = -1;
  int32_t stage = -1;
  double width() const { return x1 - x0; }
};

constexpr double kMinDenseWidth = 12;  // shorter runs of narrow tasks are drawn one by one

// Spans [i, j), all narrower than kNarrow, as stacked shares per bin. A bin holds about 16
// tasks so that the shares do not flicker with the phase of the schedule.
DenseStretch Densify(const std::vector<Span>& spans, size_t i, size_t j, int64_t x0, int64_t x1) {
  DenseStretch stretch;
  stretch.x0 = x0;
  const double avg = (spans[j - 1].x1 - spans[i].x0) / static_cast<double>(j - i);
  const int64_t bin = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(16 * avg)), 4, 32);
  size_t k = i;
  for (int64_t p = x0; p < x1;) {
    int64_t q = std::min(p + bin, x1);
    if (x1 - q < bin / 2) q = x1;  // no sliver at the end
    const double lo = std::max(static_cast<double>(p), spans[i].x0);
    const double hi = std::min(static_cast<double>(q), spans[j - 1].x1);
    std::array<double, kStacked + 1> cover{};  // the stacked kinds, then everything else
    while (k < j && spans[k].x1 <= lo) ++k;
    for (size_t m = k; m < j && spans[m].x0 < hi; ++m) {
      const double c = std::min(spans[m].x1, hi) - std::max(spans[m].x0, lo);
      const int kind = std::min(static_cast<int>(spans[m].kind), kStacked);
      if (c > 0) cover[static_cast<size_t>(kind)] += c;
    }
    DenseBin b;
    b.x1 = q;
    double acc = 0;
    for (size_t s = 0; s < kStacked; ++s) {
      acc += cover[s];
      b.cum[s] = hi > lo ? std::llround(static_cast<double>(kBarHeight) * acc / (hi - lo)) : 0;
    }
    if (!stretch.bins.empty() && stretch.bins.back().cum == b.cum) {
      stretch.bins.back().x1 = q;
    } else {
      stretch.bins.push_back(b);
    }
    p = q;
  }
  return stretch;
}

}  // namespace

StageRow BuildStageRow(const std::vector<const SimEvent*>& events, const TimeScale& ts) {
  std::vector<Span> spans;
  spans.reserve(events.size());
  for (const SimEvent* e : events) {
    Span sp;
    sp.kind = ToDrawKind(e->kind);
    sp.x0 = ts.X(e->start);
    sp.x1 = std::max(ts.X(e->end), sp.x0);
    sp.microbatch = IsCompute(sp.kind) ? e->microbatch : -1;
    sp.stage = e->stage;
    spans.push_back(sp);
  }
  StageRow row;
  int64_t last_x1 = 0;
  const auto add_block = [&](const Span& sp) {
    Block b;
    b.kind = sp.kind;
    b.x0 = std::max<int64_t>(std::llround(sp.x0), last_x1);
    b.x1 = std::llround(sp.x1);
    b.microbatch = sp.microbatch;
    b.stage = sp.stage;
    if (b.x1 <= b.x0) return;
    last_x1 = b.x1;
    if (b.kind == DrawKind::kIdle) return;
    if (!row.blocks.empty()) {
      Block& p = row.blocks.back();
      const bool narrow = (p.parts > 1 || p.width() < kNarrow) && b.width() < kNarrow;
      if (p.kind == b.kind && p.x1 == b.x0 && (!IsCompute(b.kind) || narrow)) {
        p.x1 = b.x1;
        p.parts += 1;
        p.microbatch = -1;
        return;
      }
    }
    row.blocks.push_back(b);
  };
  for (size_t i = 0; i < spans.size();) {
    size_t j = i;
    while (j < spans.size() && spans[j].width() < kNarrow) ++j;
    if (j > i && spans[j - 1].x1 - spans[i].x0 >= kMinDenseWidth) {
      const int64_t x0 = std::max<int64_t>(std::llround(spans[i].x0), last_x1);
      const int64_t x1 = std::llround(spans[j - 1].x1);
      if (x1 > x0) {
        row.dense.push_back(Densify(spans, i, j, x0, x1));
        last_x1 = x1;
      }
      i = j;
      continue;
    }
    for (const size_t end = std::max(j, i + 1); i < end; ++i) add_block(spans[i]);
  }
  return row;
}

std::vector<Block> SendBlocks(const std::vector<const SimEvent*>& sends, const TimeScale& ts) {
  std::vector<Block> spans;
  for (const SimEvent* e : sends) {
    Block b;
    b.kind = DrawKind::kSend;
    b.x0 = std::min(ts.Px(e->start), ts.width - 1);
    b.x1 = std::max(ts.Px(e->end), b.x0 + 1);
    spans.push_back(b);
  }
  std::sort(spans.begin(), spans.end(), [](const Block& a, const Block& b) {
    return a.x0 != b.x0 ? a.x0 < b.x0 : a.x1 < b.x1;
  });
  std::vector<Block> merged;
  for (const Block& b : spans) {
    if (!merged.empty() && b.x0 <= merged.back().x1) {
      merged.back().x1 = std::max(merged.back().x1, b.x1);
    } else {
      merged.push_back(b);
    }
  }
  return merged;
}

StageEvents CollectStageEvents(const PipelineSimResult& result, int64_t num_stages,
                               int64_t num_rows) {
  StageEvents events;
  num_rows = num_stages < 1 ? 0 : std::clamp<int64_t>(num_rows, 1, num_stages);
  events.tasks.resize(static_cast<size_t>(num_rows));
  events.sends.resize(static_cast<size_t>(num_rows));
  double t_last = 0;
  for (const SimEvent& e : result.timeline) {
    if (e.stage < 0 || e.stage >= num_stages) continue;
    t_last = std::max(t_last, e.end);
    const auto row = static_cast<size_t>(e.stage % num_rows);
    if (e.kind == SimEventKind::kSend) {
      if (!(e.end > e.start)) continue;  // zero bytes and no latency: nothing moved
      events.sends[row].push_back(&e);
      events.any_send = true;
    } else {
      events.tasks[row].push_back(&e);
    }
  }
  for (auto& v : events.tasks) {
    std::stable_sort(v.begin(), v.end(),
                     [](const SimEvent* a, const SimEvent* b) { return a->start < b->start; });
  }
  double t_end = result.iteration_seconds > 0 ? result.iteration_seconds : t_last;
  if (!(t_end > 0) || !std::isfinite(t_end)) t_end = 1;
  events.t_end = t_end;
  return events;
}

}  // namespace alpa::timeline_internal
