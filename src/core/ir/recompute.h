// How a pipeline stage recomputes forward values in the backward pass instead of keeping them
// for every microbatch in flight, and which ops selective recomputation reruns.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/ir/graph.h"

namespace alpa {

// kNone keeps every forward value the backward reads; kFull keeps only the forward inputs of
// each piece and reruns its whole forward before its backward (Megatron-LM's full activation
// recomputation); kSelective keeps everything except the attention cores' score-sized values
// and reruns the ops that make them (Megatron-LM's selective recomputation, Korthikanti et al.
// 2022: large to keep, cheap to recompute).
enum class Recompute : int32_t { kNone = 0, kFull = 1, kSelective = 2 };

// "off", "on", "selective": the words the CLI, the plan JSON and the option strings use.
std::string_view RecomputeName(Recompute recompute);
std::optional<Recompute> ParseRecompute(std::string_view name);

// Per op: whether selective recomputation reruns it before the backward: the forward ops of
// the attention cores (AttentionCoreValues) whose value the backward reads, directly or through
// other such ops. All false for graphs without attention cores, where kSelective is kNone.
std::vector<bool> SelectivelyRecomputedOps(const Graph& graph);

}  // namespace alpa
