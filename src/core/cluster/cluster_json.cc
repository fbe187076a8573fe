// Cluster files and calibration files (docs/cluster-format.md): JSON in, JSON out.
#include <algorithm>
#include <limits>
#include <new>
#include <set>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/cluster/cluster.h"
#include "core/cluster/nvlink_graph.h"
#include "core/cluster/pcie_tree.h"
#include "core/util/bounded_input.h"
#include "core/util/json_document.h"
#include "core/util/json_util.h"

namespace alpa {
namespace {

using json_util::Json;
using json_util::Presence;

constexpr const char* kClusterFormat = "alpa-cluster";
constexpr const char* kCalibrationFormat = "alpa-calibration";
constexpr int64_t kVersion = 1;

Status Bad(const std::string& path, const std::string& what) {
  return ParseError(path + ": " + what);
}

// Reads the fields of one JSON object at `path`, and rejects keys nobody asked for (typos in a
// hand-written cluster file must not silently fall back to defaults).
class ObjectReader {
 public:
  ObjectReader(const Json& obj, std::string path) : obj_(obj), path_(std::move(path)) {}

  Status CheckObject() const {
    if (!obj_.is_object()) return ParseError(path_ + ": expected an object");
    return Status::Ok();
  }

  // nullptr when absent; a missing required key is an error.
  Status Find(const char* key, Presence presence, const Json** out) {
    seen_.insert(key);
    *out = nullptr;
    const auto it = obj_.find(key);
    if (it == obj_.end()) {
      if (presence == Presence::kRequired)
        return ParseError(path_ + ": missing required key \"" + key + "\"");
      return Status::Ok();
    }
    *out = &*it;
    return Status::Ok();
  }

  Status Double(const char* key, Presence presence, double* out) {
    const Json* j = nullptr;
    ALPA_RETURN_IF_ERROR(Find(key, presence, &j));
    if (j == nullptr) return Status::Ok();
    const json_util::Conversion c = json_util::ToDouble(*j, out);
    if (c != json_util::Conversion::kOk) return Bad(Sub(key), ConversionMessage(c));
    return Status::Ok();
  }

  Status Int(const char* key, Presence presence, int64_t* out) {
    const Json* j = nullptr;
    ALPA_RETURN_IF_ERROR(Find(key, presence, &j));
    if (j == nullptr) return Status::Ok();
    const json_util::Conversion c = json_util::ToInt64(*j, std::numeric_limits<int64_t>::min(),
                                                       std::numeric_limits<int64_t>::max(), out);
    if (c != json_util::Conversion::kOk) return Bad(Sub(key), ConversionMessage(c));
    return Status::Ok();
  }

  Status Bool(const char* key, Presence presence, bool* out) {
    const Json* j = nullptr;
    ALPA_RETURN_IF_ERROR(Find(key, presence, &j));
    if (j == nullptr) return Status::Ok();
    if (!j->is_boolean()) return Bad(Sub(key), "expected true or false");
    *out = j->get<bool>();
    return Status::Ok();
  }

  Status String(const char* key, Presence presence, std::string* out) {
    const Json* j = nullptr;
    ALPA_RETURN_IF_ERROR(Find(key, presence, &j));
    if (j == nullptr) return Status::Ok();
    if (!j->is_string()) return Bad(Sub(key), "expected a string");
    *out = j->get<std::string>();
    return Status::Ok();
  }

  // "format" must name `format` when present; "version" must be 1 when present.
  Status Header(const char* format) {
    std::string name = format;
    ALPA_RETURN_IF_ERROR(String("format", Presence::kOptional, &name));
    if (name != format) {
      return Bad(Sub("format"), "expected \"" + std::string(format) + "\" (got \"" + name + "\")");
    }
    int64_t version = kVersion;
    ALPA_RETURN_IF_ERROR(Int("version", Presence::kOptional, &version));
    if (version != kVersion) {
      return Bad(Sub("version"), "unsupported version " + std::to_string(version) +
                                     " (this library reads version 1)");
    }
    return Status::Ok();
  }

  Status CheckNoUnknownKeys() const {
    for (auto it = obj_.begin(); it != obj_.end(); ++it) {
      if (seen_.count(it.key()) == 0) {
        return ParseError(path_ + ": unknown key \"" + it.key() + "\"");
      }
    }
    return Status::Ok();
  }

  std::string Sub(const std::string& key) const { return path_ + "." + key; }

 private:
  const Json& obj_;
  std::string path_;
  std::set<std::string> seen_;
};

// Fields a preset supplies are optional next to one and required without.
Presence RequiredWithoutPreset(bool from_preset) {
  return from_preset ? Presence::kOptional : Presence::kRequired;
}

Status ReadLink(const Json& j, const std::string& path, Presence presence, LinkSpec* link) {
  ObjectReader r(j, path);
  ALPA_RETURN_IF_ERROR(r.CheckObject());
  ALPA_RETURN_IF_ERROR(r.Double("bandwidth", presence, &link->bandwidth));
  ALPA_RETURN_IF_ERROR(r.Double("latency", presence, &link->latency));
  return r.CheckNoUnknownKeys();
}

Status ReadPeakFlops(const Json& j, const std::string& path, bool from_preset, DeviceSpec* d) {
  ObjectReader reader(j, path);
  ALPA_RETURN_IF_ERROR(reader.CheckObject());
  // Without a preset, f32 is required and dtypes left out take its value.
  std::array<bool, kNumDTypes> given{};
  for (int32_t i = 0; i < kNumDTypes; ++i) {
    const DType dt = static_cast<DType>(i);
    const size_t k = static_cast<size_t>(i);
    const Json* v = nullptr;
    const Presence presence =
        !from_preset && dt == DType::kF32 ? Presence::kRequired : Presence::kOptional;
    ALPA_RETURN_IF_ERROR(reader.Find(DTypeName(dt), presence, &v));
    if (v == nullptr) continue;
    ALPA_RETURN_IF_ERROR(reader.Double(DTypeName(dt), Presence::kRequired, &d->peak_flops[k]));
    given[k] = true;
  }
  if (!from_preset) {
    for (size_t k = 0; k < given.size(); ++k) {
      if (!given[k]) d->peak_flops[k] = d->peak_flops[static_cast<size_t>(DType::kF32)];
    }
  }
  return reader.CheckNoUnknownKeys();
}

Status ReadDevice(const Json& j, const std::string& path, bool from_preset, DeviceSpec* d) {
  ObjectReader r(j, path);
  ALPA_RETURN_IF_ERROR(r.CheckObject());
  ALPA_RETURN_IF_ERROR(r.String("name", Presence::kOptional, &d->name));
  ALPA_RETURN_IF_ERROR(r.Int("memory_bytes", RequiredWithoutPreset(from_preset), &d->memory_bytes));
  ALPA_RETURN_IF_ERROR(
      r.Double("memory_bandwidth", RequiredWithoutPreset(from_preset), &d->memory_bandwidth));
  const Json* peaks = nullptr;
  ALPA_RETURN_IF_ERROR(r.Find("peak_flops", RequiredWithoutPreset(from_preset), &peaks));
  if (peaks != nullptr) {
    ALPA_RETURN_IF_ERROR(ReadPeakFlops(*peaks, r.Sub("peak_flops"), from_preset, d));
  }
  return r.CheckNoUnknownKeys();
}

// An array of small non-negative integers at `path` (device indices).
Status ReadIndices(const Json& j, const std::string& path, std::vector<int64_t>* out) {
  if (!j.is_array()) return Bad(path, "expected an array of device indices");
  out->clear();
  for (size_t i = 0; i < j.size(); ++i) {
    int64_t d = 0;
    const json_util::Conversion c =
        json_util::ToInt64(j[i], 0, std::numeric_limits<int32_t>::max(), &d);
    if (c != json_util::Conversion::kOk) {
      return Bad(path + "[" + std::to_string(i) + "]", ConversionMessage(c));
    }
    out->push_back(d);
  }
  return Status::Ok();
}

Status ReadNicLocality(const Json& j, const std::string& path, NicLocality* nic) {
  ObjectReader r(j, path);
  ALPA_RETURN_IF_ERROR(r.CheckObject());
  const Json* near = nullptr;
  ALPA_RETURN_IF_ERROR(r.Find("near_devices", Presence::kRequired, &near));
  ALPA_RETURN_IF_ERROR(ReadIndices(*near, r.Sub("near_devices"), &nic->near_devices));
  ALPA_RETURN_IF_ERROR(r.Double("far_bandwidth", Presence::kRequired, &nic->far_bandwidth));
  return r.CheckNoUnknownKeys();
}

// "nvlink": {"links": [{"devices": [a, b], "bandwidth": B}, ...], "pcie_bandwidth": P,
// "device_order": [...]} (device_order optional), or null: no graph.
Status ReadNvlink(const Json& j, const std::string& path, NvlinkGraph* graph) {
  *graph = NvlinkGraph();
  if (j.is_null()) return Status::Ok();  // no graph
  ObjectReader r(j, path);
  ALPA_RETURN_IF_ERROR(r.CheckObject());
  const Json* links = nullptr;
  ALPA_RETURN_IF_ERROR(r.Find("links", Presence::kRequired, &links));
  if (!links->is_array()) return Bad(r.Sub("links"), "expected an array of links");
  for (size_t i = 0; i < links->size(); ++i) {
    const std::string at = r.Sub("links") + "[" + std::to_string(i) + "]";
    ObjectReader lr((*links)[i], at);
    ALPA_RETURN_IF_ERROR(lr.CheckObject());
    const Json* devices = nullptr;
    ALPA_RETURN_IF_ERROR(lr.Find("devices", Presence::kRequired, &devices));
    std::vector<int64_t> ends;
    ALPA_RETURN_IF_ERROR(ReadIndices(*devices, lr.Sub("devices"), &ends));
    if (ends.size() != 2) {
      return Bad(lr.Sub("devices"),
                 "expected two devices (got " + std::to_string(ends.size()) + ")");
    }
    NvlinkGraph::Link link;
    link.a = ends[0];
    link.b = ends[1];
    ALPA_RETURN_IF_ERROR(lr.Double("bandwidth", Presence::kRequired, &link.bandwidth));
    ALPA_RETURN_IF_ERROR(lr.CheckNoUnknownKeys());
    graph->links.push_back(link);
  }
  ALPA_RETURN_IF_ERROR(r.Double("pcie_bandwidth", Presence::kRequired, &graph->pcie_bandwidth));
  const Json* order = nullptr;
  ALPA_RETURN_IF_ERROR(r.Find("device_order", Presence::kOptional, &order));
  if (order != nullptr)
    ALPA_RETURN_IF_ERROR(ReadIndices(*order, r.Sub("device_order"), &graph->device_order));
  return r.CheckNoUnknownKeys();
}

// "pcie": {"switches": [[0, 1], ...], "uplink_bandwidth": B, "switch_sockets": [...],
// "socket_bandwidth": S} (the last two optional), or null: no tree.
Status ReadPcie(const Json& j, const std::string& path, PcieTree* tree) {
  *tree = PcieTree();
  if (j.is_null()) return Status::Ok();  // no tree
  ObjectReader r(j, path);
  ALPA_RETURN_IF_ERROR(r.CheckObject());
  const Json* switches = nullptr;
  ALPA_RETURN_IF_ERROR(r.Find("switches", Presence::kRequired, &switches));
  if (!switches->is_array()) return Bad(r.Sub("switches"), "expected an array of switches");
  for (size_t i = 0; i < switches->size(); ++i) {
    std::vector<int64_t> members;
    ALPA_RETURN_IF_ERROR(
        ReadIndices((*switches)[i], r.Sub("switches") + "[" + std::to_string(i) + "]", &members));
    tree->switches.push_back(std::move(members));
  }
  ALPA_RETURN_IF_ERROR(r.Double("uplink_bandwidth", Presence::kRequired, &tree->uplink_bandwidth));
  const Json* sockets = nullptr;
  ALPA_RETURN_IF_ERROR(r.Find("switch_sockets", Presence::kOptional, &sockets));
  if (sockets != nullptr) {
    ALPA_RETURN_IF_ERROR(ReadIndices(*sockets, r.Sub("switch_sockets"), &tree->switch_sockets));
  }
  ALPA_RETURN_IF_ERROR(r.Double("socket_bandwidth", Presence::kOptional, &tree->socket_bandwidth));
  return r.CheckNoUnknownKeys();
}

// The calibration keys of one object (a calibration file's top level, or a cluster's
// "calibration"), on top of the values already in *c.
Status ReadCalibrationFields(ObjectReader& r, Calibration* c) {
  const Json* eff = nullptr;
  ALPA_RETURN_IF_ERROR(r.Find("efficiency", Presence::kOptional, &eff));
  if (eff != nullptr) {
    ObjectReader e(*eff, r.Sub("efficiency"));
    ALPA_RETURN_IF_ERROR(e.CheckObject());
    ALPA_RETURN_IF_ERROR(e.Double("matmul", Presence::kOptional, &c->matmul_efficiency));
    ALPA_RETURN_IF_ERROR(e.Double("convolution", Presence::kOptional, &c->convolution_efficiency));
    ALPA_RETURN_IF_ERROR(e.Double("elementwise", Presence::kOptional, &c->elementwise_efficiency));
    ALPA_RETURN_IF_ERROR(e.Double("other", Presence::kOptional, &c->other_efficiency));
    ALPA_RETURN_IF_ERROR(e.Double("memory", Presence::kOptional, &c->memory_efficiency));
    ALPA_RETURN_IF_ERROR(e.Double("attention", Presence::kOptional, &c->attention_efficiency));
    ALPA_RETURN_IF_ERROR(e.CheckNoUnknownKeys());
  }
  ALPA_RETURN_IF_ERROR(
      r.Double("op_overhead_seconds", Presence::kOptional, &c->op_overhead_seconds));
  ALPA_RETURN_IF_ERROR(r.Bool("fuse_elementwise", Presence::kOptional, &c->fuse_elementwise));
  ALPA_RETURN_IF_ERROR(r.Bool("fuse_attention", Presence::kOptional, &c->fuse_attention));
  ALPA_RETURN_IF_ERROR(
      r.Bool("single_reader_fusion", Presence::kOptional, &c->single_reader_fusion));
  // Free-text provenance ("measured on p3.16xlarge with cuBLAS 11"), kept out of the struct.
  std::string ignored;
  ALPA_RETURN_IF_ERROR(r.String("comment", Presence::kOptional, &ignored));
  return Status::Ok();
}

// The keys of one device type's cluster after the header: a cluster file without "pools", or
// one pool given as an object.
Status ReadOneTypeFields(ObjectReader& reader, Cluster* cluster) {
  std::string preset;
  ALPA_RETURN_IF_ERROR(reader.String("preset", Presence::kOptional, &preset));
  const bool from_preset = !preset.empty();
  int64_t preset_devices = 0;
  if (from_preset) {
    Result<Cluster> base = MakePresetCluster(preset, 1);
    if (!base.ok()) return Bad(reader.Sub("preset"), base.status().message());
    *cluster = std::move(base).value();
    preset_devices = cluster->devices_per_host;
  } else {
    cluster->hosts = 1;
  }
  ALPA_RETURN_IF_ERROR(reader.String("name", Presence::kOptional, &cluster->name));
  ALPA_RETURN_IF_ERROR(reader.Int("hosts", Presence::kOptional, &cluster->hosts));
  ALPA_RETURN_IF_ERROR(reader.Int("devices_per_host", RequiredWithoutPreset(from_preset),
                                  &cluster->devices_per_host));
  const Json* sub = nullptr;
  ALPA_RETURN_IF_ERROR(reader.Find("device", RequiredWithoutPreset(from_preset), &sub));
  if (sub != nullptr)
    ALPA_RETURN_IF_ERROR(ReadDevice(*sub, reader.Sub("device"), from_preset, &cluster->device));
  ALPA_RETURN_IF_ERROR(reader.Find("intra_host_link", RequiredWithoutPreset(from_preset), &sub));
  if (sub != nullptr) {
    ALPA_RETURN_IF_ERROR(ReadLink(*sub, reader.Sub("intra_host_link"),
                                  RequiredWithoutPreset(from_preset), &cluster->intra_host_link));
  }
  ALPA_RETURN_IF_ERROR(reader.Find("inter_host_link", RequiredWithoutPreset(from_preset), &sub));
  if (sub != nullptr) {
    ALPA_RETURN_IF_ERROR(ReadLink(*sub, reader.Sub("inter_host_link"),
                                  RequiredWithoutPreset(from_preset), &cluster->inter_host_link));
  }
  ALPA_RETURN_IF_ERROR(reader.Int("nics_per_host", Presence::kOptional, &cluster->nics_per_host));
  ALPA_RETURN_IF_ERROR(reader.Find("nic_locality", Presence::kOptional, &sub));
  if (sub != nullptr) {
    ALPA_RETURN_IF_ERROR(ReadNicLocality(*sub, reader.Sub("nic_locality"), &cluster->nic_locality));
  }
  // A host has an NVLink graph or a PCIe tree: either one given replaces the preset's other.
  const Json* pcie = nullptr;
  ALPA_RETURN_IF_ERROR(reader.Find("pcie", Presence::kOptional, &pcie));
  ALPA_RETURN_IF_ERROR(reader.Find("nvlink", Presence::kOptional, &sub));
  // null: none (a preset's removed: "nvlink": null makes a p3 host uniform, NVSwitch-like).
  if (pcie != nullptr) {
    ALPA_RETURN_IF_ERROR(ReadPcie(*pcie, reader.Sub("pcie"), &cluster->pcie));
    if (sub == nullptr && !pcie->is_null()) cluster->nvlink = NvlinkGraph();
  } else if (from_preset) {
    cluster->pcie = ResizedHostTree(cluster->pcie, preset_devices,
                                    std::max<int64_t>(cluster->devices_per_host, 0));
  }
  if (sub != nullptr) {
    if (pcie == nullptr && !sub->is_null()) cluster->pcie = PcieTree();
    ALPA_RETURN_IF_ERROR(ReadNvlink(*sub, reader.Sub("nvlink"), &cluster->nvlink));
    // Without an order: the best one for the graph (once the graph is known to be valid).
    if (!cluster->nvlink.empty() && cluster->nvlink.device_order.empty() &&
        cluster->devices_per_host >= 1 && cluster->devices_per_host <= kMaxDevicesPerHost &&
        ValidateNvlinkGraph(cluster->nvlink, cluster->devices_per_host, reader.Sub("nvlink"))
            .ok()) {
      cluster->nvlink.device_order = BestDeviceOrder(*cluster);
    }
  } else if (from_preset && pcie == nullptr) {
    // A preset with fewer devices per host keeps the first ones of its order (as specs do), with
    // more none.
    cluster->nvlink = ResizedHostGraph(cluster->nvlink, preset_devices,
                                       std::max<int64_t>(cluster->devices_per_host, 0));
  }
  ALPA_RETURN_IF_ERROR(reader.Find("calibration", Presence::kOptional, &sub));
  if (sub != nullptr) {
    ObjectReader cr(*sub, reader.Sub("calibration"));
    ALPA_RETURN_IF_ERROR(cr.CheckObject());
    ALPA_RETURN_IF_ERROR(ReadCalibrationFields(cr, &cluster->calibration));
    ALPA_RETURN_IF_ERROR(cr.CheckNoUnknownKeys());
  }
  return reader.CheckNoUnknownKeys();
}

// One element of "pools" at `path`: a preset spec string or a cluster object of one device type.
Result<Cluster> ReadPool(const Json& json, const std::string& path) {
  if (json.is_string()) {
    Result<Cluster> pool = ParseClusterSpec(json.get<std::string>());
    if (!pool.ok()) return Status(pool.status().code(), path + ": " + pool.status().message());
    return pool;
  }
  if (!json.is_object()) return Bad(path, "expected a cluster object or a preset spec string");
  ObjectReader reader(json, path);
  ALPA_RETURN_IF_ERROR(reader.Header(kClusterFormat));
  const Json* nested = nullptr;
  ALPA_RETURN_IF_ERROR(reader.Find("pools", Presence::kOptional, &nested));
  if (nested != nullptr) return Bad(reader.Sub("pools"), "a pool cannot have pools of its own");
  Cluster pool;
  ALPA_RETURN_IF_ERROR(ReadOneTypeFields(reader, &pool));
  ALPA_RETURN_IF_ERROR(ValidateCluster(pool, path));
  return pool;
}

// The keys a mixed cluster takes from its pools, refused beside "pools".
constexpr const char* kPoolFields[] = {"preset",        "hosts",           "devices_per_host",
                                       "device",        "intra_host_link", "inter_host_link",
                                       "nics_per_host", "nic_locality",    "nvlink",
                                       "pcie",          "calibration"};

// A cluster file with "pools" (docs/cluster-format.md "Mixed clusters"), after the header.
Result<Cluster> ReadMixedCluster(ObjectReader& reader, const Json& json, const Json& pools_json) {
  for (const char* key : kPoolFields) {
    if (json.contains(key)) {
      return Bad("cluster", "\"" + std::string(key) +
                                "\" is not allowed beside \"pools\" (a mixed cluster's fields "
                                "come from its pools)");
    }
  }
  std::string name;
  ALPA_RETURN_IF_ERROR(reader.String("name", Presence::kOptional, &name));
  ALPA_RETURN_IF_ERROR(reader.CheckNoUnknownKeys());
  const std::string path = reader.Sub("pools");
  if (!pools_json.is_array()) {
    return Bad(path, "expected an array of pools (cluster objects or preset spec strings)");
  }
  // Before reading any: a file of a million preset strings must not build a million clusters.
  if (pools_json.size() > static_cast<size_t>(kMaxPools)) {
    return InvalidArgument(path + ": a mixed cluster has 2 to " + std::to_string(kMaxPools) +
                           " pools (got " + std::to_string(pools_json.size()) + ")");
  }
  std::vector<Cluster> pools;
  for (size_t i = 0; i < pools_json.size(); ++i) {
    Result<Cluster> pool = ReadPool(pools_json[i], path + "[" + std::to_string(i) + "]");
    if (!pool.ok()) return pool.status();
    pools.push_back(std::move(pool).value());
  }
  return MakeMixedCluster(std::move(pools), std::move(name));
}

Result<Cluster> ClusterFromJsonUnchecked(const Json& json) {
  ObjectReader reader(json, "cluster");
  ALPA_RETURN_IF_ERROR(reader.CheckObject());
  ALPA_RETURN_IF_ERROR(reader.Header(kClusterFormat));
  const Json* pools = nullptr;
  ALPA_RETURN_IF_ERROR(reader.Find("pools", Presence::kOptional, &pools));
  if (pools != nullptr) return ReadMixedCluster(reader, json, *pools);
  Cluster cluster;
  ALPA_RETURN_IF_ERROR(ReadOneTypeFields(reader, &cluster));
  ALPA_RETURN_IF_ERROR(ValidateCluster(cluster));
  return cluster;
}

// Cluster and calibration files are tiny; anything nested this deep is not one.
constexpr int kMaxDepth = 64;

Result<JsonDocument> Parse(std::string_view bytes, const char* what) {
  ALPA_RETURN_IF_ERROR(CheckJsonNesting(bytes, kMaxDepth, what));
  Result<JsonDocument> json = ParseJsonDocument(bytes);
  if (json.ok()) return json;
  if (json.status().code() == StatusCode::kOutOfMemory) {
    return Status(StatusCode::kOutOfMemory, std::string("out of memory while parsing ") + what);
  }
  return ParseError(std::string(what) + ": invalid JSON: " + json.status().message());
}

// ReadFileBytes's limit errors do not name the file; its other errors do.
Result<std::string> ReadBytes(const std::string& path) {
  Result<std::string> bytes = ReadFileBytes(path);
  if (bytes.ok() || bytes.status().code() != StatusCode::kParse) return bytes;
  return Status(StatusCode::kParse, path + ": " + bytes.status().message());
}

template <typename T>
Result<T> Prefixed(Result<T> r, const std::string& path) {
  if (r.ok()) return r;
  return Status(r.status().code(), path + ": " + r.status().message());
}

Json CalibrationFields(const Calibration& c) {
  Json j = Json::object();
  j["efficiency"] = {{"matmul", c.matmul_efficiency},
                     {"convolution", c.convolution_efficiency},
                     {"elementwise", c.elementwise_efficiency},
                     {"other", c.other_efficiency},
                     {"memory", c.memory_efficiency}};
  // Written only when measured, as single_reader_fusion below.
  if (c.attention_efficiency > 0) j["efficiency"]["attention"] = c.attention_efficiency;
  j["op_overhead_seconds"] = c.op_overhead_seconds;
  j["fuse_elementwise"] = c.fuse_elementwise;
  j["fuse_attention"] = c.fuse_attention;
  // Written only when set: files of clusters without it stay as earlier versions wrote them
  // (and read them).
  if (c.single_reader_fusion) j["single_reader_fusion"] = true;
  return j;
}

}  // namespace

Result<Cluster> ClusterFromJson(const nlohmann::json& json) {
  try {
    return ClusterFromJsonUnchecked(json);
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kOutOfMemory, "out of memory while reading the cluster");
  } catch (const std::exception& e) {
    return ParseError("cluster: " + JsonErrorMessage(e.what()));
  }
}

Result<Cluster> ReadClusterBuffer(std::string_view bytes) {
  Result<JsonDocument> json = Parse(bytes, "cluster");
  if (!json.ok()) return json.status();
  return ClusterFromJson(json.value().root());
}

Result<Cluster> ReadClusterFile(const std::string& path) {
  Result<std::string> bytes = ReadBytes(path);
  if (!bytes.ok()) return bytes.status();
  return Prefixed(ReadClusterBuffer(bytes.value()), path);
}

nlohmann::json ClusterToJson(const Cluster& c) {
  if (c.mixed()) {
    // The merged fields are derived: only the pools are written.
    Json pools = Json::array();
    for (const Cluster& pool : c.pools) pools.push_back(ClusterToJson(pool));
    return {{"format", kClusterFormat}, {"version", kVersion}, {"name", c.name}, {"pools", pools}};
  }
  Json peaks = Json::object();
  for (int32_t i = 0; i < kNumDTypes; ++i) {
    peaks[DTypeName(static_cast<DType>(i))] = c.device.peak_flops[static_cast<size_t>(i)];
  }
  Json j = Json::object();
  j["format"] = kClusterFormat;
  j["version"] = kVersion;
  j["name"] = c.name;
  j["hosts"] = c.hosts;
  j["devices_per_host"] = c.devices_per_host;
  j["device"] = {{"name", c.device.name},
                 {"memory_bytes", c.device.memory_bytes},
                 {"memory_bandwidth", c.device.memory_bandwidth},
                 {"peak_flops", peaks}};
  j["intra_host_link"] = {{"bandwidth", c.intra_host_link.bandwidth},
                          {"latency", c.intra_host_link.latency}};
  j["inter_host_link"] = {{"bandwidth", c.inter_host_link.bandwidth},
                          {"latency", c.inter_host_link.latency}};
  // Only where set: clusters without them write what they always wrote.
  if (c.nics_per_host != 1) j["nics_per_host"] = c.nics_per_host;
  if (!c.nic_locality.empty()) {
    j["nic_locality"] = {{"near_devices", c.nic_locality.near_devices},
                         {"far_bandwidth", c.nic_locality.far_bandwidth}};
  }
  if (!c.nvlink.empty()) {
    Json links = Json::array();
    for (const NvlinkGraph::Link& link : c.nvlink.links) {
      links.push_back({{"devices", {link.a, link.b}}, {"bandwidth", link.bandwidth}});
    }
    j["nvlink"] = {{"links", std::move(links)}, {"pcie_bandwidth", c.nvlink.pcie_bandwidth}};
    // Always written (the identity too): a file without it gets the best order when read.
    std::vector<int64_t> order = c.nvlink.device_order;
    if (order.empty()) {
      for (int64_t l = 0; l < c.devices_per_host; ++l) order.push_back(l);
    }
    j["nvlink"]["device_order"] = order;
  }
  if (!c.pcie.empty()) {
    j["pcie"] = {{"switches", c.pcie.switches}, {"uplink_bandwidth", c.pcie.uplink_bandwidth}};
    if (!c.pcie.switch_sockets.empty()) j["pcie"]["switch_sockets"] = c.pcie.switch_sockets;
    if (c.pcie.socket_bandwidth != 0) j["pcie"]["socket_bandwidth"] = c.pcie.socket_bandwidth;
  }
  j["calibration"] = CalibrationFields(c.calibration);
  return j;
}

Result<std::string> WriteCluster(const Cluster& cluster) {
  ALPA_RETURN_IF_ERROR(ValidateCluster(cluster));
  try {
    // Invalid UTF-8 in a name is replaced rather than thrown on.
    return ClusterToJson(cluster).dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kOutOfMemory, "out of memory while writing the cluster");
  } catch (const std::exception& e) {
    return InternalError(std::string("writing the cluster: ") + e.what());
  }
}

Result<Calibration> CalibrationFromJson(const nlohmann::json& json, const Calibration& base,
                                        const std::string& where) {
  try {
    ObjectReader r(json, where);
    ALPA_RETURN_IF_ERROR(r.CheckObject());
    ALPA_RETURN_IF_ERROR(r.Header(kCalibrationFormat));
    Calibration c = base;
    ALPA_RETURN_IF_ERROR(ReadCalibrationFields(r, &c));
    ALPA_RETURN_IF_ERROR(r.CheckNoUnknownKeys());
    ALPA_RETURN_IF_ERROR(ValidateCalibration(c, where));
    return c;
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kOutOfMemory, "out of memory while reading the calibration");
  } catch (const std::exception& e) {
    return ParseError(where + ": " + JsonErrorMessage(e.what()));
  }
}

Result<Calibration> ReadCalibrationBuffer(std::string_view bytes, const Calibration& base) {
  Result<JsonDocument> json = Parse(bytes, "calibration");
  if (!json.ok()) return json.status();
  return CalibrationFromJson(json.value().root(), base);
}

Result<Calibration> ReadCalibrationFile(const std::string& path, const Calibration& base) {
  Result<std::string> bytes = ReadBytes(path);
  if (!bytes.ok()) return bytes.status();
  return Prefixed(ReadCalibrationBuffer(bytes.value(), base), path);
}

Result<Cluster> ApplyCalibrationBuffer(const Cluster& cluster, std::string_view bytes) {
  Result<JsonDocument> json = Parse(bytes, "calibration");
  if (!json.ok()) return json.status();
  if (!cluster.mixed()) {
    Result<Calibration> calibration = CalibrationFromJson(json.value().root(), cluster.calibration);
    if (!calibration.ok()) return calibration.status();
    Cluster calibrated = cluster;
    calibrated.calibration = calibration.value();
    return calibrated;
  }
  try {
    std::vector<Cluster> pools = cluster.pools;
    for (Cluster& pool : pools) {
      Result<Calibration> calibration = CalibrationFromJson(json.value().root(), pool.calibration);
      if (!calibration.ok()) return calibration.status();
      pool.calibration = calibration.value();
    }
    return MakeMixedCluster(std::move(pools), cluster.name);
  } catch (const std::bad_alloc&) {
    return Status(StatusCode::kOutOfMemory, "out of memory while applying the calibration");
  }
}

nlohmann::json CalibrationToJson(const Calibration& calibration) {
  Json j = CalibrationFields(calibration);
  j["format"] = kCalibrationFormat;
  j["version"] = kVersion;
  return j;
}

std::string WriteCalibration(const Calibration& calibration) {
  return CalibrationToJson(calibration).dump(2) + "\n";
}

}  // namespace alpa
