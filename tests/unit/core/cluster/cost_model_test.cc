// Collective costs against hand-computed values, the roofline in both regimes, calibration
// files, and tensor memory.
#include "core/cluster/cost_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>

namespace alpa {
namespace {

constexpr double kTol = 1e-12;

TEST(CollectiveCost, HandComputedRealUnits) {
  const double a = 5e-6, b = 1e-9, bytes = 1e6;
  const auto real = CostMode::kRealUnits;
  // all-reduce of 1 MB over 4 devices: alpha + 2 * 3/4 * 1e6 * 1e-9 = alpha + 1.5e-3.
  EXPECT_NEAR(CollectiveCost(CollectiveKind::kAllReduce, 4, a, b, bytes, real), a + 1.5e-3, kTol);
  EXPECT_NEAR(CollectiveCost(CollectiveKind::kAllGather, 4, a, b, bytes, real), a + 0.75e-3, kTol);
  EXPECT_NEAR(CollectiveCost(CollectiveKind::kReduceScatter, 4, a, b, bytes, real), a + 0.75e-3,
              kTol);
  // all-to-all: 3/16 * 1e6 * (4/2) * 1e-9 = 0.375e-3.
  EXPECT_NEAR(CollectiveCost(CollectiveKind::kAllToAll, 4, a, b, bytes, real), a + 0.375e-3, kTol);
  EXPECT_NEAR(CollectiveCost(CollectiveKind::kSendRecv, 2, a, b, bytes, real), a + 1e-3, kTol);
  // 8 devices: all-reduce 2 * 7/8 = 1.75.
  EXPECT_NEAR(CollectiveCost(CollectiveKind::kAllReduce, 8, 0, 1, 8, real), 14.0, kTol);
}

TEST(CollectiveCost, AlpaTieBreakers) {
  const auto alpa = CostMode::kAlpaCompatible;
  // alpha = beta = 1, n = 2, b = 100: the Alpa numbers.
  EXPECT_DOUBLE_EQ(CollectiveCost(CollectiveKind::kAllGather, 2, 1, 1, 100, alpa), 51.1);
  EXPECT_DOUBLE_EQ(CollectiveCost(CollectiveKind::kAllReduce, 2, 1, 1, 100, alpa), 101.01);
  EXPECT_DOUBLE_EQ(CollectiveCost(CollectiveKind::kReduceScatter, 2, 1, 1, 100, alpa), 51.001);
  // all-to-all: 1/4 * 100 * 1 = 25.
  EXPECT_DOUBLE_EQ(CollectiveCost(CollectiveKind::kAllToAll, 2, 1, 1, 100, alpa), 26.001);
  EXPECT_DOUBLE_EQ(CollectiveCost(CollectiveKind::kSendRecv, 2, 1, 1, 100, alpa), 101.0);
  // The tie-breakers make all-gather the dearest and reduce-scatter cheaper than all-gather at
  // equal bytes, as in Alpa.
  EXPECT_LT(CollectiveCost(CollectiveKind::kReduceScatter, 4, 1, 1, 8, alpa),
            CollectiveCost(CollectiveKind::kAllGather, 4, 1, 1, 8, alpa));
}

TEST(CollectiveCost, OneDeviceOrNoBytesIsFree) {
  for (int32_t k = 0; k <= static_cast<int32_t>(CollectiveKind::kSendRecv); ++k) {
    const auto kind = static_cast<CollectiveKind>(k);
    for (CostMode mode : {CostMode::kAlpaCompatible, CostMode::kRealUnits}) {
      EXPECT_EQ(CollectiveCost(kind, 1, 1, 1, 1e6, mode), 0.0) << CollectiveName(kind);
      EXPECT_EQ(CollectiveCost(kind, 4, 1, 1, 0, mode), 0.0) << CollectiveName(kind);
      EXPECT_EQ(CollectiveCost(kind, 4, 1, 1, std::nan(""), mode), 0.0);
    }
  }
}

TEST(CollectiveCost, OnMeshDimensions) {
  // Alpa's 2 x 2 mesh with beta = (1, 0.1): the same all-reduce is 10x cheaper on dim 1.
  const LogicalMesh mesh = AbstractLogicalMesh({2, 2}).value();
  const auto alpa = CostMode::kAlpaCompatible;
  EXPECT_DOUBLE_EQ(MeshCollectiveCost(mesh, CollectiveKind::kAllReduce, 0, 1000, alpa).value(),
                   1 + 1000 + 0.01);
  EXPECT_DOUBLE_EQ(MeshCollectiveCost(mesh, CollectiveKind::kAllReduce, 1, 1000, alpa).value(),
                   1 + 100 + 0.01);
  // Flattened: n = 4, slowest alpha and beta (Alpa's rule): 1 + 1 * 1.5 * 1000 + 0.01.
  EXPECT_DOUBLE_EQ(
      MeshCollectiveCost(mesh, CollectiveKind::kAllReduce, kFlattenedMeshDim, 1000, alpa).value(),
      1501.01);
  Result<double> bad = MeshCollectiveCost(mesh, CollectiveKind::kAllGather, 2, 1000, alpa);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(
      bad.status().message().find("mesh dimension 2 does not exist in a mesh of shape (2, 2)"),
      std::string::npos);

  const CollectiveCostModel model(mesh, CostMode::kRealUnits);
  EXPECT_DOUBLE_EQ(model.AllGather(1, 1000), 1 + 0.1 * 500);
  EXPECT_DOUBLE_EQ(model.ReduceScatter(0, 1000), 1 + 500);
  EXPECT_DOUBLE_EQ(model.AllToAll(0, 1000), 1 + 250);
  EXPECT_DOUBLE_EQ(model.SendRecv(1, 1000), 1 + 100);
  EXPECT_TRUE(std::isinf(model.AllReduce(-2, 1000)));
}

TEST(CollectiveCost, DerivedMeshSeconds) {
  // Gradient all-reduce of 1 GB across 2 p3 hosts on the data-parallel dim of (2, 8): 8 rings
  // share 3.125 GB/s, so each moves 2 * 1/2 * 1e9 bytes at 390.6 MB/s: 2.56 s + 20 us.
  const Cluster c = ParseClusterSpec("p3.16xlarge:hosts=2").value();
  const LogicalMesh mesh = DeriveLogicalMesh(c, {2, 8}, {2, 8}).value();
  const double seconds =
      MeshCollectiveCost(mesh, CollectiveKind::kAllReduce, 0, 1e9, CostMode::kRealUnits).value();
  EXPECT_NEAR(seconds, 20e-6 + 1e9 * 8 / 3.125e9, 1e-12);
  // The same inside a host over NVLink: 2 * 7/8 * 1e9 / 150e9 + 5 us.
  const double intra =
      MeshCollectiveCost(mesh, CollectiveKind::kAllReduce, 1, 1e9, CostMode::kRealUnits).value();
  EXPECT_NEAR(intra, 5e-6 + 1.75e9 / 150e9, 1e-12);
  EXPECT_NEAR(SendRecvSeconds(c.inter_host_link, 3.125e9), 1.0 + 20e-6, 1e-12);
}

// ---- Roofline --------------------------------------------------------------------------------

TEST(Roofline, ComputeBoundAndMemoryBound) {
  const Cluster c = ParseClusterSpec("p3.16xlarge").value();
  const Calibration cal;  // matmul 0.6, memory 0.8
  // A 4096^3 f16 matmul: 2 * 4096^3 FLOPs over 125e12 * 0.6; bytes 3 * 4096^2 * 2.
  const double flops = 2.0 * 4096 * 4096 * 4096;
  const double bytes = 3.0 * 4096 * 4096 * 2;
  const double t =
      OpComputeSeconds(flops, bytes, DType::kF16, ComputeClass::kMatmul, c.device, cal);
  EXPECT_NEAR(t, flops / (125e12 * 0.6), 1e-15);
  EXPECT_GT(t, bytes / (900e9 * 0.8));  // really compute-bound
  // A 64M-element f16 add: 3 * 128 MB moved over 900e9 * 0.8; 64M FLOPs are nothing.
  const double n = 64.0 * 1024 * 1024;
  const double te =
      OpComputeSeconds(n, 3 * n * 2, DType::kF16, ComputeClass::kElementwise, c.device, cal);
  EXPECT_NEAR(te, 3 * n * 2 / (900e9 * 0.8), 1e-15);
  // f32 matmul is 8x slower than f16 on V100 (15.7 vs 125 TFLOP/s).
  EXPECT_NEAR(OpComputeSeconds(flops, 0, DType::kF32, ComputeClass::kMatmul, c.device, cal),
              flops / (15.7e12 * 0.6), 1e-15);
  // Elementwise efficiency 0.25 and convolution 0.6 apply to their classes.
  EXPECT_NEAR(OpComputeSeconds(1e12, 0, DType::kF16, ComputeClass::kElementwise, c.device, cal),
              1e12 / (125e12 * 0.25), 1e-15);
  EXPECT_NEAR(OpComputeSeconds(1e12, 0, DType::kF16, ComputeClass::kConvolution, c),
              1e12 / (125e12 * 0.6), 1e-15);
  // Nothing to do costs nothing; negative input counts as zero.
  EXPECT_EQ(OpComputeSeconds(0, 0, DType::kF16, ComputeClass::kOther, c.device, cal), 0.0);
  EXPECT_EQ(OpComputeSeconds(-5, -1, DType::kF16, ComputeClass::kOther, c.device, cal), 0.0);
}

TEST(Roofline, CalibrationOverride) {
  const Cluster c = ParseClusterSpec("dgx-a100").value();
  Result<Calibration> cal = ReadCalibrationBuffer(R"({"format": "alpa-calibration",
      "version": 1, "comment": "measured", "efficiency": {"matmul": 0.5, "memory": 0.9},
      "op_overhead_seconds": 1e-5})");
  ASSERT_TRUE(cal.ok()) << cal.status().message();
  EXPECT_DOUBLE_EQ(cal.value().matmul_efficiency, 0.5);
  EXPECT_DOUBLE_EQ(cal.value().memory_efficiency, 0.9);
  EXPECT_DOUBLE_EQ(cal.value().convolution_efficiency, 0.6);  // untouched default
  const double t =
      OpComputeSeconds(312e12, 0, DType::kBF16, ComputeClass::kMatmul, c.device, cal.value());
  EXPECT_NEAR(t, 2.0 + 1e-5, 1e-12);  // 312e12 FLOPs at 0.5 * 312 TFLOP/s, plus the overhead
  const double m =
      OpComputeSeconds(0, 2039e9 * 0.9, DType::kBF16, ComputeClass::kOther, c.device, cal.value());
  EXPECT_NEAR(m, 1.0 + 1e-5, 1e-12);

  // Round trip through text and a file; a base other than the defaults is kept where not given.
  Calibration base;
  base.other_efficiency = 0.1;
  Result<Calibration> partial = ReadCalibrationBuffer(R"({"efficiency": {"matmul": 0.7}})", base);
  ASSERT_TRUE(partial.ok());
  EXPECT_DOUBLE_EQ(partial.value().other_efficiency, 0.1);
  EXPECT_DOUBLE_EQ(partial.value().matmul_efficiency, 0.7);
  const std::string path = ::testing::TempDir() + "/alpa_calibration_test.json";
  {
    std::ofstream f(path);
    f << WriteCalibration(partial.value());
  }
  Result<Calibration> back = ReadCalibrationFile(path);
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(back.value() == partial.value());
  std::remove(path.c_str());
  EXPECT_EQ(ReadCalibrationFile(path).status().code(), StatusCode::kIo);
}

// The attention kernels' class: their own efficiency where it was measured, else the matmuls'.
TEST(Roofline, TheAttentionClassFallsBackToTheMatmulEfficiency) {
  const Cluster c = ParseClusterSpec("dgx-a100").value();
  Result<Calibration> plain = ReadCalibrationBuffer(R"({"efficiency": {"matmul": 0.5}})");
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(plain.value().attention_efficiency, 0.0);
  EXPECT_DOUBLE_EQ(ComputeEfficiency(ComputeClass::kAttention, plain.value()), 0.5);
  Result<Calibration> measured =
      ReadCalibrationBuffer(R"({"efficiency": {"matmul": 0.5, "attention": 0.25}})");
  ASSERT_TRUE(measured.ok()) << measured.status().message();
  EXPECT_DOUBLE_EQ(measured.value().attention_efficiency, 0.25);
  EXPECT_DOUBLE_EQ(ComputeEfficiency(ComputeClass::kAttention, measured.value()), 0.25);
  EXPECT_DOUBLE_EQ(ComputeEfficiency(ComputeClass::kMatmul, measured.value()), 0.5);
  // 312e12 FLOPs at 0.25 * 312 TFLOP/s.
  EXPECT_NEAR(OpComputeSeconds(312e12, 0, DType::kBF16, ComputeClass::kAttention, c.device,
                               measured.value()),
              4.0, 1e-12);
  Result<Calibration> back = ReadCalibrationBuffer(WriteCalibration(measured.value()));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_TRUE(back.value() == measured.value());
  EXPECT_FALSE(back.value() == plain.value());
  EXPECT_EQ(WriteCalibration(plain.value()).find("\"attention\""), std::string::npos);
}

TEST(Roofline, CalibrationErrors) {
  struct Case {
    const char* json;
    const char* needle;
  };
  const Case cases[] = {
      {R"({"efficiency": {"matmul": 0}})", "calibration.efficiency.matmul: must be in (0, 1]"},
      {R"({"efficiency": {"memory": 1.2}})", "calibration.efficiency.memory: must be in (0, 1]"},
      {R"({"efficiency": {"attention": 1.5}})",
       "calibration.efficiency.attention: must be in (0, 1]"},
      {R"({"efficiency": {"attention": -0.5}})",
       "calibration.efficiency.attention: must be in (0, 1]"},
      {R"({"efficiency": {"matmul": "high"}})", "calibration.efficiency.matmul: expected a number"},
      {R"({"efficiency": {"gemm": 0.5}})", "calibration.efficiency: unknown key \"gemm\""},
      {R"({"op_overhead_seconds": -1})", "calibration.op_overhead_seconds"},
      {R"({"format": "alpa-cluster"})", "calibration.format: expected \"alpa-calibration\""},
      {R"({"efficiency": [0.5]})", "calibration.efficiency: expected an object"},
      {R"(nope)", "calibration: invalid JSON"},
  };
  for (const Case& bc : cases) {
    Result<Calibration> r = ReadCalibrationBuffer(bc.json);
    ASSERT_FALSE(r.ok()) << bc.json;
    EXPECT_NE(r.status().message().find(bc.needle), std::string::npos)
        << bc.json << " -> " << r.status().message();
  }
}

// ---- Memory ----------------------------------------------------------------------------------

TEST(TensorMemory, Bytes) {
  EXPECT_EQ(TensorBytes({1024, 1024}, DType::kF16).value(), 2 * 1024 * 1024);
  EXPECT_EQ(TensorBytes({}, DType::kF64).value(), 8);  // a scalar
  EXPECT_EQ(TensorBytes({0, int64_t{1} << 62, 16}, DType::kF32).value(), 0);
  // GPT-39B's embedding in f32: 51200 x 8192 x 4 bytes, beyond 2^31.
  EXPECT_EQ(TensorBytes({51200, 8192}, DType::kF32).value(), int64_t{1677721600});
  EXPECT_EQ(TensorBytes({int64_t{1} << 20, int64_t{1} << 20, 1024}, DType::kS8).value(),
            int64_t{1} << 50);
}

TEST(TensorMemory, Overflow) {
  // 2^31 * 2^31 elements of 2 bytes = 2^63: one past int64.
  Result<int64_t> r = TensorBytes({int64_t{1} << 31, int64_t{1} << 31}, DType::kF16);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("overflows int64 at dims[1]"), std::string::npos);
  // 2^62 bytes exactly still fits.
  EXPECT_EQ(TensorBytes({int64_t{1} << 31, int64_t{1} << 30}, DType::kF16).value(),
            int64_t{1} << 62);
  Result<int64_t> neg = TensorBytes({4, -2}, DType::kF32);
  ASSERT_FALSE(neg.ok());
  EXPECT_NE(neg.status().message().find("dims[1] = -2 is negative"), std::string::npos);
  EXPECT_FALSE(TensorBytes({4}, static_cast<DType>(99)).ok());
}

TEST(TensorMemory, Sharded) {
  EXPECT_EQ(ShardedBytes(100, 4).value(), 25);
  EXPECT_EQ(ShardedBytes(101, 4).value(), 26);  // ceil
  EXPECT_EQ(ShardedBytes(0, 8).value(), 0);
  EXPECT_EQ(ShardedBytes(std::numeric_limits<int64_t>::max(), 2).value(), int64_t{1} << 62);
  EXPECT_FALSE(ShardedBytes(100, 0).ok());
  EXPECT_FALSE(ShardedBytes(-1, 2).ok());
}

}  // namespace
}  // namespace alpa
