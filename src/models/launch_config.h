// Launch configurations of a manual (Megatron-style) plan: what a user pastes to run the plan's
// degrees with Megatron-LM or DeepSpeed (`alpa baseline --launch`, alpa_plan_launch_config).
//
// The batch arithmetic is the frameworks' own: the global batch (the spec's `batch`) is
// data_parallel x micro-batch size x microbatches, so the micro-batch size per device is
// batch / (dp x B) and DeepSpeed's gradient_accumulation_steps is B. The plan's ZeRO-1 is
// Megatron-LM's distributed optimizer (optimizer state sharded over the data-parallel ranks) and
// DeepSpeed's zero_optimization stage 1; ZeRO-2 and ZeRO-3 are DeepSpeed's stages 2 and 3 (a
// Megatron-LM launch of either is an error naming DeepSpeed); its remat (every transformer layer
// checkpointed) is Megatron-LM's full recompute of each layer and DeepSpeed's activation
// checkpointing.
//
// The model flags (--num-layers, --hidden-size, ...) come from a zoo spec of the gpt, bert or
// llama family with embed=1; any other model (another family, embed=0, or none: a graph file)
// gets the parallel and batch flags only, with a note saying what to add.
//
// Each text starts with '#' note lines (the plan, the launch command, what the frameworks cannot
// express), which are comments to a shell; the DeepSpeed text's JSON follows them.
#pragma once

#include <cstdint>
#include <string>

#include "core/cluster/cluster.h"
#include "core/util/status.h"
#include "models/model_zoo.h"
#include "solvers/planner/manual_plan.h"

namespace alpa {

enum class LaunchFramework { kMegatron, kDeepSpeed };

// Errors (kInvalidArgument, naming the field): a degree or microbatches < 1, dp x tp x pp not
// the cluster's devices, zero_stage outside 0..3, the global batch not divisible by dp x B, a
// product that overflows. model may be null (a model not from the zoo: no batch is known, so the
// batch flags are left to the user as well).
Result<std::string> LaunchConfig(LaunchFramework framework, const ManualPlanSpec& spec,
                                 const Cluster& cluster, const ModelSpec* model);

}  // namespace alpa
