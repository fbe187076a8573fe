// The timeline of a simulated iteration as an SVG picture: one row per pipeline stage (its
// devices named in the row label), under interleaved 1F1B one row per device group instead
// (what its devices do: the tasks of all its stages, written "stage:microbatch", its waits and
// idle time, its stages' syncs and updates; rows per stage would show each stage's tasks with
// gaps that are the other stages' work, not idle time), time left to right, forward / backward
// compute, waiting for communication, gradient synchronisation, the update and idle time in
// distinct colours with a legend, microbatch numbers written on the compute blocks when they fit,
// and a time axis. Where tasks are too narrow to draw one by one (large B), a row shows, per few
// pixels, the stacked shares of time spent in forward, backward, waiting, sync and update instead,
// which keeps the picture readable and its size bounded by the width, not by stages x B.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "exec/sim/pipeline_simulator.h"

namespace alpa {

struct TimelineSvgOptions {
  int32_t width = 1600;  // pixels, at least 320 (height follows the stage count)
  std::string title;     // drawn at the top when not empty
  // Per row: its label (e.g. "stage 0: devices 0-7, layers 0-3"); default "stage k", under
  // interleaved 1F1B (a row per device group) "group g: stages g, g + P, ...".
  std::vector<std::string> stage_labels;
};

// Self-contained SVG (no scripts, no external fonts). The input's timeline must have been
// recorded (PipelineSimInput::record_timeline).
std::string TimelineSvg(const PipelineSimInput& input, const PipelineSimResult& result,
                        const TimelineSvgOptions& options = {});

}  // namespace alpa
