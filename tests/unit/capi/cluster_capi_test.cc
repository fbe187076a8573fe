// The cluster / mesh / cost-model part of the C ABI, called only through alpa.h.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "alpa_experimental.h"

namespace {

// Frees the error and returns its message ("" when none).
std::string Take(alpa_error* err) {
  if (err == nullptr) return "";
  std::string m = alpa_error_message(err);
  alpa_error_free(err);
  return m;
}

TEST(ClusterCapi, PresetsAndGetters) {
  ASSERT_EQ(alpa_cluster_preset_count(), 5);
  EXPECT_STREQ(alpa_cluster_preset_name(0), "p3.16xlarge");
  EXPECT_STREQ(alpa_cluster_preset_name(3), "dgx-h100");
  EXPECT_STREQ(alpa_cluster_preset_name(4), "pcie-a100-80g");
  EXPECT_STREQ(alpa_cluster_preset_name(5), "");
  EXPECT_STREQ(alpa_cluster_preset_name(-1), "");

  alpa_cluster* c = nullptr;
  alpa_error* err = nullptr;
  ASSERT_EQ(alpa_cluster_create_preset(&c, "p3.16xlarge:hosts=8", 0, &err), ALPA_OK) << Take(err);
  EXPECT_STREQ(alpa_cluster_name(c), "p3.16xlarge");
  EXPECT_EQ(alpa_cluster_hosts(c), 8);
  EXPECT_EQ(alpa_cluster_devices_per_host(c), 8);
  EXPECT_EQ(alpa_cluster_device_memory_bytes(c), int64_t{16} << 30);
  EXPECT_DOUBLE_EQ(alpa_cluster_device_memory_bandwidth(c), 900e9);
  EXPECT_DOUBLE_EQ(alpa_cluster_peak_flops(c, ALPA_DTYPE_F16), 125e12);
  EXPECT_DOUBLE_EQ(alpa_cluster_peak_flops(c, ALPA_DTYPE_F32), 15.7e12);
  EXPECT_TRUE(std::isnan(alpa_cluster_peak_flops(c, 42)));
  alpa_cluster_destroy(c);

  // The hosts argument overrides the spec's.
  ASSERT_EQ(alpa_cluster_create_preset(&c, "dgx-h100:hosts=2", 4, nullptr), ALPA_OK);
  EXPECT_EQ(alpa_cluster_hosts(c), 4);
  EXPECT_DOUBLE_EQ(alpa_cluster_peak_flops(c, ALPA_DTYPE_BF16), 989e12);
  alpa_cluster_destroy(c);

  // NULL-safe getters and destroy.
  EXPECT_EQ(alpa_cluster_hosts(nullptr), 0);
  EXPECT_STREQ(alpa_cluster_name(nullptr), "");
  alpa_cluster_destroy(nullptr);
}

TEST(ClusterCapi, CreateErrors) {
  alpa_cluster* c = nullptr;
  alpa_error* err = nullptr;
  EXPECT_EQ(alpa_cluster_create_preset(&c, "tpu-v5", 1, &err), ALPA_ERR_INVALID_ARGUMENT);
  ASSERT_NE(err, nullptr);
  EXPECT_EQ(alpa_error_code(err), ALPA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(Take(err).find("unknown cluster preset"), std::string::npos);
  err = nullptr;
  EXPECT_EQ(alpa_cluster_create_preset(&c, "p3", -1, &err), ALPA_ERR_INVALID_ARGUMENT);
  Take(err);
  EXPECT_EQ(alpa_cluster_create_preset(nullptr, "p3", 1, nullptr), ALPA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(alpa_cluster_create_preset(&c, nullptr, 1, nullptr), ALPA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(c, nullptr);
}

TEST(ClusterCapi, JsonRoundTripAndCalibration) {
  alpa_cluster* c = nullptr;
  ASSERT_EQ(alpa_cluster_create_preset(&c, "dgx-a100", 2, nullptr), ALPA_OK);
  alpa_buffer* buf = nullptr;
  ASSERT_EQ(alpa_cluster_to_json(&buf, c, nullptr), ALPA_OK);
  const std::string text(alpa_buffer_data(buf), alpa_buffer_size(buf));
  alpa_buffer_free(buf);
  EXPECT_NE(text.find("\"format\": \"alpa-cluster\""), std::string::npos);

  alpa_cluster* back = nullptr;
  ASSERT_EQ(alpa_cluster_read_buffer(&back, text.data(), text.size(), nullptr), ALPA_OK);
  EXPECT_EQ(alpa_cluster_hosts(back), 2);
  EXPECT_DOUBLE_EQ(alpa_cluster_peak_flops(back, ALPA_DTYPE_BF16), 312e12);
  ASSERT_EQ(alpa_cluster_to_json(&buf, back, nullptr), ALPA_OK);
  EXPECT_EQ(std::string(alpa_buffer_data(buf), alpa_buffer_size(buf)), text);
  alpa_buffer_free(buf);
  alpa_cluster_destroy(back);

  const std::string path = ::testing::TempDir() + "/alpa_cluster_capi_test.json";
  {
    std::ofstream f(path);
    f << text;
  }
  back = nullptr;
  ASSERT_EQ(alpa_cluster_read_file(&back, path.c_str(), nullptr), ALPA_OK);
  EXPECT_EQ(alpa_cluster_devices_per_host(back), 8);
  alpa_cluster_destroy(back);
  std::remove(path.c_str());
  EXPECT_EQ(alpa_cluster_read_file(&back, path.c_str(), nullptr), ALPA_ERR_IO);

  // Roofline before and after a calibration override (the preset's matmul efficiency is the
  // fit to Megatron-LM's A100 measurements, bench/calibration/a100-megatron-sc21.json).
  double seconds = 0;
  ASSERT_EQ(alpa_cluster_op_seconds(&seconds, c, 312e12 * 0.728, 0, ALPA_DTYPE_BF16,
                                    ALPA_COMPUTE_MATMUL, nullptr),
            ALPA_OK);
  EXPECT_NEAR(seconds, 1.0, 1e-12);
  const std::string cal = R"({"efficiency": {"matmul": 0.364}})";
  alpa_cluster* calibrated = nullptr;
  ASSERT_EQ(alpa_cluster_apply_calibration(&calibrated, c, cal.data(), cal.size(), nullptr),
            ALPA_OK);
  ASSERT_EQ(alpa_cluster_op_seconds(&seconds, calibrated, 312e12 * 0.728, 0, ALPA_DTYPE_BF16,
                                    ALPA_COMPUTE_MATMUL, nullptr),
            ALPA_OK);
  EXPECT_NEAR(seconds, 2.0, 1e-12);
  // Memory-bound: 2039 GB at 0.8 of 2039 GB/s.
  ASSERT_EQ(alpa_cluster_op_seconds(&seconds, calibrated, 1, 2039e9, ALPA_DTYPE_F32,
                                    ALPA_COMPUTE_ELEMENTWISE, nullptr),
            ALPA_OK);
  EXPECT_NEAR(seconds, 1.25, 1e-12);
  alpa_error* err = nullptr;
  EXPECT_EQ(alpa_cluster_op_seconds(&seconds, c, 1, 1, ALPA_DTYPE_F32, 9, &err),
            ALPA_ERR_INVALID_ARGUMENT);
  Take(err);
  EXPECT_EQ(
      alpa_cluster_op_seconds(&seconds, c, -1, 1, ALPA_DTYPE_F32, ALPA_COMPUTE_OTHER, nullptr),
      ALPA_ERR_INVALID_ARGUMENT);
  const std::string bad_cal = R"({"efficiency": {"matmul": 2}})";
  err = nullptr;
  EXPECT_EQ(alpa_cluster_apply_calibration(&calibrated, c, bad_cal.data(), bad_cal.size(), &err),
            ALPA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(Take(err).find("calibration.efficiency.matmul"), std::string::npos);
  alpa_cluster_destroy(calibrated);
  alpa_cluster_destroy(c);
}

TEST(ClusterCapi, MixedSpecsKeepTheirHostsAndCalibrateEveryPool) {
  alpa_cluster* c = nullptr;
  alpa_error* err = nullptr;
  ASSERT_EQ(alpa_cluster_create_preset(&c, "dgx-a100-80g:hosts=2+p3.16xlarge:hosts=3", 0, &err),
            ALPA_OK)
      << Take(err);
  EXPECT_STREQ(alpa_cluster_name(c), "dgx-a100-80g + p3.16xlarge");
  EXPECT_EQ(alpa_cluster_hosts(c), 5);
  EXPECT_EQ(alpa_cluster_device_memory_bytes(c), int64_t{16} << 30);
  // Which pool would a host count go to: refused.
  alpa_cluster* other = nullptr;
  EXPECT_EQ(alpa_cluster_create_preset(&other, "a100+p3", 4, &err), ALPA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(Take(err).find("hosts must be 0 for the mixed cluster spec \"a100+p3\" (got 4)"),
            std::string::npos);
  EXPECT_EQ(other, nullptr);

  // The V100 pool keeps its own fitted matmul efficiency (0.693), the merged view the A100's.
  const std::string cal = R"({"op_overhead_seconds": 1e-5})";
  alpa_cluster* calibrated = nullptr;
  ASSERT_EQ(alpa_cluster_apply_calibration(&calibrated, c, cal.data(), cal.size(), &err), ALPA_OK)
      << Take(err);
  alpa_buffer* buf = nullptr;
  ASSERT_EQ(alpa_cluster_to_json(&buf, calibrated, nullptr), ALPA_OK);
  const std::string text(alpa_buffer_data(buf), alpa_buffer_size(buf));
  alpa_buffer_free(buf);
  EXPECT_NE(text.find("\"pools\""), std::string::npos);
  EXPECT_NE(text.find("0.693"), std::string::npos) << text;
  EXPECT_NE(text.find("0.728"), std::string::npos) << text;
  EXPECT_NE(text.find("1e-05"), std::string::npos) << text;
  alpa_cluster* back = nullptr;
  ASSERT_EQ(alpa_cluster_read_buffer(&back, text.data(), text.size(), &err), ALPA_OK) << Take(err);
  EXPECT_EQ(alpa_cluster_hosts(back), 5);
  alpa_cluster_destroy(back);
  alpa_cluster_destroy(calibrated);
  alpa_cluster_destroy(c);
}

TEST(ClusterCapi, ReadErrorsNameTheField) {
  alpa_cluster* c = nullptr;
  alpa_error* err = nullptr;
  const std::string bad = R"({"preset": "p3", "device": {"memory_bytes": 0}})";
  EXPECT_EQ(alpa_cluster_read_buffer(&c, bad.data(), bad.size(), &err), ALPA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(Take(err).find("cluster.device.memory_bytes"), std::string::npos);
  err = nullptr;
  const std::string garbage = "{";
  EXPECT_EQ(alpa_cluster_read_buffer(&c, garbage.data(), garbage.size(), &err), ALPA_ERR_PARSE);
  Take(err);
  EXPECT_EQ(alpa_cluster_read_buffer(&c, nullptr, 3, nullptr), ALPA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(alpa_cluster_read_buffer(&c, nullptr, 0, nullptr), ALPA_ERR_PARSE);  // empty input
  EXPECT_EQ(c, nullptr);
}

TEST(ClusterCapi, LogicalMeshAlphaBeta) {
  alpa_cluster* c = nullptr;
  ASSERT_EQ(alpa_cluster_create_preset(&c, "p3.16xlarge", 2, nullptr), ALPA_OK);
  const int64_t shape[2] = {2, 8};
  double alpha[2] = {0, 0}, beta[2] = {0, 0}, flat[2] = {0, 0};
  alpa_error* err = nullptr;
  ASSERT_EQ(alpa_cluster_logical_mesh(alpha, beta, flat, c, 2, 8, 2, shape, &err), ALPA_OK)
      << Take(err);
  EXPECT_DOUBLE_EQ(alpha[0], 20e-6);  // across hosts: the network
  EXPECT_DOUBLE_EQ(beta[0], 8 / 3.125e9);
  EXPECT_DOUBLE_EQ(alpha[1], 5e-6);  // inside a host: NVLink
  EXPECT_DOUBLE_EQ(beta[1], 1 / 150e9);
  EXPECT_DOUBLE_EQ(flat[1], 1 / 3.125e9);
  ASSERT_EQ(alpa_cluster_logical_mesh(alpha, beta, nullptr, c, 1, 4, 1, shape + 1, nullptr),
            ALPA_ERR_INVALID_ARGUMENT);  // shape (8) on a 1 x 4 submesh
  const int64_t four = 4;
  ASSERT_EQ(alpa_cluster_logical_mesh(alpha, beta, nullptr, c, 1, 4, 1, &four, nullptr), ALPA_OK);
  EXPECT_DOUBLE_EQ(beta[0], 1 / 100e9);  // a fully connected quad of the hybrid cube mesh
  err = nullptr;
  EXPECT_EQ(alpa_cluster_logical_mesh(alpha, beta, nullptr, c, 3, 8, 1, &four, &err),
            ALPA_ERR_INVALID_ARGUMENT);
  EXPECT_NE(Take(err).find("submesh: hosts"), std::string::npos);
  EXPECT_EQ(alpa_cluster_logical_mesh(alpha, beta, nullptr, c, 1, 4, 3, shape, nullptr),
            ALPA_ERR_INVALID_ARGUMENT);

  // The same through a mesh handle, plus a collective.
  alpa_mesh* mesh = nullptr;
  ASSERT_EQ(alpa_mesh_create(&mesh, c, 2, 8, 2, shape, nullptr), ALPA_OK);
  alpa_cluster_destroy(c);  // the mesh does not refer to it
  EXPECT_EQ(alpa_mesh_ndim(mesh), 2);
  EXPECT_EQ(alpa_mesh_dim_size(mesh, 1), 8);
  EXPECT_EQ(alpa_mesh_dim_size(mesh, 2), -1);
  EXPECT_DOUBLE_EQ(alpa_mesh_beta(mesh, 0), 8 / 3.125e9);
  EXPECT_DOUBLE_EQ(alpa_mesh_alpha(mesh, ALPA_MESH_DIM_FLATTENED), 20e-6);
  EXPECT_TRUE(std::isnan(alpa_mesh_alpha(mesh, 5)));
  double cost = 0;
  ASSERT_EQ(alpa_mesh_collective_cost(&cost, mesh, ALPA_COLLECTIVE_ALL_REDUCE, 1, 1e9,
                                      ALPA_COST_MODE_REAL_UNITS, nullptr),
            ALPA_OK);
  EXPECT_NEAR(cost, 5e-6 + 1.75e9 / 150e9, 1e-12);
  alpa_mesh_destroy(mesh);
  alpa_mesh_destroy(nullptr);
}

TEST(ClusterCapi, AbstractMeshCollectives) {
  alpa_mesh* mesh = nullptr;
  const int64_t shape[2] = {2, 2};
  ASSERT_EQ(alpa_mesh_create_abstract(&mesh, 2, shape, nullptr, nullptr, nullptr), ALPA_OK);
  EXPECT_DOUBLE_EQ(alpa_mesh_beta(mesh, 1), 0.1);
  double cost = 0;
  // all-reduce of 1 MB over 2 devices on dim 1: 1 + 0.1 * 1e6 + 0.01 (Alpa mode).
  ASSERT_EQ(alpa_mesh_collective_cost(&cost, mesh, ALPA_COLLECTIVE_ALL_REDUCE, 1, 1e6,
                                      ALPA_COST_MODE_ALPA, nullptr),
            ALPA_OK);
  EXPECT_DOUBLE_EQ(cost, 1 + 1e5 + 0.01);
  ASSERT_EQ(
      alpa_mesh_collective_cost(&cost, mesh, ALPA_COLLECTIVE_ALL_GATHER, ALPA_MESH_DIM_FLATTENED,
                                400, ALPA_COST_MODE_REAL_UNITS, nullptr),
      ALPA_OK);
  EXPECT_DOUBLE_EQ(cost, 1 + 300);
  alpa_error* err = nullptr;
  EXPECT_EQ(alpa_mesh_collective_cost(&cost, mesh, 17, 0, 1, ALPA_COST_MODE_ALPA, &err),
            ALPA_ERR_INVALID_ARGUMENT);
  Take(err);
  EXPECT_EQ(alpa_mesh_collective_cost(&cost, mesh, ALPA_COLLECTIVE_ALL_GATHER, 0, 1, 5, nullptr),
            ALPA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(alpa_mesh_collective_cost(&cost, mesh, ALPA_COLLECTIVE_ALL_GATHER, 2, 1,
                                      ALPA_COST_MODE_ALPA, nullptr),
            ALPA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(alpa_mesh_collective_cost(&cost, mesh, ALPA_COLLECTIVE_ALL_GATHER, 0, -1,
                                      ALPA_COST_MODE_ALPA, nullptr),
            ALPA_ERR_INVALID_ARGUMENT);
  alpa_mesh_destroy(mesh);

  const double alpha[2] = {2, 3}, beta[2] = {0.5, 0.25};
  ASSERT_EQ(alpa_mesh_create_abstract(&mesh, 2, shape, alpha, beta, nullptr), ALPA_OK);
  EXPECT_DOUBLE_EQ(alpa_mesh_alpha(mesh, ALPA_MESH_DIM_FLATTENED), 3);
  EXPECT_DOUBLE_EQ(alpa_mesh_beta(mesh, ALPA_MESH_DIM_FLATTENED), 0.5);
  alpa_mesh_destroy(mesh);
  const double negative[2] = {-1, 1};
  mesh = nullptr;
  EXPECT_EQ(alpa_mesh_create_abstract(&mesh, 2, shape, negative, nullptr, nullptr),
            ALPA_ERR_INVALID_ARGUMENT);
  EXPECT_EQ(mesh, nullptr);
}

}  // namespace
