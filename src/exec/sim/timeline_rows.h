// The rows of the timeline SVG (timeline_svg.cc) as data: per row (a pipeline stage, or under
// interleaved 1F1B a device group), the simulated events turned into blocks of whole pixels,
// with runs of tasks too narrow to draw one by one turned into dense stretches of stacked
// shares, and the row's sends as a strip. Not an API.
#pragma once

#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "exec/sim/pipeline_simulator.h"

namespace alpa::timeline_internal {

// What a block is drawn as. The first kStacked kinds are also the layers, bottom up, of a
// dense stretch: tasks too narrow to draw one by one (large B) become per-bin stacked shares of
// time, so that a row still shows how much of it went to forward, backward and waiting.
enum class DrawKind : int32_t {
  kForward,
  kBackward,
  kWeightGradient,  // ZB-H1's weight-gradient tasks (pipeline_simulator.h)
  kRecv,
  kSync,
  kUpdate,
  kIdle,
  kSend,
  kDense,  // legend only
};
constexpr int kNumDrawKinds = 9;
constexpr int kStacked = 6;  // forward .. update

// The height of a row's task bar, in pixels.
constexpr int64_t kBarHeight = 24;
// Tasks narrower than kNarrow px are hard to tell apart: same-kind neighbours merge, and runs
// of them become dense stretches. Wider tasks are drawn one by one with a white outline.
constexpr int64_t kNarrow = 6;

// A block of one row in whole pixels: [x0, x1) relative to the plot's left edge.
struct Block {
  DrawKind kind = DrawKind::kIdle;
  int64_t x0 = 0, x1 = 0;
  int64_t microbatch = -1;
  int32_t stage = -1;  // of a single task: the stage it belongs to
  int64_t parts = 1;   // > 1: several tasks merged, drawn without number or outline
  int64_t width() const { return x1 - x0; }
};

inline bool IsCompute(DrawKind k) {
  return k == DrawKind::kForward || k == DrawKind::kBackward || k == DrawKind::kWeightGradient;
}

// Maps times to whole pixels; events that share a boundary time share its pixel, so a stage's
// tiling stays a tiling and sub-pixel events simply vanish between their neighbours.
struct TimeScale {
  double t_end = 1;
  int64_t width = 1;
  double X(double t) const {  // fractional pixels
    if (!(t > 0)) return 0;
    if (t >= t_end) return static_cast<double>(width);
    return t / t_end * static_cast<double>(width);
  }
  int64_t Px(double t) const {
    if (!(t > 0)) return 0;
    if (t >= t_end) return width;
    return std::llround(t / t_end * static_cast<double>(width));
  }
};

// A dense stretch: bins of whole pixels, each with the cumulative heights (bottom up, in
// pixels of the bar) of the stacked kinds; equal neighbouring bins are merged.
struct DenseBin {
  int64_t x1 = 0;  // the bin ends here; it starts where the previous one ended
  std::array<int64_t, kStacked> cum{};
};
struct DenseStretch {
  int64_t x0 = 0;
  std::vector<DenseBin> bins;
};

struct StageRow {
  std::vector<Block> blocks;  // idle is the background and not listed
  std::vector<DenseStretch> dense;
};

// Per row its task events in time order and its sends that moved something, with the time
// the drawing spans.
struct StageEvents {
  std::vector<std::vector<const SimEvent*>> tasks, sends;
  bool any_send = false;
  double t_end = 1;
};

// The events of stage s go to row s % num_rows (num_rows: the stages, or under interleaving
// the device groups, whose idle and wait events carry the group's first stage, its number).
StageEvents CollectStageEvents(const PipelineSimResult& result, int64_t num_stages,
                               int64_t num_rows);

// The row's blocks: tasks, waits, sync and update one by one where they are wide enough (or
// few), consecutive narrow same-kind tasks merged into one block, and long runs of narrow
// events as dense stretches.
StageRow BuildStageRow(const std::vector<const SimEvent*>& events, const TimeScale& ts);

// The union of the stage's sends in whole pixels (at least one pixel each, so that short
// transfers stay visible).
std::vector<Block> SendBlocks(const std::vector<const SimEvent*>& sends, const TimeScale& ts);

}  // namespace alpa::timeline_internal
