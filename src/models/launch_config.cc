#include "models/launch_config.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

#include "models/layers.h"

namespace alpa {
namespace {

// The plan's degrees checked against the cluster, and the batch split they imply.
struct LaunchShape {
  int64_t hosts = 1, devices_per_host = 1;
  int64_t global_batch = 0;  // 0: unknown (no zoo spec)
  int64_t micro_batch = 0;   // per device: global_batch / (dp x B); 0 when unknown
};

// The Megatron-LM model flags of a zoo transformer; absent for other models.
struct LaunchModel {
  std::string family;  // gpt, bert or llama
  models::TransformerShape shape;
  int64_t kv_heads = 0, ffn = 0;  // llama only
};

Status Invalid(const std::string& message) {
  return Status(StatusCode::kInvalidArgument, "launch config: " + message);
}

Result<LaunchShape> CheckPlan(const ManualPlanSpec& spec, const Cluster& cluster,
                              const ModelSpec* model) {
  const std::pair<const char*, int64_t> degrees[] = {{"data_parallel", spec.data_parallel},
                                                     {"tensor_parallel", spec.tensor_parallel},
                                                     {"pipeline_parallel", spec.pipeline_parallel},
                                                     {"microbatches", spec.microbatches}};
  for (const auto& [name, value] : degrees) {
    if (value < 1)
      return Invalid(std::string(name) + " must be >= 1 (got " + std::to_string(value) + ")");
  }
  if (spec.zero_stage < 0 || spec.zero_stage > 3) {
    return Invalid("zero_stage must be 0, 1, 2 or 3 (got " + std::to_string(spec.zero_stage) + ")");
  }
  LaunchShape shape;
  shape.hosts = cluster.hosts;
  shape.devices_per_host = cluster.devices_per_host;
  int64_t dp_tp = 0, world = 0, devices = 0;
  if (__builtin_mul_overflow(spec.data_parallel, spec.tensor_parallel, &dp_tp) ||
      __builtin_mul_overflow(dp_tp, spec.pipeline_parallel, &world) ||
      __builtin_mul_overflow(cluster.hosts, cluster.devices_per_host, &devices)) {
    return Invalid("data_parallel x tensor_parallel x pipeline_parallel overflows");
  }
  if (world != devices) {
    return Invalid(
        "data_parallel x tensor_parallel x pipeline_parallel = " + std::to_string(world) +
        " must equal the cluster's " + std::to_string(devices) + " devices (" +
        std::to_string(cluster.hosts) + (cluster.hosts == 1 ? " host x " : " hosts x ") +
        std::to_string(cluster.devices_per_host) + ")");
  }
  if (model == nullptr) return shape;
  models::SpecReader reader(*model);
  shape.global_batch = reader.PositiveInt("batch");
  if (!reader.ok()) return reader.status();
  int64_t per_step = 0;
  if (__builtin_mul_overflow(spec.data_parallel, spec.microbatches, &per_step)) {
    return Invalid("data_parallel x microbatches overflows");
  }
  if (shape.global_batch % per_step != 0) {
    return Invalid("the global batch " + std::to_string(shape.global_batch) +
                   " is not divisible by data_parallel x microbatches = " +
                   std::to_string(spec.data_parallel) + " x " + std::to_string(spec.microbatches) +
                   " = " + std::to_string(per_step) +
                   " (the micro-batch size per device must be whole)");
  }
  shape.micro_batch = shape.global_batch / per_step;
  return shape;
}

// The model flags apply to the transformer LMs Megatron-LM trains: gpt, bert and llama with
// their embedding (embed=0 is a bare layer stack, which no Megatron-LM script builds).
Result<std::optional<LaunchModel>> ReadLaunchModel(const ModelSpec* model) {
  if (model == nullptr) return std::optional<LaunchModel>();
  if (model->family != "gpt" && model->family != "bert" && model->family != "llama") {
    return std::optional<LaunchModel>();
  }
  models::SpecReader reader(*model);
  LaunchModel out;
  out.family = model->family;
  out.shape = models::ReadTransformerShape(reader);
  if (out.family == "llama") {
    out.kv_heads = reader.NonNegativeInt("kv_heads");
    out.ffn = reader.PositiveInt("ffn");
    if (out.kv_heads == 0) out.kv_heads = out.shape.heads;
  }
  if (!reader.ok()) return reader.status();
  if (!out.shape.embed) return std::optional<LaunchModel>();
  return std::optional<LaunchModel>(out);
}

std::string ModelName(const ModelSpec* model) {
  if (model == nullptr) return "a model not from the zoo";
  return model->preset.empty() ? model->family : model->preset;
}

std::string PlanLine(const std::string& framework, const ManualPlanSpec& spec,
                     const LaunchShape& shape, const ModelSpec* model) {
  return "# " + framework + " launch of " + ModelName(model) + ": " + ManualPlanSpecString(spec) +
         " on " + std::to_string(shape.hosts) + (shape.hosts == 1 ? " host" : " hosts") + " x " +
         std::to_string(shape.devices_per_host) + " devices (world size " +
         std::to_string(shape.hosts * shape.devices_per_host) + ")\n";
}

std::string Flag(const std::string& name, int64_t value) {
  return name + " " + std::to_string(value);
}

// Megatron-LM's model flags of a zoo transformer, in the order its examples list them.
std::vector<std::string> MegatronModelFlags(const LaunchModel& m) {
  const models::TransformerShape& t = m.shape;
  std::vector<std::string> flags = {
      Flag("--num-layers", t.layers),           Flag("--hidden-size", t.hidden),
      Flag("--num-attention-heads", t.heads),   Flag("--seq-length", t.seq),
      Flag("--max-position-embeddings", t.seq),
  };
  if (m.family == "llama") {
    flags.push_back(Flag("--ffn-hidden-size", m.ffn));
    if (m.kv_heads != t.heads) {
      flags.push_back("--group-query-attention");
      flags.push_back(Flag("--num-query-groups", m.kv_heads));
    }
    flags.push_back("--swiglu");
    flags.push_back("--normalization RMSNorm");
    flags.push_back("--position-embedding-type rope");
    flags.push_back("--untie-embeddings-and-output-weights");
    flags.push_back("--disable-bias-linear");
  }
  if (t.dtype == DType::kF16) flags.push_back("--fp16");
  if (t.dtype == DType::kBF16) flags.push_back("--bf16");
  return flags;
}

std::string MegatronText(const ManualPlanSpec& spec, const LaunchShape& shape,
                         const ModelSpec* model, const std::optional<LaunchModel>& launch_model) {
  std::string text = PlanLine("Megatron-LM", spec, shape, model);
  std::vector<std::string> notes;
  if (!spec.tensor_inside_host) {
    notes.push_back(
        "the plan puts tensor parallelism across hosts; Megatron-LM gives tensor-parallel ranks "
        "consecutive ranks (inside a host), so this runs the degrees with tensor parallelism "
        "inside a host");
  }
  if (!launch_model && spec.virtual_stages > 1) {
    notes.push_back(
        "interleaved schedule: add --num-layers-per-virtual-pipeline-stage (the "
        "layers / (" +
        std::to_string(spec.pipeline_parallel) + " x " + std::to_string(spec.virtual_stages) +
        "))");
  }
  if (!launch_model) {
    notes.push_back(model == nullptr
                        ? "not a zoo model: add the model's flags and --micro-batch-size / "
                          "--global-batch-size (micro-batch size = global batch / (dp x B))"
                        : "not a gpt, bert or llama model with its embedding: add the model's "
                          "flags to the parallel and batch flags below");
  } else {
    const models::TransformerShape& t = launch_model->shape;
    if (spec.virtual_stages > 1 && t.layers % (spec.pipeline_parallel * spec.virtual_stages) != 0) {
      notes.push_back(
          "--num-layers is not divisible by pipeline size x virtual stages, which Megatron-LM's "
          "--num-layers-per-virtual-pipeline-stage requires (the plan splits the layers by "
          "FLOPs)");
    } else if (t.layers % spec.pipeline_parallel != 0) {
      notes.push_back(
          "--num-layers is not divisible by the pipeline size: Megatron-LM needs "
          "--decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers for an "
          "uneven split (the plan splits the layers by FLOPs)");
    }
    if (t.heads % spec.tensor_parallel != 0) {
      notes.push_back(
          "--num-attention-heads is not divisible by the tensor-parallel size, "
          "which Megatron-LM requires");
    }
    if (t.dtype == DType::kF32) notes.push_back("f32 model: no --fp16 / --bf16");
    notes.push_back("the vocabulary (" + std::to_string(t.vocab) +
                    " tokens in the model) comes from the tokenizer's files");
  }
  if (shape.hosts > 1) {
    notes.push_back("run the command on every host with --node-rank 0.." +
                    std::to_string(shape.hosts - 1) + " --master-addr HOST0 --master-port PORT");
  }
  for (const std::string& note : notes) text += "# note: " + note + "\n";

  const std::string script = !launch_model                    ? "YOUR_TRAINING_SCRIPT.py"
                             : launch_model->family == "bert" ? "pretrain_bert.py"
                                                              : "pretrain_gpt.py";
  std::vector<std::string> flags = {Flag("--tensor-model-parallel-size", spec.tensor_parallel),
                                    Flag("--pipeline-model-parallel-size", spec.pipeline_parallel)};
  if (shape.micro_batch > 0) {
    flags.push_back(Flag("--micro-batch-size", shape.micro_batch));
    flags.push_back(Flag("--global-batch-size", shape.global_batch));
  }
  if (spec.virtual_stages > 1 && launch_model &&
      launch_model->shape.layers % (spec.pipeline_parallel * spec.virtual_stages) == 0) {
    // Megatron-LM's interleaved schedule: each pipeline rank runs virtual_stages model chunks.
    flags.push_back(
        Flag("--num-layers-per-virtual-pipeline-stage",
             launch_model->shape.layers / (spec.pipeline_parallel * spec.virtual_stages)));
  }
  if (spec.zero_stage == 1) flags.push_back("--use-distributed-optimizer");
  if (spec.remat == Recompute::kFull) {
    // Full recompute of every layer: the plan checkpoints each transformer layer's input.
    flags.push_back("--recompute-granularity full");
    flags.push_back("--recompute-method uniform");
    flags.push_back("--recompute-num-layers 1");
  } else if (spec.remat == Recompute::kSelective) {
    // Megatron-LM's selective recomputation reruns the attention core, as the plan does.
    flags.push_back("--recompute-granularity selective");
  }
  if (launch_model) {
    for (std::string& flag : MegatronModelFlags(*launch_model)) flags.push_back(std::move(flag));
  }
  text += "torchrun --nnodes " + std::to_string(shape.hosts) + " --nproc-per-node " +
          std::to_string(shape.devices_per_host) + " " + script;
  for (const std::string& flag : flags) text += " \\\n    " + flag;
  return text + "\n";
}

std::string DeepSpeedText(const ManualPlanSpec& spec, const LaunchShape& shape,
                          const ModelSpec* model, const std::optional<LaunchModel>& launch_model) {
  std::string text = PlanLine("DeepSpeed", spec, shape, model);
  text += "# launch: deepspeed" + std::string(shape.hosts > 1 ? " --hostfile HOSTFILE" : "") +
          " --num_nodes " + std::to_string(shape.hosts) + " --num_gpus " +
          std::to_string(shape.devices_per_host) +
          " YOUR_TRAINING_SCRIPT.py --deepspeed --deepspeed_config ds_config.json (the JSON "
          "below)\n";
  std::vector<std::string> notes;
  if (spec.pipeline_parallel > 1) {
    notes.push_back(std::to_string(spec.pipeline_parallel) +
                    " pipeline stages: DeepSpeed's pipeline engine, "
                    "deepspeed.pipe.PipelineModule(layers=..., num_stages=" +
                    std::to_string(spec.pipeline_parallel) +
                    "); gradient_accumulation_steps is its microbatch count");
  }
  if (spec.tensor_parallel > 1) {
    notes.push_back("tensor parallelism " + std::to_string(spec.tensor_parallel) +
                    ": DeepSpeed has none of its own; run Megatron-DeepSpeed with "
                    "--tensor-model-parallel-size " +
                    std::to_string(spec.tensor_parallel) + " --pipeline-model-parallel-size " +
                    std::to_string(spec.pipeline_parallel) +
                    " --deepspeed --deepspeed_config ds_config.json");
  }
  if (spec.remat == Recompute::kFull) {
    notes.push_back(
        "activation checkpointing: the model wraps each transformer layer in "
        "deepspeed.checkpointing.checkpoint");
  } else if (spec.remat == Recompute::kSelective) {
    notes.push_back(
        "selective recomputation: the model wraps each layer's attention core (scores, softmax, "
        "the product with V) in deepspeed.checkpointing.checkpoint");
  }
  if (shape.micro_batch == 0) {
    notes.push_back(
        "not a zoo model: set train_batch_size and train_micro_batch_size_per_gpu (micro-batch "
        "size = global batch / (dp x B))");
  } else if (!launch_model) {
    notes.push_back("the model itself is the training script's (not a gpt, bert or llama model)");
  }
  for (const std::string& note : notes) text += "# note: " + note + "\n";

  nlohmann::ordered_json config;
  if (shape.micro_batch > 0) {
    config["train_batch_size"] = shape.global_batch;
    config["train_micro_batch_size_per_gpu"] = shape.micro_batch;
  }
  config["gradient_accumulation_steps"] = spec.microbatches;
  config["zero_optimization"] = {{"stage", spec.zero_stage}};
  // The dtype is the zoo spec's (every family has one); a graph file's is the user's to set.
  if (model != nullptr) {
    models::SpecReader reader(*model);
    const DType dtype = reader.Dtype("dtype");
    if (reader.ok() && dtype == DType::kF16) config["fp16"] = {{"enabled", true}};
    if (reader.ok() && dtype == DType::kBF16) config["bf16"] = {{"enabled", true}};
  }
  if (spec.remat != Recompute::kNone) {
    config["activation_checkpointing"] = {{"partition_activations", false},
                                          {"contiguous_memory_optimization", false},
                                          {"cpu_checkpointing", false}};
  }
  return text + config.dump(2) + "\n";
}

}  // namespace

Result<std::string> LaunchConfig(LaunchFramework framework, const ManualPlanSpec& spec,
                                 const Cluster& cluster, const ModelSpec* model) {
  Result<LaunchShape> shape = CheckPlan(spec, cluster, model);
  if (!shape.ok()) return shape.status();
  Result<std::optional<LaunchModel>> launch_model = ReadLaunchModel(model);
  if (!launch_model.ok()) return launch_model.status();
  if (framework == LaunchFramework::kMegatron) {
    if (spec.zero_stage >= 2) {
      return Invalid("zero_stage " + std::to_string(spec.zero_stage) +
                     ": Megatron-LM has no ZeRO-" + std::to_string(spec.zero_stage) +
                     " (its distributed optimizer is ZeRO-1); launch it with DeepSpeed, whose "
                     "zero_optimization stage " +
                     std::to_string(spec.zero_stage) +
                     (spec.zero_stage == 2 ? " shards the gradients" : " shards the weights"));
    }
    return MegatronText(spec, shape.value(), model, launch_model.value());
  }
  if (spec.virtual_stages > 1) {
    return Invalid("virtual_stages " + std::to_string(spec.virtual_stages) +
                   ": DeepSpeed's pipeline engine has no interleaved schedule; launch it with "
                   "Megatron-LM (--num-layers-per-virtual-pipeline-stage)");
  }
  return DeepSpeedText(spec, shape.value(), model, launch_model.value());
}

}  // namespace alpa
