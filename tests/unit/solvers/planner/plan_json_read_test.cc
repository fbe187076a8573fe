// The executable plan JSON read back (plan_json_read.h): the same bytes when written again, the
// same device programs when lowered, and a message naming the element for every corruption.
#include "solvers/planner/plan_json_read.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "exec/lower/lower_plan.h"
#include "exec/program/program.h"
#include "models/planner_model.h"
#include "solvers/planner/manual_plan.h"
#include "solvers/planner/plan_json.h"

namespace alpa {
namespace {

using nlohmann::json;

const char* kMlp = "mlp:layers=4,hidden=16,batch=16,dtype=f32";
const char* kGpt = "gpt:layers=2,hidden=16,heads=2,seq=8,vocab=16,batch=8,dtype=f32";
const char* kMoe =
    "moe:layers=2,hidden=16,heads=2,experts=4,seq=8,vocab=16,batch=8,group=8,dtype=f32";
const char* kWres =
    "wresnet:stages=1-1,channels=4,width=2,classes=10,image=16,batch=8,optimizer=momentum";
const char* kCluster = "p3.16xlarge:devices_per_host=4";

struct PlanCase {
  PipelinePlan plan;
  Cluster cluster;
};

ManualPlanSpec TwoStages(int64_t dp, int64_t tp, int32_t zero, Recompute remat) {
  ManualPlanSpec s;
  s.data_parallel = dp;
  s.tensor_parallel = tp;
  s.pipeline_parallel = 2;
  s.microbatches = 2;
  s.zero_stage = zero;
  s.remat = remat;
  return s;
}

PlanCase Manual(const std::string& model_spec, const ManualPlanSpec& spec) {
  Result<PlannerModel> model = PlannerModelFromSpec(model_spec);
  EXPECT_TRUE(model.ok()) << model.status().message();
  Result<Cluster> cluster = ParseClusterSpec(kCluster);
  EXPECT_TRUE(cluster.ok()) << cluster.status().message();
  Result<PipelinePlan> plan = EvaluateManualPlan(model.value(), cluster.value(), spec);
  EXPECT_TRUE(plan.ok()) << model_spec << ": " << plan.status().message();
  return {std::move(plan).value(), cluster.value()};
}

PlanCase Planned(const std::string& model_spec) {
  Result<PlannerModel> model = PlannerModelFromSpec(model_spec);
  EXPECT_TRUE(model.ok()) << model.status().message();
  Result<Cluster> cluster = ParseClusterSpec(kCluster);
  EXPECT_TRUE(cluster.ok()) << cluster.status().message();
  PlannerOptions options;
  options.microbatches = 2;
  options.threads = 1;
  Result<PipelinePlan> plan = PlanPipeline(model.value(), cluster.value(), options);
  EXPECT_TRUE(plan.ok()) << model_spec << ": " << plan.status().message();
  return {std::move(plan).value(), cluster.value()};
}

std::string Write(const PipelinePlan& plan, const Cluster& cluster, const std::string& model) {
  Result<std::string> text = PipelinePlanJson(plan, cluster, model, kPlanJsonExecutable);
  EXPECT_TRUE(text.ok()) << text.status().message();
  return text.ok() ? text.value() : std::string();
}

std::vector<std::string> Programs(const PipelinePlan& plan) {
  Result<ProgramSet> set = LowerPlan(plan);
  EXPECT_TRUE(set.ok()) << set.status().message();
  std::vector<std::string> texts;
  if (!set.ok()) return texts;
  for (const DeviceProgram& p : set.value().programs) texts.push_back(ProgramText(p));
  return texts;
}

// Written, read, written again: the same bytes; lowered before and after: the same programs.
void ExpectRoundTrip(const PlanCase& c, const std::string& model) {
  SCOPED_TRACE(model);
  EXPECT_GE(c.plan.stages.size(), 2u);  // transfers and moves to read back
  EXPECT_FALSE(c.plan.transfers.empty());
  const std::string text = Write(c.plan, c.cluster, model);
  ASSERT_FALSE(text.empty());
  Cluster cluster;
  std::string model_read;
  Result<PipelinePlan> read = ReadPipelinePlanJson(text, &cluster, &model_read);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(model_read, model);
  EXPECT_EQ(cluster.num_devices(), c.cluster.num_devices());
  EXPECT_EQ(read.value().graph, c.plan.graph);
  EXPECT_EQ(Write(read.value(), cluster, model), text);
  // The lower detail levels are the same too (the simulator and --json read those).
  for (int32_t detail : {kPlanJsonSummary, kPlanJsonDetailed}) {
    EXPECT_EQ(PipelinePlanJson(read.value(), cluster, model, detail).value(),
              PipelinePlanJson(c.plan, c.cluster, model, detail).value());
  }
  const std::vector<std::string> before = Programs(c.plan);
  const std::vector<std::string> after = Programs(read.value());
  ASSERT_EQ(before.size(), after.size());
  ASSERT_FALSE(before.empty());
  for (size_t d = 0; d < before.size(); ++d) EXPECT_EQ(before[d], after[d]) << "device " << d;
}

TEST(PlanJsonReadTest, ManualPlansRoundTrip) {
  ExpectRoundTrip(Manual(kMlp, TwoStages(2, 1, 0, Recompute::kNone)), kMlp);
  ExpectRoundTrip(Manual(kMlp, TwoStages(1, 2, 1, Recompute::kFull)), kMlp);
  ExpectRoundTrip(Manual(kGpt, TwoStages(1, 2, 0, Recompute::kNone)), kGpt);
  ExpectRoundTrip(Manual(kGpt, TwoStages(2, 1, 1, Recompute::kFull)), kGpt);
  ExpectRoundTrip(Manual(kGpt, TwoStages(1, 2, 0, Recompute::kSelective)), kGpt);
  ExpectRoundTrip(Manual(kMoe, TwoStages(1, 2, 0, Recompute::kNone)), kMoe);
  ExpectRoundTrip(Manual(kWres, TwoStages(2, 1, 0, Recompute::kNone)), kWres);
}

TEST(PlanJsonReadTest, PlannerPlansRoundTrip) {
  for (const char* model : {kMlp, kGpt, kMoe, kWres}) ExpectRoundTrip(Planned(model), model);
}

// A plan priced for the CUDA runner (single_reader_fusion, fuse_attention): its ops kept on chip
// (OpSharding::on_chip, no memory) are written and read back, so the bytes are the same, and so
// is the memory each stage states (in the detailed JSON).
TEST(PlanJsonReadTest, OnChipOpsRoundTrip) {
  const std::string model = "gpt:layers=2,hidden=16,heads=4,seq=8,vocab=16,batch=8,dtype=f32";
  Result<PlannerModel> m = PlannerModelFromSpec(model);
  ASSERT_TRUE(m.ok()) << m.status().message();
  Result<Cluster> cluster = ParseClusterSpec(kCluster);
  ASSERT_TRUE(cluster.ok()) << cluster.status().message();
  cluster.value().calibration.single_reader_fusion = true;
  cluster.value().calibration.fuse_attention = true;
  Result<PipelinePlan> plan =
      EvaluateManualPlan(m.value(), cluster.value(), TwoStages(1, 2, 0, Recompute::kNone));
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  const std::string text = Write(plan.value(), cluster.value(), model);
  EXPECT_NE(text.find("\"on_chip\""), std::string::npos);
  ExpectRoundTrip({std::move(plan).value(), cluster.value()}, model);
}

// A plan whose transfers across two hosts take a local all-gather (landing_spec).
PlanCase LocalAllGatherPlan(const std::string& model_spec) {
  Result<PlannerModel> model = PlannerModelFromSpec(model_spec);
  EXPECT_TRUE(model.ok()) << model.status().message();
  Result<Cluster> cluster = ParseClusterSpec("p3.16xlarge:hosts=2,devices_per_host=4");
  EXPECT_TRUE(cluster.ok()) << cluster.status().message();
  ManualPlanSpec spec = TwoStages(2, 2, 0, Recompute::kNone);
  Result<PipelinePlan> plan = EvaluateManualPlan(model.value(), cluster.value(), spec);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return {std::move(plan).value(), cluster.value()};
}

const char* kWideGpt = "gpt:layers=2,hidden=64,heads=2,seq=16,vocab=64,batch=8,dtype=f32";

TEST(PlanJsonReadTest, LocalAllGathersRoundTrip) {
  const PlanCase c = LocalAllGatherPlan(kWideGpt);
  int64_t landings = 0;
  for (const CrossStageTransfer& t : c.plan.transfers) landings += t.landing_spec ? 1 : 0;
  ASSERT_GT(landings, 0);
  ExpectRoundTrip(c, kWideGpt);
}

// A corrupted plan: the status code and a message that names `element`.
void ExpectRejected(const std::string& text, StatusCode code, const std::string& element) {
  Result<PipelinePlan> read = ReadPipelinePlanJson(text, nullptr);
  ASSERT_FALSE(read.ok()) << "accepted a plan with a bad " << element;
  EXPECT_EQ(read.status().code(), code) << read.status().message();
  EXPECT_NE(read.status().message().find(element), std::string::npos)
      << "message does not name " << element << ": " << read.status().message();
}

class CorruptPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // Data parallel: every stage synchronises its gradients (collectives to corrupt).
    const PlanCase c = Manual(kGpt, TwoStages(2, 1, 0, Recompute::kNone));
    text_ = Write(c.plan, c.cluster, kGpt);
    ASSERT_FALSE(text_.empty());
    plan_ = json::parse(text_);
  }
  json& FirstOp() { return plan_["stages"][0]["pieces"][0]["executable"]["sharding"]["ops"]; }
  std::string text_;
  json plan_;
};

TEST_F(CorruptPlanTest, Truncations) {
  for (size_t cut : {size_t{0}, size_t{1}, text_.size() / 3, text_.size() / 2, text_.size() - 1}) {
    Result<PipelinePlan> read = ReadPipelinePlanJson(text_.substr(0, cut), nullptr);
    ASSERT_FALSE(read.ok()) << "accepted the first " << cut << " bytes";
    EXPECT_EQ(read.status().code(), StatusCode::kParse);
    EXPECT_EQ(read.status().message().rfind("plan JSON", 0), 0u) << read.status().message();
  }
}

TEST_F(CorruptPlanTest, WrongSpec) {
  json& ops = FirstOp();
  size_t target = ops.size();
  for (size_t l = 0; l < ops.size(); ++l) {
    if (!ops[l]["free"].get<bool>() && !ops[l]["fused"].get<bool>()) target = l;
  }
  ASSERT_LT(target, ops.size());
  const std::string element =
      "stages[0].pieces[0].executable.sharding.ops[" + std::to_string(target) + "].spec";
  ops[target]["spec"] = "R R R R R";  // the wrong rank for any tensor of the model
  ExpectRejected(plan_.dump(), StatusCode::kInvalidArgument, element);
  ops[target]["spec"] = "S7";  // no mesh dim 7 on the stage's 2-dim mesh
  ExpectRejected(plan_.dump(), StatusCode::kInvalidArgument, element);
  ops[target]["spec"] = "S0 S0";  // not a spec at all: mesh dim 0 twice
  ExpectRejected(plan_.dump(), StatusCode::kParse, element);
}

TEST_F(CorruptPlanTest, OpIdOutOfRange) {
  json& schedule = plan_["stages"][0]["pieces"][0]["executable"]["sharding"]["schedule"];
  schedule[0] = 1000000;
  ExpectRejected(plan_.dump(), StatusCode::kInvalidArgument, "sharding.schedule[0]");
  plan_ = json::parse(text_);

  // The first piece with a collective (the embedding's piece may have none).
  std::string piece;
  json* collectives = nullptr;
  for (size_t s = 0; s < plan_["stages"].size() && collectives == nullptr; ++s) {
    json& pieces = plan_["stages"][s]["pieces"];
    for (size_t p = 0; p < pieces.size() && collectives == nullptr; ++p) {
      json& list = pieces[p]["executable"]["sharding"]["collectives"];
      if (list.empty()) continue;
      collectives = &list;
      piece = "stages[" + std::to_string(s) + "].pieces[" + std::to_string(p) + "]";
    }
  }
  ASSERT_NE(collectives, nullptr);
  (*collectives)[0]["consumer"] = 1000000;
  ExpectRejected(plan_.dump(), StatusCode::kInvalidArgument,
                 piece + ".executable.sharding.collectives[0].consumer");
  (*collectives)[0]["consumer"] = -1;
  (*collectives)[0]["tensor"] = -1;
  ExpectRejected(plan_.dump(), StatusCode::kInvalidArgument,
                 piece + ".executable.sharding.collectives[0].tensor");
  plan_ = json::parse(text_);

  plan_["transfers"][0]["tensor"] = -5;
  ExpectRejected(plan_.dump(), StatusCode::kInvalidArgument, "transfers[0].tensor");
  plan_ = json::parse(text_);
  plan_["stages"][1]["pieces"][0]["executable"]["origin"][0] = 3;
  ExpectRejected(plan_.dump(), StatusCode::kInvalidArgument,
                 "stages[1].pieces[0].executable.origin");
}

TEST_F(CorruptPlanTest, DeviceListedTwice) {
  plan_["stages"][1]["devices"][1] = plan_["stages"][0]["devices"][0];
  ExpectRejected(plan_.dump(), StatusCode::kInvalidArgument, "stages[1].devices[1]");
  plan_ = json::parse(text_);
  plan_["stages"][0]["devices"].push_back(7);
  ExpectRejected(plan_.dump(), StatusCode::kInvalidArgument, "stages[0].logical_mesh");
}

TEST_F(CorruptPlanTest, PieceOpCount) {
  FirstOp().erase(0);
  ExpectRejected(plan_.dump(), StatusCode::kInvalidArgument,
                 "stages[0].pieces[0].executable.sharding.ops");
  plan_ = json::parse(text_);
  plan_["stages"][0]["pieces"][0]["ops"] = 3;
  ExpectRejected(plan_.dump(), StatusCode::kInvalidArgument, "stages[0].pieces[0].ops");
}

TEST_F(CorruptPlanTest, FormatAndVersion) {
  plan_["version"] = 2;
  ExpectRejected(plan_.dump(), StatusCode::kParse, "version");
  plan_ = json::parse(text_);
  plan_["format"] = "alpa-graph";
  ExpectRejected(plan_.dump(), StatusCode::kParse, "format");
  const PlanCase c = Manual(kGpt, TwoStages(1, 2, 0, Recompute::kNone));
  ExpectRejected(PipelinePlanJson(c.plan, c.cluster, kGpt, kPlanJsonDetailed).value(),
                 StatusCode::kParse, "graph");
}

TEST(CorruptLandingTest, LandingSpecMustExtendTheDestinationSpec) {
  const PlanCase c = LocalAllGatherPlan(kWideGpt);
  json plan = json::parse(Write(c.plan, c.cluster, kWideGpt));
  size_t k = 0;
  while (k < plan["transfers"].size() && !plan["transfers"][k].contains("landing_spec")) ++k;
  ASSERT_LT(k, plan["transfers"].size());
  const std::string element = "transfers[" + std::to_string(k) + "].landing_spec";
  plan["transfers"][k]["landing_spec"] = plan["transfers"][k]["to_spec"];  // nothing to gather
  ExpectRejected(plan.dump(), StatusCode::kInvalidArgument, element);
  plan["transfers"][k]["landing_spec"] = "S7 R R";  // no mesh dim 7
  ExpectRejected(plan.dump(), StatusCode::kInvalidArgument, element);
  plan["transfers"][k]["landing_spec"] = "R R R R R";  // the wrong rank
  ExpectRejected(plan.dump(), StatusCode::kInvalidArgument, element);
}

}  // namespace
}  // namespace alpa
