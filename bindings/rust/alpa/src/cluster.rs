//! Clusters (presets or JSON files) and logical meshes.
use crate::error::{check, Result};
use crate::util::{buffer_string, cstring, static_str, string_from};
use alpa_sys as sys;
use std::os::raw::c_char;
use std::path::Path;
use std::ptr;

/// A cluster: hosts x devices per host, links and the cost model's calibration. Immutable.
pub struct Cluster {
    ptr: *mut sys::alpa_cluster,
}

// SAFETY: docs/threading.md: "clusters and meshes are immutable from creation
// (`alpa_cluster_apply_calibration` returns a new handle)". No call mutates a cluster.
unsafe impl Send for Cluster {}
// SAFETY: the same sentence ("clusters and meshes are immutable from creation").
unsafe impl Sync for Cluster {}

impl Drop for Cluster {
    fn drop(&mut self) {
        // SAFETY: owned handle, freed once (meshes made from it stay valid).
        unsafe { sys::alpa_cluster_destroy(self.ptr) }
    }
}

impl Cluster {
    /// A preset ("p3.16xlarge", "dgx-a100-80g", ..., with options "p3.16xlarge:hosts=8");
    /// `hosts` > 0 overrides the host count, 0 keeps the spec's.
    pub fn preset(spec: &str, hosts: i64) -> Result<Cluster> {
        let c = cstring(spec, "cluster spec")?;
        let mut out = ptr::null_mut();
        // SAFETY: NUL-terminated spec.
        check(|err| unsafe { sys::alpa_cluster_create_preset(&mut out, c.as_ptr(), hosts, err) })?;
        Ok(Cluster { ptr: out })
    }

    /// A cluster as the CLI's `--cluster` reads it: an existing file is a cluster JSON file;
    /// `PRESET:HOSTS` (digits after the colon) a preset with that many hosts; anything else a
    /// preset spec ("p3.16xlarge:hosts=2,devices_per_host=4").
    pub fn from_spec(text: &str) -> Result<Cluster> {
        if Path::new(text).is_file() {
            return Cluster::read_file(text);
        }
        if let Some(colon) = text.find(':') {
            let tail = &text[colon + 1..];
            if !tail.is_empty() && tail.len() <= 9 && tail.bytes().all(|b| b.is_ascii_digit()) {
                let hosts: i64 = tail.parse().unwrap_or(0);
                if hosts < 1 {
                    return Err(crate::Error::new(
                        crate::ErrorKind::InvalidArgument,
                        format!("cluster \"{}\" needs at least one host", text),
                    ));
                }
                return Cluster::preset(&text[..colon], hosts);
            }
        }
        Cluster::preset(text, 0)
    }

    /// Reads a cluster JSON file (docs/cluster-format.md).
    pub fn read_file<P: AsRef<Path>>(path: P) -> Result<Cluster> {
        let c = cstring(&path.as_ref().to_string_lossy(), "path")?;
        let mut out = ptr::null_mut();
        // SAFETY: NUL-terminated path.
        check(|err| unsafe { sys::alpa_cluster_read_file(&mut out, c.as_ptr(), err) })?;
        Ok(Cluster { ptr: out })
    }

    /// Reads a cluster from JSON bytes.
    pub fn from_bytes(data: &[u8]) -> Result<Cluster> {
        let mut out = ptr::null_mut();
        // SAFETY: data[size].
        check(|err| unsafe {
            sys::alpa_cluster_read_buffer(&mut out, data.as_ptr() as *const c_char, data.len(), err)
        })?;
        Ok(Cluster { ptr: out })
    }

    /// A copy with its calibration overridden by a calibration JSON document.
    pub fn with_calibration(&self, calibration: &[u8]) -> Result<Cluster> {
        let mut out = ptr::null_mut();
        // SAFETY: data[size]; self is only read.
        check(|err| unsafe {
            sys::alpa_cluster_apply_calibration(
                &mut out,
                self.ptr,
                calibration.as_ptr() as *const c_char,
                calibration.len(),
                err,
            )
        })?;
        Ok(Cluster { ptr: out })
    }

    /// The cluster as JSON (every field).
    pub fn to_json(&self) -> Result<String> {
        // SAFETY: live handle.
        buffer_string(|out, err| unsafe { sys::alpa_cluster_to_json(out, self.ptr, err) })
    }

    /// The cluster's name.
    pub fn name(&self) -> String {
        // SAFETY: valid while the cluster lives; copied.
        unsafe { string_from(sys::alpa_cluster_name(self.ptr)) }
    }
    /// Hosts.
    pub fn hosts(&self) -> i64 {
        // SAFETY: getter.
        unsafe { sys::alpa_cluster_hosts(self.ptr) }
    }
    /// Devices per host.
    pub fn devices_per_host(&self) -> i64 {
        // SAFETY: getter.
        unsafe { sys::alpa_cluster_devices_per_host(self.ptr) }
    }
    /// All devices (hosts x devices per host).
    pub fn devices(&self) -> i64 {
        self.hosts() * self.devices_per_host()
    }
    /// Memory of one device in bytes.
    pub fn device_memory_bytes(&self) -> i64 {
        // SAFETY: getter.
        unsafe { sys::alpa_cluster_device_memory_bytes(self.ptr) }
    }
    /// Bytes per second of one device's memory.
    pub fn device_memory_bandwidth(&self) -> f64 {
        // SAFETY: getter.
        unsafe { sys::alpa_cluster_device_memory_bandwidth(self.ptr) }
    }
    /// Peak FLOP/s of one device for an `ALPA_DTYPE_*` (NaN for an unknown dtype).
    pub fn peak_flops(&self, dtype: i32) -> f64 {
        // SAFETY: getter.
        unsafe { sys::alpa_cluster_peak_flops(self.ptr, dtype) }
    }

    pub(crate) fn as_ptr(&self) -> *const sys::alpa_cluster {
        self.ptr
    }
}

/// The canonical names of the built-in cluster presets.
pub fn cluster_presets() -> Vec<&'static str> {
    // SAFETY: static storage.
    unsafe {
        (0..sys::alpa_cluster_preset_count()).map(|i| static_str(sys::alpa_cluster_preset_name(i))).collect()
    }
}

/// A logical mesh: a 1-D or 2-D view of devices with alpha / beta per dimension. Immutable.
pub struct Mesh {
    ptr: *mut sys::alpa_mesh,
}

// SAFETY: docs/threading.md: "clusters and meshes are immutable from creation".
unsafe impl Send for Mesh {}
// SAFETY: docs/threading.md: "clusters and meshes are immutable from creation".
unsafe impl Sync for Mesh {}

impl Drop for Mesh {
    fn drop(&mut self) {
        // SAFETY: owned handle, freed once.
        unsafe { sys::alpa_mesh_destroy(self.ptr) }
    }
}

impl Mesh {
    /// The logical mesh viewing a submesh (`hosts` x `devices_per_host` of the cluster) as
    /// `shape` (1 or 2 dims, product = the submesh's devices), costs from the cluster's links.
    pub fn new(cluster: &Cluster, hosts: i64, devices_per_host: i64, shape: &[i64]) -> Result<Mesh> {
        let mut out = ptr::null_mut();
        // SAFETY: shape[ndim], copied; cluster only read.
        check(|err| unsafe {
            sys::alpa_mesh_create(
                &mut out,
                cluster.ptr,
                hosts,
                devices_per_host,
                shape.len() as i32,
                shape.as_ptr(),
                err,
            )
        })?;
        Ok(Mesh { ptr: out })
    }

    /// A mesh in Alpa's abstract units; `alpha_beta` `None` gives Alpa's defaults.
    pub fn abstract_units(shape: &[i64], alpha_beta: Option<(&[f64], &[f64])>) -> Result<Mesh> {
        if let Some((a, b)) = alpha_beta {
            if a.len() != shape.len() || b.len() != shape.len() {
                return Err(crate::Error::new(
                    crate::ErrorKind::InvalidArgument,
                    format!(
                        "abstract mesh: {} dims but {} alphas and {} betas",
                        shape.len(),
                        a.len(),
                        b.len()
                    ),
                ));
            }
        }
        let (alpha, beta) = alpha_beta.map_or((ptr::null(), ptr::null()), |(a, b)| (a.as_ptr(), b.as_ptr()));
        let mut out = ptr::null_mut();
        // SAFETY: shape, alpha, beta have ndim entries (checked) or are NULL.
        check(|err| unsafe {
            sys::alpa_mesh_create_abstract(&mut out, shape.len() as i32, shape.as_ptr(), alpha, beta, err)
        })?;
        Ok(Mesh { ptr: out })
    }

    /// Number of dimensions.
    pub fn ndim(&self) -> i32 {
        // SAFETY: getter.
        unsafe { sys::alpa_mesh_ndim(self.ptr) }
    }
    /// The devices along each dimension.
    pub fn shape(&self) -> Vec<i64> {
        // SAFETY: getter.
        (0..self.ndim()).map(|d| unsafe { sys::alpa_mesh_dim_size(self.ptr, d) }).collect()
    }
    /// Alpha of a dimension (or `sys::ALPA_MESH_DIM_FLATTENED`).
    pub fn alpha(&self, dim: i32) -> f64 {
        // SAFETY: getter.
        unsafe { sys::alpa_mesh_alpha(self.ptr, dim) }
    }
    /// Beta of a dimension (or `sys::ALPA_MESH_DIM_FLATTENED`).
    pub fn beta(&self, dim: i32) -> f64 {
        // SAFETY: getter.
        unsafe { sys::alpa_mesh_beta(self.ptr, dim) }
    }

    pub(crate) fn as_ptr(&self) -> *const sys::alpa_mesh {
        self.ptr
    }
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cluster")
            .field("name", &self.name())
            .field("hosts", &self.hosts())
            .field("devices_per_host", &self.devices_per_host())
            .finish()
    }
}

impl std::fmt::Debug for Mesh {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mesh").field("shape", &self.shape()).finish()
    }
}
