package alpa

/*
#include <stdlib.h>
#include "alpa_experimental.h"
*/
import "C"

import (
	"os"
	"runtime"
	"strconv"
	"strings"
)

// Cluster is hosts x devices-per-host identical devices, their links and the roofline
// calibration (docs/cluster-format.md). Immutable; may be shared between goroutines.
type Cluster struct {
	p *C.alpa_cluster
}

func newCluster(p *C.alpa_cluster) *Cluster {
	x := &Cluster{p: p}
	handleCreated()
	runtime.SetFinalizer(x, (*Cluster).Close)
	return x
}

// Close frees the cluster. Idempotent. Meshes created from it stay valid.
func (x *Cluster) Close() error {
	if x.p != nil {
		C.alpa_cluster_destroy(x.p)
		x.p = nil
		runtime.SetFinalizer(x, nil)
		handleFreed()
	}
	return nil
}

// ClusterPresets lists the canonical names of the built-in presets ("p3.16xlarge", ...).
func ClusterPresets() []string {
	n := int(C.alpa_cluster_preset_count())
	out := make([]string, n)
	for i := range out {
		out[i] = C.GoString(C.alpa_cluster_preset_name(C.int32_t(i)))
	}
	return out
}

// NewClusterPreset makes a preset cluster. spec is a preset name, optionally with options
// ("p3.16xlarge:hosts=8", "dgx-h100:hosts=2,devices_per_host=4"); hosts > 0 overrides the host
// count, 0 keeps the spec's.
func NewClusterPreset(spec string, hosts int64) (*Cluster, error) {
	cs := cString(spec)
	defer freeCString(cs)
	var p *C.alpa_cluster
	var e *C.alpa_error
	if err := takeError(C.alpa_cluster_create_preset(&p, cs, C.int64_t(hosts), &e), e); err != nil {
		return nil, err
	}
	return newCluster(p), nil
}

// ReadClusterFile reads a cluster JSON file.
func ReadClusterFile(path string) (*Cluster, error) {
	cp := cString(path)
	defer freeCString(cp)
	var p *C.alpa_cluster
	var e *C.alpa_error
	if err := takeError(C.alpa_cluster_read_file(&p, cp, &e), e); err != nil {
		return nil, err
	}
	return newCluster(p), nil
}

// ReadCluster reads a cluster from JSON bytes.
func ReadCluster(data []byte) (*Cluster, error) {
	var p *C.alpa_cluster
	var e *C.alpa_error
	st := C.alpa_cluster_read_buffer(&p, bytesPtr(data), C.size_t(len(data)), &e)
	runtime.KeepAlive(data)
	if err := takeError(st, e); err != nil {
		return nil, err
	}
	return newCluster(p), nil
}

// OpenCluster reads a cluster as the CLI's --cluster does: an existing file is a cluster JSON
// file; "PRESET:HOSTS" ("p3.16xlarge:2") is a preset with a host count; anything else is a
// preset spec ("p3.16xlarge:hosts=2,devices_per_host=4").
func OpenCluster(text string) (*Cluster, error) {
	if st, err := os.Stat(text); err == nil && !st.IsDir() {
		return ReadClusterFile(text)
	}
	if i := strings.IndexByte(text, ':'); i >= 0 {
		tail := text[i+1:]
		if tail != "" && len(tail) <= 9 && strings.Trim(tail, "0123456789") == "" {
			hosts, _ := strconv.ParseInt(tail, 10, 64)
			if hosts < 1 {
				return nil, statusError(StatusInvalidArgument, "cluster \""+text+"\" needs at least one host")
			}
			return NewClusterPreset(text[:i], hosts)
		}
	}
	return NewClusterPreset(text, 0)
}

// ApplyCalibration returns a copy of the cluster whose calibration is overridden by a
// calibration JSON document.
func (x *Cluster) ApplyCalibration(data []byte) (*Cluster, error) {
	if x.p == nil {
		return nil, closedError("Cluster")
	}
	var p *C.alpa_cluster
	var e *C.alpa_error
	st := C.alpa_cluster_apply_calibration(&p, x.p, bytesPtr(data), C.size_t(len(data)), &e)
	keepAlive(x, data)
	if err := takeError(st, e); err != nil {
		return nil, err
	}
	return newCluster(p), nil
}

// JSON is the cluster as a JSON document (reading it back gives the same cluster).
func (x *Cluster) JSON() ([]byte, error) {
	if x.p == nil {
		return nil, closedError("Cluster")
	}
	var b *C.alpa_buffer
	var e *C.alpa_error
	st := C.alpa_cluster_to_json(&b, x.p, &e)
	runtime.KeepAlive(x)
	if err := takeError(st, e); err != nil {
		return nil, err
	}
	return takeBuffer(b), nil
}

// Name is the cluster's name ("p3.16xlarge").
func (x *Cluster) Name() string {
	s := C.GoString(C.alpa_cluster_name(x.p))
	runtime.KeepAlive(x)
	return s
}

// Hosts is the number of hosts.
func (x *Cluster) Hosts() int64 {
	v := int64(C.alpa_cluster_hosts(x.p))
	runtime.KeepAlive(x)
	return v
}

// DevicesPerHost is the number of devices of each host.
func (x *Cluster) DevicesPerHost() int64 {
	v := int64(C.alpa_cluster_devices_per_host(x.p))
	runtime.KeepAlive(x)
	return v
}

// Devices is Hosts * DevicesPerHost.
func (x *Cluster) Devices() int64 { return x.Hosts() * x.DevicesPerHost() }

// DeviceMemoryBytes is the memory of one device.
func (x *Cluster) DeviceMemoryBytes() int64 {
	v := int64(C.alpa_cluster_device_memory_bytes(x.p))
	runtime.KeepAlive(x)
	return v
}

// DeviceMemoryBandwidth is bytes per second of one device's memory.
func (x *Cluster) DeviceMemoryBandwidth() float64 {
	v := float64(C.alpa_cluster_device_memory_bandwidth(x.p))
	runtime.KeepAlive(x)
	return v
}

// PeakFLOPS is the peak FLOP/s of one device for a dtype (NaN for an unknown dtype).
func (x *Cluster) PeakFLOPS(dtype DType) float64 {
	v := float64(C.alpa_cluster_peak_flops(x.p, C.int32_t(dtype)))
	runtime.KeepAlive(x)
	return v
}

// Mesh is a logical mesh: a 1-D or 2-D view of a submesh with a latency (alpha) and an inverse
// bandwidth (beta) per dimension. Immutable; may be shared between goroutines.
type Mesh struct {
	p *C.alpa_mesh
}

func newMesh(p *C.alpa_mesh) *Mesh {
	x := &Mesh{p: p}
	handleCreated()
	runtime.SetFinalizer(x, (*Mesh).Close)
	return x
}

// Close frees the mesh. Idempotent.
func (x *Mesh) Close() error {
	if x.p != nil {
		C.alpa_mesh_destroy(x.p)
		x.p = nil
		runtime.SetFinalizer(x, nil)
		handleFreed()
	}
	return nil
}

// NewMesh views the submesh submeshHosts x submeshDevicesPerHost of the cluster as a logical
// mesh of shape (1 or 2 dims; product = the submesh's devices).
func NewMesh(cluster *Cluster, submeshHosts, submeshDevicesPerHost int64, shape []int64) (*Mesh, error) {
	if cluster == nil || cluster.p == nil {
		return nil, closedError("Cluster")
	}
	var p *C.alpa_mesh
	var e *C.alpa_error
	st := C.alpa_mesh_create(&p, cluster.p, C.int64_t(submeshHosts), C.int64_t(submeshDevicesPerHost),
		C.int32_t(len(shape)), i64Ptr(shape), &e)
	keepAlive(cluster, shape)
	if err := takeError(st, e); err != nil {
		return nil, err
	}
	return newMesh(p), nil
}

// NewAbstractMesh is a logical mesh in Alpa's abstract units; alpha and beta may be nil (Alpa's
// defaults) or have one entry per dimension.
func NewAbstractMesh(shape []int64, alpha, beta []float64) (*Mesh, error) {
	if (alpha != nil && len(alpha) != len(shape)) || (beta != nil && len(beta) != len(shape)) {
		return nil, statusError(StatusInvalidArgument, "NewAbstractMesh: alpha and beta need one entry per mesh dimension")
	}
	var p *C.alpa_mesh
	var e *C.alpa_error
	st := C.alpa_mesh_create_abstract(&p, C.int32_t(len(shape)), i64Ptr(shape), f64Ptr(alpha), f64Ptr(beta), &e)
	keepAlive(shape, alpha, beta)
	if err := takeError(st, e); err != nil {
		return nil, err
	}
	return newMesh(p), nil
}

// MeshDimFlattened names all mesh dimensions at once in Alpha and Beta.
const MeshDimFlattened = int(C.ALPA_MESH_DIM_FLATTENED)

// Shape is the devices along each dimension.
func (x *Mesh) Shape() []int64 {
	n := int(C.alpa_mesh_ndim(x.p))
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(C.alpa_mesh_dim_size(x.p, C.int32_t(i)))
	}
	runtime.KeepAlive(x)
	return out
}

// Alpha is the latency (seconds, or Alpa's units) of a dimension or MeshDimFlattened.
func (x *Mesh) Alpha(dim int) float64 {
	v := float64(C.alpa_mesh_alpha(x.p, C.int32_t(dim)))
	runtime.KeepAlive(x)
	return v
}

// Beta is the inverse bandwidth of a dimension or MeshDimFlattened.
func (x *Mesh) Beta(dim int) float64 {
	v := float64(C.alpa_mesh_beta(x.p, C.int32_t(dim)))
	runtime.KeepAlive(x)
	return v
}
