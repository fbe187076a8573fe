// alpa: command-line front end of libalpa.
//   alpa                                   the main job: alpa plan on its embedded default
//   alpa solve FILE [TIMEOUT] [--json]     solve a sharding problem (IOPDDL or Alpa JSON)
//   alpa evaluate FILE "[0, 0, 2, 1, 0]"   cost of an assignment, or the violated constraint
//   alpa graph --model SPEC | --file F     graph statistics [--json] or the graph JSON [-o F]
//   alpa models [--json]                   model-zoo presets and family keys
//   alpa shard --model SPEC --mesh 2x4     auto-shard a graph on one logical mesh
//   alpa plan [--model SPEC] [--cluster P:N] pipeline stages + sharding (Alpa's two levels)
//   alpa baseline [--model SPEC] [--cluster P:N] [--dp N --tp N --pp N -B N]
//                                          the Megatron-LM baseline: the grid search over manual
//                                          dp x tp x pp plans, or one manual plan
//   alpa simulate PLAN.json [--svg F]      one simulated iteration of a plan vs the prediction
#include <CLI/CLI.hpp>

#include <cstdio>

#include "alpa.h"
#include "commands.h"

namespace {

// The graph a subcommand works on: --model SPEC or --file graph.json, not both.
void AddGraphSource(CLI::App* command, std::string* model, std::string* file) {
  CLI::Option* from_model =
      command->add_option("--model", *model, "Model spec, e.g. gpt-350m or mlp:layers=2");
  CLI::Option* from_file = command->add_option("--file", *file, "Graph JSON file");
  from_model->excludes(from_file);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"alpa: automatic parallelization planner (libalpa " +
               std::string(alpa_version_string()) + ")"};
  app.set_version_flag("--version", std::string(alpa_version_string()));
  app.require_subcommand(0, 1);

  alpa_cli::SolveArgs solve_args;
  CLI::App* solve = app.add_subcommand("solve", "Solve a sharding problem (IOPDDL or Alpa JSON)");
  solve->add_option("file", solve_args.file, "Problem file (.json or .json.gz)")->required();
  solve
      ->add_option("timeout", solve_args.timeout_seconds,
                   "Wall-clock limit in seconds for the whole run (default: none)")
      ->check(CLI::NonNegativeNumber);
  solve->add_flag("--json", solve_args.json, "Print the result as one JSON object (last line)");
  solve->add_flag("--deterministic", solve_args.deterministic, "Identical answers run to run");
  solve->add_option("--threads", solve_args.threads, "Threads (0: all)")
      ->check(CLI::Range(0, 4096));
  solve->add_option("--gap", solve_args.relative_gap, "Stop within this relative gap")
      ->check(CLI::Range(0.0, 0.999999));
  solve->add_flag("-q,--quiet", solve_args.quiet, "No progress lines");

  std::string eval_file, eval_assignment;
  CLI::App* evaluate =
      app.add_subcommand("evaluate", "Print the cost of an assignment or the violated constraint");
  evaluate->add_option("file", eval_file, "Problem file")->required();
  evaluate->add_option("assignment", eval_assignment, "Strategies, e.g. \"[0, 0, 2, 1, 0]\"")
      ->required();

  alpa_cli::GraphArgs graph_args;
  CLI::App* graph = app.add_subcommand(
      "graph", "Statistics of a training-step graph (a model spec or a graph JSON file)");
  AddGraphSource(graph, &graph_args.model, &graph_args.file);
  graph->add_flag("--json", graph_args.json, "Print the statistics as one JSON object");
  graph->add_option("-o,--output", graph_args.output,
                    "Write the graph JSON to this file instead (- for stdout)");

  bool models_json = false;
  CLI::App* models = app.add_subcommand("models", "List the model-zoo presets and family keys");
  models->add_flag("--json", models_json, "Print alpa_model_zoo_to_json's object");

  alpa_cli::ShardArgs shard_args;
  CLI::App* shard = app.add_subcommand(
      "shard", "Auto-shard a training-step graph on one logical mesh (Alpa's intra-op pass)");
  AddGraphSource(shard, &shard_args.model, &shard_args.file);
  // Required, but checked by RunShard so that its absence exits 1 like other bad input.
  shard->add_option("--mesh", shard_args.mesh, "Logical mesh shape: 8 or 2x4 (required)");
  shard->add_option("--cluster", shard_args.cluster,
                    "Cluster preset (p3.16xlarge, dgx-a100, ...; :hosts=N) or cluster JSON file "
                    "(default p3.16xlarge with enough hosts)");
  shard->add_option("--alpha", shard_args.alpha,
                    "Abstract mesh: latency per mesh dim, e.g. 1,1 (implies --cost-model alpa)");
  shard->add_option("--beta", shard_args.beta,
                    "Abstract mesh: inverse bandwidth per mesh dim, e.g. 1,0.1");
  shard->add_option("--cost-model", shard_args.cost_model,
                    "alpa (abstract units, Alpa's tie-breakers) or real (seconds; default)");
  shard
      ->add_option("--zero", shard_args.zero,
                   "ZeRO: off, search (the solver may shard optimizer state and updates; the "
                   "default of a bare --zero) or force")
      ->expected(0, 1)
      ->default_str("search");
  shard->add_flag("--force-dp", shard_args.force_dp,
                  "Force data parallelism: weights replicated, batch split over the mesh");
  shard->add_option("--batch-mesh-dim", shard_args.batch_mesh_dim,
                    "Split inputs' batch dim over this mesh dim (all: every mesh dim)");
  shard->add_flag("--no-all-gather", shard_args.no_all_gather, "Resharding without all-gathers");
  shard->add_flag("--no-all-to-all", shard_args.no_all_to_all, "Resharding without all-to-alls");
  shard->add_option("--memory-budget", shard_args.memory_budget,
                    "Bytes per device: 16e9, 16GB, 16GiB (default: none)");
  shard
      ->add_option("--time-limit", shard_args.time_limit_seconds,
                   "Solver time limit in seconds (default: none)")
      ->check(CLI::NonNegativeNumber);
  shard->add_option("--threads", shard_args.threads, "Threads (0: all)")
      ->check(CLI::Range(0, 4096));
  shard->add_flag("--json", shard_args.json, "Print the plan as one JSON object (last line)");
  shard->add_flag("-q,--quiet", shard_args.quiet, "No progress lines");

  alpa_cli::PlanArgs plan_args;
  CLI::App* plan = app.add_subcommand(
      "plan", "Plan pipeline stages and their sharding on a cluster (the default job)");
  plan->add_option("--model", plan_args.model, "Model-zoo spec or preset (default gpt-2.6b)");
  plan->add_option("--file", plan_args.file, "Graph JSON file (one microbatch)")
      ->excludes(plan->get_option("--model"));
  plan->add_option("--cluster", plan_args.cluster,
                   "PRESET:HOSTS, a preset spec (p3.16xlarge:hosts=8) or a cluster JSON file "
                   "(default p3.16xlarge:2)");
  CLI::Option* microbatches =
      plan->add_option("--microbatches,-B", plan_args.microbatches,
                       "Microbatches (default: searched over powers of two)");
  plan->add_option("--layers", plan_args.layers, "Layer groups (default: the graph's, <= 16)")
      ->check(CLI::Range(0, 1 << 20));
  plan->add_option("--remat", plan_args.remat, "Rematerialization: search (default), off, on");
  plan->add_option("--device-memory", plan_args.planner.device_memory,
                   "Device memory to fit (e.g. 16GiB; default: the cluster's)");
  plan->add_flag("--exact", plan_args.planner.exact,
                 "Prove every intra-op solve with GLPK (default: local search alone)");
  plan->add_option("--intra-op-time-limit", plan_args.planner.intra_op_time_limit,
                   "Seconds per intra-op solve with --exact (default 0.5)")
      ->check(CLI::NonNegativeNumber);
  plan->add_option("--threads", plan_args.planner.threads, "Threads (0: all)")
      ->check(CLI::Range(0, 4096));
  plan->add_option("-o,--output", plan_args.output, "Write the detailed plan JSON to this file");
  plan->add_option("--svg", plan_args.svg,
                   "Write the timeline of the plan's simulated iteration (SVG) to this file");
  plan->add_flag("--json", plan_args.json, "Print the plan summary as one JSON object (last line)");
  plan->add_flag("-q,--quiet", plan_args.quiet, "No progress lines");

  alpa_cli::BaselineArgs baseline_args;
  CLI::App* baseline = app.add_subcommand(
      "baseline",
      "The Megatron-LM baseline: search manual data x tensor x pipeline parallel plans (or "
      "evaluate one with --dp/--tp/--pp) with the planner's cost model");
  baseline->add_option("--model", baseline_args.model,
                       "Model-zoo spec or preset (default gpt-2.6b)");
  baseline->add_option("--cluster", baseline_args.cluster,
                       "PRESET:HOSTS, a preset spec (p3.16xlarge:hosts=8) or a cluster JSON file "
                       "(default p3.16xlarge:2)");
  CLI::Option* baseline_dp = baseline->add_option(
      "--dp", baseline_args.dp, "Manual plan: data-parallel degree (with --tp, --pp and -B)");
  CLI::Option* baseline_tp =
      baseline->add_option("--tp", baseline_args.tp, "Manual plan: tensor-parallel degree");
  CLI::Option* baseline_pp =
      baseline->add_option("--pp", baseline_args.pp, "Manual plan: pipeline stages");
  CLI::Option* baseline_b = baseline->add_option(
      "--microbatches,-B", baseline_args.microbatches,
      "Microbatches (required for a manual plan; default for the search: powers of two)");
  CLI::Option* baseline_zero = baseline->add_option("--zero", baseline_args.zero,
                                                    "Manual plan: ZeRO stage 0 (default), 1 or 2");
  baseline->add_option("--remat", baseline_args.remat,
                       "Rematerialization on or off (manual plan: default off; search: both)");
  baseline->add_flag("--tp-across-hosts", baseline_args.tp_across_hosts,
                     "Manual plan: tensor parallelism across hosts, data parallelism inside");
  baseline->add_option("--device-memory", baseline_args.planner.device_memory,
                       "Device memory to fit (e.g. 16GiB; default: the cluster's)");
  baseline->add_flag("--exact", baseline_args.planner.exact,
                     "Prove every intra-op solve with GLPK (default: local search alone)");
  baseline
      ->add_option("--intra-op-time-limit", baseline_args.planner.intra_op_time_limit,
                   "Seconds per intra-op solve with --exact (default 0.5)")
      ->check(CLI::NonNegativeNumber);
  baseline->add_option("--threads", baseline_args.planner.threads, "Threads (0: all)")
      ->check(CLI::Range(0, 4096));
  baseline->add_option("--top", baseline_args.top, "Grid points listed after a search (default 5)")
      ->check(CLI::NonNegativeNumber);
  baseline->add_option("-o,--output", baseline_args.output,
                       "Write the detailed plan JSON to this file");
  baseline->add_option("--svg", baseline_args.svg,
                       "Write the timeline of the plan's simulated iteration (SVG) to this file");
  baseline->add_flag("--json", baseline_args.json,
                     "Print the plan summary (with its \"baseline\" object) as one JSON object "
                     "(last line)");
  baseline->add_flag("-q,--quiet", baseline_args.quiet, "No progress lines");

  alpa_cli::SimulateArgs simulate_args;
  CLI::App* simulate = app.add_subcommand(
      "simulate", "Simulate one training iteration of a plan and compare it with the prediction");
  simulate->add_option("plan", simulate_args.file, "Plan JSON file (alpa plan -o or --json)")
      ->required();
  simulate->add_option("--schedule", simulate_args.schedule,
                       "Pipeline schedule: 1f1b (default, the planner's) or gpipe");
  simulate->add_option("--svg", simulate_args.svg, "Write the timeline (SVG) to this file");
  simulate->add_option("--width", simulate_args.width,
                       "SVG width in pixels (default 1600; 200..20000)");
  simulate->add_flag("--json", simulate_args.json,
                     "Print the simulation as one JSON object (last line)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version exit 0; every usage error exits 1, like other bad input.
    return app.exit(e) == 0 ? 0 : 1;
  }

  if (*solve) return alpa_cli::RunSolve(solve_args);
  if (*evaluate) return alpa_cli::RunEvaluate(eval_file, eval_assignment);
  if (*graph) return alpa_cli::RunGraph(graph_args);
  if (*models) return alpa_cli::RunModels(models_json);
  if (*shard) return alpa_cli::RunShard(shard_args);
  if (*simulate) return alpa_cli::RunSimulate(simulate_args);
  if (*baseline) {
    baseline_args.dp_given = baseline_dp->count() > 0;
    baseline_args.tp_given = baseline_tp->count() > 0;
    baseline_args.pp_given = baseline_pp->count() > 0;
    baseline_args.microbatches_given = baseline_b->count() > 0;
    baseline_args.zero_given = baseline_zero->count() > 0;
    return alpa_cli::RunBaseline(baseline_args);
  }
  plan_args.microbatches_given = microbatches->count() > 0;
  // `alpa plan` with its embedded default (gpt-2.6b on two p3.16xlarge hosts) is the main job;
  // `alpa` alone runs it too.
  return alpa_cli::RunPlan(plan_args);
}
