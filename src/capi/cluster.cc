// Clusters, logical meshes, collective costs and the roofline through the C ABI.
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "capi/handles.h"
#include "core/cluster/cluster.h"
#include "core/cluster/cost_model.h"
#include "core/cluster/logical_mesh.h"

namespace {

using alpa::capi::Fail;
using alpa::capi::Guard;

int32_t WrapCluster(alpa_cluster** out, alpa::Result<alpa::Cluster> r, alpa_error** err) {
  if (!r.ok()) return Fail(err, r.status());
  auto* handle = new alpa_cluster();
  handle->cluster = std::move(r).value();
  *out = handle;
  return ALPA_OK;
}

std::string_view Bytes(const char* data, size_t size) {
  return size == 0 ? std::string_view() : std::string_view(data, size);
}

// Copies shape[ndim] after checking the pointer and the rank.
int32_t ReadShape(int32_t ndim, const int64_t* shape, std::vector<int64_t>* out, alpa_error** err) {
  if (ndim != 1 && ndim != 2) {
    return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                "ndim must be 1 or 2 (got " + std::to_string(ndim) + ")");
  }
  if (shape == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "shape is NULL");
  out->assign(shape, shape + ndim);
  return ALPA_OK;
}

alpa::Result<alpa::LogicalMesh> Derive(const alpa_cluster* cluster, int64_t hosts,
                                       int64_t devices_per_host,
                                       const std::vector<int64_t>& shape) {
  return alpa::DeriveLogicalMesh(cluster->cluster, alpa::SubmeshShape{hosts, devices_per_host},
                                 shape);
}

bool BadNumber(double x) { return !std::isfinite(x) || x < 0; }

// alpha (or beta) of a dimension or the flattened mesh; NaN when out of range.
double MeshValue(const alpa_mesh* mesh, int32_t dim, bool alpha) {
  if (mesh == nullptr) return std::numeric_limits<double>::quiet_NaN();
  const alpa::LogicalMesh& m = mesh->mesh;
  if (dim == ALPA_MESH_DIM_FLATTENED) return alpha ? m.flat_alpha : m.flat_beta;
  if (dim < 0 || dim >= m.ndim()) return std::numeric_limits<double>::quiet_NaN();
  return alpha ? m.alpha[static_cast<size_t>(dim)] : m.beta[static_cast<size_t>(dim)];
}

}  // namespace

static_assert(ALPA_MESH_DIM_FLATTENED == alpa::kFlattenedMeshDim);
static_assert(ALPA_COLLECTIVE_SEND_RECV == static_cast<int32_t>(alpa::CollectiveKind::kSendRecv));
static_assert(ALPA_COST_MODE_REAL_UNITS == static_cast<int32_t>(alpa::CostMode::kRealUnits));
static_assert(ALPA_COMPUTE_OTHER == static_cast<int32_t>(alpa::ComputeClass::kOther));
static_assert(ALPA_DTYPE_PRED == static_cast<int32_t>(alpa::DType::kPred));
static_assert(ALPA_DTYPE_BF16 == static_cast<int32_t>(alpa::DType::kBF16));

extern "C" {

ALPA_API int32_t alpa_cluster_preset_count(void) {
  return static_cast<int32_t>(alpa::ClusterPresets().size());
}

ALPA_API const char* alpa_cluster_preset_name(int32_t index) {
  const auto& presets = alpa::ClusterPresets();
  if (index < 0 || static_cast<size_t>(index) >= presets.size()) return "";
  return presets[static_cast<size_t>(index)].name;
}

ALPA_API int32_t alpa_cluster_create_preset(alpa_cluster** out, const char* spec, int64_t hosts,
                                            alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || spec == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and spec must not be NULL");
    }
    if (hosts < 0) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "hosts must be >= 0 (got " + std::to_string(hosts) + ")");
    }
    alpa::Result<alpa::Cluster> c = alpa::ParseClusterSpec(spec);
    if (c.ok() && hosts > 0 && c.value().mixed()) {
      // Which pool would the hosts go to: each part says its own.
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "hosts must be 0 for the mixed cluster spec \"" + std::string(spec) + "\" (got " +
                      std::to_string(hosts) +
                      "); give each part its hosts: \"dgx-a100-80g:hosts=2+p3.16xlarge:hosts=2\"");
    }
    if (c.ok() && hosts > 0) {
      c.value().hosts = hosts;
      alpa::Status s = alpa::ValidateCluster(c.value());
      if (!s.ok()) return Fail(err, s);
    }
    return WrapCluster(out, std::move(c), err);
  });
}

ALPA_API int32_t alpa_cluster_read_file(alpa_cluster** out, const char* path, alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || path == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and path must not be NULL");
    }
    return WrapCluster(out, alpa::ReadClusterFile(path), err);
  });
}

ALPA_API int32_t alpa_cluster_read_buffer(alpa_cluster** out, const char* data, size_t size,
                                          alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || (data == nullptr && size > 0)) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and data must not be NULL");
    }
    return WrapCluster(out, alpa::ReadClusterBuffer(Bytes(data, size)), err);
  });
}

ALPA_API int32_t alpa_cluster_apply_calibration(alpa_cluster** out, const alpa_cluster* cluster,
                                                const char* data, size_t size, alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || cluster == nullptr || (data == nullptr && size > 0)) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out, cluster and data must not be NULL");
    }
    return WrapCluster(out, alpa::ApplyCalibrationBuffer(cluster->cluster, Bytes(data, size)), err);
  });
}

ALPA_API int32_t alpa_cluster_to_json(alpa_buffer** out, const alpa_cluster* cluster,
                                      alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || cluster == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and cluster must not be NULL");
    }
    alpa::Result<std::string> text = alpa::WriteCluster(cluster->cluster);
    if (!text.ok()) return Fail(err, text.status());
    alpa_buffer* buffer = alpa::capi::MakeBuffer(std::move(text).value());
    if (buffer == nullptr) return Fail(err, ALPA_ERR_OUT_OF_MEMORY, "out of memory");
    *out = buffer;
    return ALPA_OK;
  });
}

ALPA_API void alpa_cluster_destroy(alpa_cluster* cluster) { delete cluster; }

ALPA_API const char* alpa_cluster_name(const alpa_cluster* cluster) {
  return cluster == nullptr ? "" : cluster->cluster.name.c_str();
}

ALPA_API int64_t alpa_cluster_hosts(const alpa_cluster* cluster) {
  return cluster == nullptr ? 0 : cluster->cluster.hosts;
}

ALPA_API int64_t alpa_cluster_devices_per_host(const alpa_cluster* cluster) {
  return cluster == nullptr ? 0 : cluster->cluster.devices_per_host;
}

ALPA_API int64_t alpa_cluster_device_memory_bytes(const alpa_cluster* cluster) {
  return cluster == nullptr ? 0 : cluster->cluster.device.memory_bytes;
}

ALPA_API double alpa_cluster_device_memory_bandwidth(const alpa_cluster* cluster) {
  return cluster == nullptr ? std::numeric_limits<double>::quiet_NaN()
                            : cluster->cluster.device.memory_bandwidth;
}

ALPA_API double alpa_cluster_peak_flops(const alpa_cluster* cluster, int32_t dtype) {
  if (cluster == nullptr || !alpa::IsValidDType(dtype)) {
    return std::numeric_limits<double>::quiet_NaN();
  }
  return cluster->cluster.device.PeakFlops(static_cast<alpa::DType>(dtype));
}

ALPA_API int32_t alpa_cluster_op_seconds(double* out_seconds, const alpa_cluster* cluster,
                                         double flops, double bytes_accessed, int32_t dtype,
                                         int32_t compute_class, alpa_error** err) {
  return Guard(err, [&] {
    if (out_seconds == nullptr || cluster == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out_seconds and cluster must not be NULL");
    }
    if (!alpa::IsValidDType(dtype)) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "unknown dtype " + std::to_string(dtype));
    }
    if (compute_class < ALPA_COMPUTE_MATMUL || compute_class > ALPA_COMPUTE_OTHER) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "unknown compute class " + std::to_string(compute_class));
    }
    if (BadNumber(flops) || BadNumber(bytes_accessed)) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "flops and bytes_accessed must be finite and >= 0");
    }
    *out_seconds =
        alpa::OpComputeSeconds(flops, bytes_accessed, static_cast<alpa::DType>(dtype),
                               static_cast<alpa::ComputeClass>(compute_class), cluster->cluster);
    return ALPA_OK;
  });
}

ALPA_API int32_t alpa_cluster_logical_mesh(double* out_alpha, double* out_beta, double* out_flat,
                                           const alpa_cluster* cluster, int64_t submesh_hosts,
                                           int64_t submesh_devices_per_host, int32_t ndim,
                                           const int64_t* logical_shape, alpa_error** err) {
  return Guard(err, [&] {
    if (out_alpha == nullptr || out_beta == nullptr || cluster == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "out_alpha, out_beta and cluster must not be NULL");
    }
    std::vector<int64_t> shape;
    if (int32_t s = ReadShape(ndim, logical_shape, &shape, err)) return s;
    alpa::Result<alpa::LogicalMesh> mesh =
        Derive(cluster, submesh_hosts, submesh_devices_per_host, shape);
    if (!mesh.ok()) return Fail(err, mesh.status());
    const alpa::LogicalMesh& m = mesh.value();
    for (size_t k = 0; k < shape.size(); ++k) {
      out_alpha[k] = m.alpha[k];
      out_beta[k] = m.beta[k];
    }
    if (out_flat != nullptr) {
      out_flat[0] = m.flat_alpha;
      out_flat[1] = m.flat_beta;
    }
    return ALPA_OK;
  });
}

ALPA_API int32_t alpa_mesh_create(alpa_mesh** out, const alpa_cluster* cluster,
                                  int64_t submesh_hosts, int64_t submesh_devices_per_host,
                                  int32_t ndim, const int64_t* logical_shape, alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr || cluster == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out and cluster must not be NULL");
    }
    std::vector<int64_t> shape;
    if (int32_t s = ReadShape(ndim, logical_shape, &shape, err)) return s;
    alpa::Result<alpa::LogicalMesh> mesh =
        Derive(cluster, submesh_hosts, submesh_devices_per_host, shape);
    if (!mesh.ok()) return Fail(err, mesh.status());
    *out = new alpa_mesh{std::move(mesh).value()};
    return ALPA_OK;
  });
}

ALPA_API int32_t alpa_mesh_create_abstract(alpa_mesh** out, int32_t ndim, const int64_t* shape,
                                           const double* alpha, const double* beta,
                                           alpa_error** err) {
  return Guard(err, [&] {
    if (out == nullptr) return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out is NULL");
    std::vector<int64_t> dims;
    if (int32_t s = ReadShape(ndim, shape, &dims, err)) return s;
    std::vector<double> a, b;
    if (alpha != nullptr) a.assign(alpha, alpha + ndim);
    if (beta != nullptr) b.assign(beta, beta + ndim);
    alpa::Result<alpa::LogicalMesh> mesh = alpa::AbstractLogicalMesh(dims, a, b);
    if (!mesh.ok()) return Fail(err, mesh.status());
    *out = new alpa_mesh{std::move(mesh).value()};
    return ALPA_OK;
  });
}

ALPA_API void alpa_mesh_destroy(alpa_mesh* mesh) { delete mesh; }

ALPA_API int32_t alpa_mesh_ndim(const alpa_mesh* mesh) {
  return mesh == nullptr ? 0 : mesh->mesh.ndim();
}

ALPA_API int64_t alpa_mesh_dim_size(const alpa_mesh* mesh, int32_t dim) {
  if (mesh == nullptr || dim < 0 || dim >= mesh->mesh.ndim()) return -1;
  return mesh->mesh.shape[static_cast<size_t>(dim)];
}

ALPA_API double alpa_mesh_alpha(const alpa_mesh* mesh, int32_t dim) {
  return MeshValue(mesh, dim, true);
}

ALPA_API double alpa_mesh_beta(const alpa_mesh* mesh, int32_t dim) {
  return MeshValue(mesh, dim, false);
}

ALPA_API int32_t alpa_mesh_collective_cost(double* out_cost, const alpa_mesh* mesh, int32_t kind,
                                           int32_t mesh_dim, double bytes, int32_t mode,
                                           alpa_error** err) {
  return Guard(err, [&] {
    if (out_cost == nullptr || mesh == nullptr) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "out_cost and mesh must not be NULL");
    }
    if (kind < ALPA_COLLECTIVE_ALL_GATHER || kind > ALPA_COLLECTIVE_SEND_RECV) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT,
                  "unknown collective kind " + std::to_string(kind));
    }
    if (mode != ALPA_COST_MODE_ALPA && mode != ALPA_COST_MODE_REAL_UNITS) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "unknown cost mode " + std::to_string(mode));
    }
    if (BadNumber(bytes)) {
      return Fail(err, ALPA_ERR_INVALID_ARGUMENT, "bytes must be finite and >= 0");
    }
    alpa::Result<double> cost =
        alpa::MeshCollectiveCost(mesh->mesh, static_cast<alpa::CollectiveKind>(kind), mesh_dim,
                                 bytes, static_cast<alpa::CostMode>(mode));
    if (!cost.ok()) return Fail(err, cost.status());
    *out_cost = cost.value();
    return ALPA_OK;
  });
}

}  // extern "C"
