// The microbatches a stage holds activations of under each schedule equal the most forwarded
// and not yet backwarded microbatches in the schedule's own task order.
#include "solvers/pipeline/pipeline_schedule.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace alpa {
namespace {

int64_t MostInFlight(const std::vector<PipelineTask>& tasks) {
  int64_t in_flight = 0, most = 0;
  for (const PipelineTask& t : tasks) {
    in_flight += t.kind == PipelineTaskKind::kForward ? 1 : -1;
    most = std::max(most, in_flight);
  }
  return most;
}

TEST(MicrobatchesInFlight, EqualsTheScheduleOwnCount) {
  for (PipelineScheduleKind kind :
       {PipelineScheduleKind::kGPipe, PipelineScheduleKind::kOneFOneB}) {
    for (int32_t stages = 1; stages <= 4; ++stages) {
      for (int32_t stage = 0; stage < stages; ++stage) {
        for (int64_t b = 1; b <= 6; ++b) {
          EXPECT_EQ(MicrobatchesInFlight(kind, stages, stage, b),
                    MostInFlight(StageSchedule(kind, stages, stage, b)))
              << "kind " << static_cast<int>(kind) << ", stage " << stage << " of " << stages
              << ", " << b << " microbatches";
        }
      }
    }
  }
  // GPipe holds every microbatch; 1F1B min(stages - stage, B).
  EXPECT_EQ(MicrobatchesInFlight(PipelineScheduleKind::kGPipe, 4, 3, 8), 8);
  EXPECT_EQ(MicrobatchesInFlight(PipelineScheduleKind::kOneFOneB, 4, 0, 8), 4);
  EXPECT_EQ(MicrobatchesInFlight(PipelineScheduleKind::kOneFOneB, 4, 3, 8), 1);
  EXPECT_EQ(MicrobatchesInFlight(PipelineScheduleKind::kOneFOneB, 4, 0, 2), 2);
  EXPECT_EQ(MicrobatchesInFlight(PipelineScheduleKind::kGPipe, 4, 4, 8), 0);  // no such stage
}

}  // namespace
}  // namespace alpa
