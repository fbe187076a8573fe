// The model zoo: training graphs of the benchmark models (REFERENCE §6), built through the IR
// and autodiff (never a hand-written backward pass).
//
// Specs: a preset name ("gpt-39b", "moe-380m", "wresnet-13b", ...) or a family with explicit
// keys ("gpt:hidden=2560,layers=32,heads=32,seq=1024,vocab=51200,batch=1024",
// "mlp:layers=6,batch=256,hidden=32"). A preset may be refined by keys too
// ("gpt-350m:batch=8,layers=2"). Keys common to every family: batch, dtype (f32/f16/bf16;
// default f16 for gpt/bert/moe, bf16 for llama, f32 for mlp/wresnet), optimizer (sgd/momentum/adam,
// default adam), lr (0.001), master_weights (0/1; default 1 for half dtypes), training (0: forward
// + loss only). ModelFamilyHelp() lists each family's keys and defaults.
//
// Families (details in each src/models/<family>.cc):
//   mlp      dense + relu layers, MSE or cross-entropy (Alpa's auto-sharding test MLP).
//   gpt      pre-LN causal transformer LM, LM head tied to the token embedding. Parameters and
//            training dot FLOPs match REFERENCE §6's closed forms (< 0.5 % / < 1 %).
//   bert     post-LN bidirectional transformer, tied MLM head, loss on every token.
//   moe      Alpa's MoE LM: post-LN, GShard top-2 MoE in every other layer (moe_every=2) and
//            mlp_ratio=8 (Alpa's intermediate size); the presets match their names within 4 %.
//            moe_every=1,mlp_ratio=4 gives MoE in every layer with [E, h, 4h] experts.
//   wresnet  Alpa's Wide-ResNet (bottleneck stages, 3x3 conv widened by `width`), NCHW.
//            `image`, `classes` and `stages` ("1-1") shrink it for tests.
//   llama    Llama 2 / 3 decoder: RMSNorm, rotary q / k (tables fed as inputs rope.cos /
//            rope.sin), grouped-query attention (kv_heads), SwiGLU MLP (ffn), untied head; the
//            presets llama2-7b/13b/70b and llama3-8b/70b match the published sizes within 0.1 %.
// gpt, bert, moe and llama take embed (default 1); embed=0 builds the blocks alone on hidden states
// x [batch, seq, hidden] with the mean squared error against y of that shape as the loss
// (Alpa's layer-level auto-sharding tests).
// Layer indices: embedding / stem 0, blocks 1..L, head L + 1.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/autodiff/autodiff.h"
#include "core/ir/graph.h"
#include "core/util/status.h"

namespace alpa {

struct ModelPreset {
  std::string name;         // "gpt-39b"
  std::string family;       // "gpt"
  std::string spec;         // the explicit spec it stands for: "gpt:hidden=8192,layers=48,..."
  int64_t nominal_params;   // the size the name claims (39e9)
  int32_t benchmark_gpus;   // the GPU count REFERENCE §6 pairs it with (0: none)
  std::string description;  // one line
};

// Every preset, in a stable order (family, then size).
const std::vector<ModelPreset>& ModelPresets();
// The families with their keys and defaults, one line each (for `alpa models`).
std::vector<std::string> ModelFamilyHelp();

// A parsed spec: family plus every key with its value (defaults filled in).
struct ModelSpec {
  std::string family;
  std::string preset;  // "" for explicit specs
  std::map<std::string, std::string> keys;
};
// Errors (kInvalidArgument) name the unknown family / key / bad value.
Result<ModelSpec> ParseModelSpec(const std::string& spec);

// Builds the training graph (or the forward graph with training=0) of a spec. The graph's
// outputs[0] is the scalar loss. Ops carry layer indices (0 .. layers + 1: embedding, one per
// block, head) for the pipeline planner.
Result<Graph> BuildModel(const std::string& spec);
Result<Graph> BuildModel(const ModelSpec& spec);

// The forward graph alone (outputs[0] = scalar loss), whatever the spec's `training` says.
Result<Graph> BuildForwardModel(const ModelSpec& spec);
// The optimizer the spec asks for (optimizer, lr, master_weights keys).
Result<OptimizerConfig> ModelOptimizerConfig(const ModelSpec& spec);

}  // namespace alpa
