// Launch configurations of manual plans: the exact Megatron-LM command and DeepSpeed JSON for gpt
// and llama specs with ZeRO and remat on and off, the batch arithmetic and its errors.
#include "models/launch_config.h"

#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

namespace alpa {
namespace {

Cluster Hosts(int64_t hosts, int64_t devices_per_host) {
  Cluster cluster;
  cluster.hosts = hosts;
  cluster.devices_per_host = devices_per_host;
  return cluster;
}

ManualPlanSpec Spec(int64_t dp, int64_t tp, int64_t pp, int64_t microbatches, int32_t zero,
                    bool remat) {
  ManualPlanSpec spec;
  spec.data_parallel = dp;
  spec.tensor_parallel = tp;
  spec.pipeline_parallel = pp;
  spec.microbatches = microbatches;
  spec.zero_stage = zero;
  spec.remat = remat ? Recompute::kFull : Recompute::kNone;
  return spec;
}

ModelSpec Parse(const std::string& text) {
  Result<ModelSpec> spec = ParseModelSpec(text);
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  return spec.value();
}

std::string Text(LaunchFramework framework, const ManualPlanSpec& spec, const Cluster& cluster,
                 const ModelSpec* model) {
  Result<std::string> text = LaunchConfig(framework, spec, cluster, model);
  EXPECT_TRUE(text.ok()) << text.status().message();
  return text.ok() ? text.value() : std::string();
}

// The JSON after the '#' note lines.
nlohmann::json DeepSpeedJson(const std::string& text) {
  const size_t brace = text.find("\n{");
  EXPECT_NE(brace, std::string::npos) << text;
  return nlohmann::json::parse(text.substr(brace + 1));
}

// gpt-2.6b (batch 1024, f16) on 2 x 8 devices, dp 2 x tp 4 x pp 2 with 64 microbatches: the
// micro-batch size is 1024 / (2 x 64) = 8.
TEST(LaunchConfigTest, MegatronGptWithZeroAndRemat) {
  const ModelSpec model = Parse("gpt-2.6b");
  const std::string text =
      Text(LaunchFramework::kMegatron, Spec(2, 4, 2, 64, 1, true), Hosts(2, 8), &model);
  EXPECT_EQ(text,
            "# Megatron-LM launch of gpt-2.6b: dp=2 tp=4 pp=2 B=64 zero=1 remat=on on 2 hosts x "
            "8 devices (world size 16)\n"
            "# note: the vocabulary (51200 tokens in the model) comes from the tokenizer's files\n"
            "# note: run the command on every host with --node-rank 0..1 --master-addr HOST0 "
            "--master-port PORT\n"
            "torchrun --nnodes 2 --nproc-per-node 8 pretrain_gpt.py \\\n"
            "    --tensor-model-parallel-size 4 \\\n"
            "    --pipeline-model-parallel-size 2 \\\n"
            "    --micro-batch-size 8 \\\n"
            "    --global-batch-size 1024 \\\n"
            "    --use-distributed-optimizer \\\n"
            "    --recompute-granularity full \\\n"
            "    --recompute-method uniform \\\n"
            "    --recompute-num-layers 1 \\\n"
            "    --num-layers 32 \\\n"
            "    --hidden-size 2560 \\\n"
            "    --num-attention-heads 32 \\\n"
            "    --seq-length 1024 \\\n"
            "    --max-position-embeddings 1024 \\\n"
            "    --fp16\n");
}

TEST(LaunchConfigTest, MegatronGptWithoutZeroOrRematHasNeitherFlag) {
  const ModelSpec model = Parse("gpt-2.6b");
  const std::string text =
      Text(LaunchFramework::kMegatron, Spec(16, 1, 1, 4, 0, false), Hosts(2, 8), &model);
  EXPECT_NE(text.find("    --micro-batch-size 16 \\\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("--use-distributed-optimizer"), std::string::npos) << text;
  EXPECT_EQ(text.find("--recompute"), std::string::npos) << text;
}

// llama3-8b: grouped-query attention (8 key/value heads of 32), SwiGLU width 14336, bf16.
TEST(LaunchConfigTest, MegatronLlamaModelFlags) {
  const ModelSpec model = Parse("llama3-8b");
  const std::string text =
      Text(LaunchFramework::kMegatron, Spec(1, 8, 2, 64, 0, false), Hosts(2, 8), &model);
  const size_t command = text.find("torchrun");
  ASSERT_NE(command, std::string::npos) << text;
  EXPECT_EQ(text.substr(command),
            "torchrun --nnodes 2 --nproc-per-node 8 pretrain_gpt.py \\\n"
            "    --tensor-model-parallel-size 8 \\\n"
            "    --pipeline-model-parallel-size 2 \\\n"
            "    --micro-batch-size 8 \\\n"
            "    --global-batch-size 512 \\\n"
            "    --num-layers 32 \\\n"
            "    --hidden-size 4096 \\\n"
            "    --num-attention-heads 32 \\\n"
            "    --seq-length 8192 \\\n"
            "    --max-position-embeddings 8192 \\\n"
            "    --ffn-hidden-size 14336 \\\n"
            "    --group-query-attention \\\n"
            "    --num-query-groups 8 \\\n"
            "    --swiglu \\\n"
            "    --normalization RMSNorm \\\n"
            "    --position-embedding-type rope \\\n"
            "    --untie-embeddings-and-output-weights \\\n"
            "    --disable-bias-linear \\\n"
            "    --bf16\n");
}

// Llama 2 7B has as many key/value heads as query heads: no grouped-query flags.
TEST(LaunchConfigTest, MegatronLlamaWithoutGroupedQueryAttention) {
  const ModelSpec model = Parse("llama2-7b");
  const std::string text =
      Text(LaunchFramework::kMegatron, Spec(2, 8, 1, 4, 0, false), Hosts(2, 8), &model);
  EXPECT_EQ(text.find("--group-query-attention"), std::string::npos) << text;
  EXPECT_EQ(text.find("--num-query-groups"), std::string::npos) << text;
  EXPECT_NE(text.find("    --ffn-hidden-size 11008 \\\n"), std::string::npos) << text;
}

TEST(LaunchConfigTest, SelectiveRecomputationIsMegatronsSelectiveGranularity) {
  const ModelSpec model = Parse("gpt-2.6b");
  ManualPlanSpec spec = Spec(2, 4, 2, 64, 1, false);
  spec.remat = Recompute::kSelective;
  const std::string megatron = Text(LaunchFramework::kMegatron, spec, Hosts(2, 8), &model);
  EXPECT_NE(megatron.find("remat=selective"), std::string::npos) << megatron;
  EXPECT_NE(megatron.find("    --recompute-granularity selective"), std::string::npos) << megatron;
  EXPECT_EQ(megatron.find("--recompute-method"), std::string::npos) << megatron;
  const std::string deepspeed = Text(LaunchFramework::kDeepSpeed, spec, Hosts(2, 8), &model);
  EXPECT_NE(deepspeed.find("# note: selective recomputation: the model wraps each layer's "
                           "attention core"),
            std::string::npos)
      << deepspeed;
  EXPECT_TRUE(DeepSpeedJson(deepspeed).contains("activation_checkpointing")) << deepspeed;
}

TEST(LaunchConfigTest, DeepSpeedGptWithZeroAndRemat) {
  const ModelSpec model = Parse("gpt-2.6b");
  const std::string text =
      Text(LaunchFramework::kDeepSpeed, Spec(2, 4, 2, 64, 1, true), Hosts(2, 8), &model);
  const nlohmann::json expected = {{"train_batch_size", 1024},
                                   {"train_micro_batch_size_per_gpu", 8},
                                   {"gradient_accumulation_steps", 64},
                                   {"zero_optimization", {{"stage", 1}}},
                                   {"fp16", {{"enabled", true}}},
                                   {"activation_checkpointing",
                                    {{"partition_activations", false},
                                     {"contiguous_memory_optimization", false},
                                     {"cpu_checkpointing", false}}}};
  const nlohmann::json config = DeepSpeedJson(text);
  EXPECT_EQ(config, expected) << text;
  // DeepSpeed's own check: train_batch_size = micro-batch x accumulation x data parallel (2).
  EXPECT_EQ(config["train_micro_batch_size_per_gpu"].get<int64_t>() *
                config["gradient_accumulation_steps"].get<int64_t>() * 2,
            config["train_batch_size"].get<int64_t>());
  EXPECT_NE(text.find("# launch: deepspeed --hostfile HOSTFILE --num_nodes 2 --num_gpus 8 "),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("num_stages=2"), std::string::npos) << text;
  EXPECT_NE(text.find("run Megatron-DeepSpeed with --tensor-model-parallel-size 4 "
                      "--pipeline-model-parallel-size 2"),
            std::string::npos)
      << text;
}

TEST(LaunchConfigTest, DeepSpeedLlamaWithoutZeroOrRemat) {
  const ModelSpec model = Parse("llama3-8b");
  const std::string text =
      Text(LaunchFramework::kDeepSpeed, Spec(16, 1, 1, 4, 0, false), Hosts(2, 8), &model);
  const nlohmann::json expected = {{"train_batch_size", 512},
                                   {"train_micro_batch_size_per_gpu", 8},
                                   {"gradient_accumulation_steps", 4},
                                   {"zero_optimization", {{"stage", 0}}},
                                   {"bf16", {{"enabled", true}}}};
  EXPECT_EQ(DeepSpeedJson(text), expected) << text;
  EXPECT_EQ(text.find("pipeline"), std::string::npos) << text;
  EXPECT_EQ(text.find("Megatron-DeepSpeed"), std::string::npos) << text;
}

TEST(LaunchConfigTest, BatchNotDivisibleByDataParallelTimesMicrobatches) {
  const ModelSpec model = Parse("gpt-350m:batch=96");
  for (LaunchFramework framework : {LaunchFramework::kMegatron, LaunchFramework::kDeepSpeed}) {
    Result<std::string> text =
        LaunchConfig(framework, Spec(4, 2, 1, 64, 0, false), Hosts(1, 8), &model);
    ASSERT_FALSE(text.ok());
    EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(text.status().message(),
              "launch config: the global batch 96 is not divisible by data_parallel x "
              "microbatches = 4 x 64 = 256 (the micro-batch size per device must be whole)");
  }
}

TEST(LaunchConfigTest, BadPlansAreRejected) {
  const ModelSpec model = Parse("gpt-350m");
  Result<std::string> text =
      LaunchConfig(LaunchFramework::kMegatron, Spec(2, 2, 1, 4, 0, false), Hosts(1, 8), &model);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().message(),
            "launch config: data_parallel x tensor_parallel x pipeline_parallel = 4 must equal "
            "the cluster's 8 devices (1 host x 8)");
  text = LaunchConfig(LaunchFramework::kMegatron, Spec(8, 1, 1, 4, 4, false), Hosts(1, 8), &model);
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("zero_stage must be 0, 1, 2 or 3 (got 4"),
            std::string::npos);
  // ZeRO-2: DeepSpeed's stage 2; Megatron-LM's distributed optimizer is ZeRO-1.
  text = LaunchConfig(LaunchFramework::kMegatron, Spec(8, 1, 1, 4, 2, false), Hosts(1, 8), &model);
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("Megatron-LM has no ZeRO-2"), std::string::npos);
  text = LaunchConfig(LaunchFramework::kDeepSpeed, Spec(8, 1, 1, 4, 2, false), Hosts(1, 8), &model);
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(DeepSpeedJson(text.value())["zero_optimization"]["stage"], 2) << text.value();
  // ZeRO-3: DeepSpeed's stage 3; Megatron-LM has none, which the message says.
  text = LaunchConfig(LaunchFramework::kMegatron, Spec(8, 1, 1, 4, 3, false), Hosts(1, 8), &model);
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("Megatron-LM has no ZeRO-3"), std::string::npos);
  text = LaunchConfig(LaunchFramework::kDeepSpeed, Spec(8, 1, 1, 4, 3, false), Hosts(1, 8), &model);
  ASSERT_TRUE(text.ok()) << text.status().message();
  EXPECT_EQ(DeepSpeedJson(text.value())["zero_optimization"]["stage"], 3) << text.value();
  text = LaunchConfig(LaunchFramework::kMegatron, Spec(8, 1, 1, 0, 0, false), Hosts(1, 8), &model);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().message(), "launch config: microbatches must be >= 1 (got 0)");
  const int64_t big = int64_t{1} << 40;
  text =
      LaunchConfig(LaunchFramework::kMegatron, Spec(big, big, 1, 1, 0, false), Hosts(1, 8), &model);
  ASSERT_FALSE(text.ok());
  EXPECT_NE(text.status().message().find("overflows"), std::string::npos);
}

// A graph file (no zoo spec) and a family Megatron-LM has no script for get the parallel flags
// only, with a note saying what to add.
TEST(LaunchConfigTest, NonZooModelsGetTheParallelFlagsOnly) {
  const std::string graph =
      Text(LaunchFramework::kMegatron, Spec(2, 2, 2, 4, 0, false), Hosts(1, 8), nullptr);
  EXPECT_NE(graph.find("# note: not a zoo model: add the model's flags and --micro-batch-size"),
            std::string::npos)
      << graph;
  EXPECT_NE(graph.find("torchrun --nnodes 1 --nproc-per-node 8 YOUR_TRAINING_SCRIPT.py \\\n"
                       "    --tensor-model-parallel-size 2 \\\n"
                       "    --pipeline-model-parallel-size 2\n"),
            std::string::npos)
      << graph;
  const nlohmann::json ds = DeepSpeedJson(
      Text(LaunchFramework::kDeepSpeed, Spec(2, 2, 2, 4, 0, false), Hosts(1, 8), nullptr));
  EXPECT_EQ(ds, (nlohmann::json{{"gradient_accumulation_steps", 4},
                                {"zero_optimization", {{"stage", 0}}}}));

  const ModelSpec mlp = Parse("mlp:layers=4,batch=64");
  const std::string text =
      Text(LaunchFramework::kMegatron, Spec(8, 1, 1, 2, 0, false), Hosts(1, 8), &mlp);
  EXPECT_NE(text.find("# note: not a gpt, bert or llama model"), std::string::npos) << text;
  EXPECT_NE(text.find("    --micro-batch-size 4 \\\n    --global-batch-size 64\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("--num-layers"), std::string::npos) << text;
}

TEST(LaunchConfigTest, BertUsesItsOwnScriptAndNotesUnevenPipelines) {
  const ModelSpec model = Parse("bert:layers=6,hidden=256,heads=4,seq=128,batch=32");
  const std::string text =
      Text(LaunchFramework::kMegatron, Spec(2, 1, 4, 4, 0, false), Hosts(1, 8), &model);
  EXPECT_NE(text.find(" pretrain_bert.py \\\n"), std::string::npos) << text;
  EXPECT_NE(text.find("# note: --num-layers is not divisible by the pipeline size"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace alpa
