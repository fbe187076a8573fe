//! Pipeline planning (Alpa's two-level search): plans of a model-zoo spec or a graph on a
//! cluster, their stages, transfers and layouts, and plan JSON.
use crate::cluster::Cluster;
use crate::error::{check, Error, ErrorKind, Result};
use crate::graph::Graph;
use crate::progress::{self, CancelToken, PlanCallback, PlanProgress};
use crate::shard::{collectives_of, Collective};
use crate::simulate::{Schedule, Simulation};
use crate::util::{buffer_string, cstring, fill};
use alpa_sys as sys;
use std::ops::RangeInclusive;
use std::os::raw::c_void;
use std::ptr;

/// A recomputation choice (`ALPA_REMAT_*`): what [`PlanOptions::remat`] asks the planner for,
/// what [`ManualPlan::remat`] states for every stage and what [`Stage::recompute`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Remat {
    /// Per stage, the planner's choice among the others (the default of [`PlanOptions`]).
    Search,
    /// Nothing recomputed: every activation the backward reads is kept.
    Off,
    /// Full: every forward recomputed in the backward.
    On,
    /// Selective (Megatron-LM's): only the attention cores (scores, softmax, their product with
    /// V) recomputed, the rest kept.
    Selective,
}

impl Remat {
    /// The kind of `alpa_stage_info.remat` / `alpa_manual_plan.remat` (0 none, 1 full,
    /// 2 selective); `Search` for a kind this crate does not know (a newer library).
    fn from_kind(kind: i32) -> Remat {
        match kind {
            0 => Remat::Off,
            1 => Remat::On,
            2 => Remat::Selective,
            _ => Remat::Search,
        }
    }

    /// The name the "remat" option takes ("search", "off", "on", "selective").
    pub fn as_str(self) -> &'static str {
        match self {
            Remat::Search => "search",
            Remat::Off => "off",
            Remat::On => "on",
            Remat::Selective => "selective",
        }
    }
}

impl std::fmt::Display for Remat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Planner options (`ALPA_PLAN_OPT_*`), a cancel token and a progress callback.
pub struct PlanOptions {
    ptr: *mut sys::alpa_plan_options,
    token: Option<CancelToken>,
    callback: Option<Box<PlanCallback>>,
}

// SAFETY: docs/threading.md: "Options objects may be shared read-only by concurrent solves."
// Setters take `&mut self`, planning calls `&PlanOptions`; the callback is `Send` and called
// under a mutex; the token is `Send + Sync`.
unsafe impl Send for PlanOptions {}
// SAFETY: the same sentence ("Options objects may be shared read-only by concurrent solves").
unsafe impl Sync for PlanOptions {}

impl Drop for PlanOptions {
    fn drop(&mut self) {
        // SAFETY: owned handle, freed once, before the callback box and token it points to.
        unsafe { sys::alpa_plan_options_destroy(self.ptr) }
    }
}

impl PlanOptions {
    /// The defaults (microbatches searched, all threads, local search, remat searched, ...).
    pub fn new() -> Result<PlanOptions> {
        let mut out = ptr::null_mut();
        // SAFETY: valid out-parameters.
        check(|err| unsafe { sys::alpa_plan_options_create(&mut out, err) })?;
        Ok(PlanOptions { ptr: out, token: None, callback: None })
    }

    /// Sets an `ALPA_PLAN_OPT_*` key from an integer.
    pub fn set_int(&mut self, key: i32, value: i64) -> Result<&mut Self> {
        // SAFETY: exclusive access.
        check(|err| unsafe { sys::alpa_plan_options_set_int(self.ptr, key, value, err) })?;
        Ok(self)
    }

    /// Sets an `ALPA_PLAN_OPT_*` key from a double.
    pub fn set_double(&mut self, key: i32, value: f64) -> Result<&mut Self> {
        // SAFETY: exclusive access.
        check(|err| unsafe { sys::alpa_plan_options_set_double(self.ptr, key, value, err) })?;
        Ok(self)
    }

    /// Sets an option by name ("microbatches", "remat", "threads", ...).
    pub fn set(&mut self, name: &str, value: &str) -> Result<&mut Self> {
        let n = cstring(name, "option name")?;
        let v = cstring(value, "option value")?;
        // SAFETY: NUL-terminated strings, copied.
        check(|err| unsafe { sys::alpa_plan_options_set_by_name(self.ptr, n.as_ptr(), v.as_ptr(), err) })?;
        Ok(self)
    }

    /// Layer groups (0: the graph's, at most 16).
    pub fn num_layers(&mut self, layers: i64) -> Result<&mut Self> {
        self.set_int(sys::ALPA_PLAN_OPT_NUM_LAYERS, layers)
    }
    /// Microbatches per iteration (0: searched over powers of two).
    pub fn microbatches(&mut self, microbatches: i64) -> Result<&mut Self> {
        self.set_int(sys::ALPA_PLAN_OPT_MICROBATCHES, microbatches)
    }
    /// The largest microbatch count the search tries.
    pub fn max_microbatches(&mut self, microbatches: i64) -> Result<&mut Self> {
        self.set_int(sys::ALPA_PLAN_OPT_MAX_MICROBATCHES, microbatches)
    }
    /// Threads (0: all hardware threads).
    pub fn threads(&mut self, threads: i64) -> Result<&mut Self> {
        self.set_int(sys::ALPA_PLAN_OPT_THREADS, threads)
    }
    /// Seconds per intra-op solve (with exact solves).
    pub fn intra_op_time_limit(&mut self, seconds: f64) -> Result<&mut Self> {
        self.set_double(sys::ALPA_PLAN_OPT_INTRA_OP_TIME_LIMIT, seconds)
    }
    /// Prove every intra-op solve with GLPK.
    pub fn intra_op_exact(&mut self, on: bool) -> Result<&mut Self> {
        self.set_int(sys::ALPA_PLAN_OPT_INTRA_OP_EXACT, i64::from(on))
    }
    /// Device memory to fit (0: the cluster's).
    pub fn device_memory_bytes(&mut self, bytes: i64) -> Result<&mut Self> {
        self.set_int(sys::ALPA_PLAN_OPT_DEVICE_MEMORY_BYTES, bytes)
    }
    /// Recomputation: searched per stage (the default), or fixed for every stage.
    pub fn remat(&mut self, remat: Remat) -> Result<&mut Self> {
        let v = match remat {
            Remat::Search => sys::ALPA_REMAT_SEARCH,
            Remat::Off => sys::ALPA_REMAT_OFF,
            Remat::On => sys::ALPA_REMAT_ON,
            Remat::Selective => sys::ALPA_REMAT_SELECTIVE,
        };
        self.set_int(sys::ALPA_PLAN_OPT_REMAT, i64::from(v))
    }

    /// Attaches a cancel token (`None` removes it); the options keep a clone.
    pub fn cancel_token(&mut self, token: Option<&CancelToken>) -> Result<&mut Self> {
        let raw = token.map_or(ptr::null_mut(), |t| t.as_ptr());
        // SAFETY: the token lives while self.token holds its clone.
        check(|err| unsafe { sys::alpa_plan_options_set_cancel_token(self.ptr, raw, err) })?;
        self.token = token.cloned();
        Ok(self)
    }

    /// A progress callback, run on the planning thread; return `false` to cancel. A panic
    /// inside it cancels the call and resumes in the caller once the library has returned.
    pub fn on_progress<F>(&mut self, f: F) -> Result<&mut Self>
    where
        F: FnMut(&PlanProgress) -> bool + Send + 'static,
    {
        let cb = PlanCallback::new(f);
        let user = &*cb as *const PlanCallback as *mut c_void;
        // SAFETY: the box lives in self.callback until replaced after the library lets go.
        check(|err| unsafe {
            sys::alpa_plan_options_set_progress(self.ptr, Some(progress::plan_trampoline), user, err)
        })?;
        self.callback = Some(cb);
        Ok(self)
    }

    /// Removes the progress callback.
    pub fn clear_progress(&mut self) -> Result<&mut Self> {
        // SAFETY: live handle.
        check(|err| unsafe { sys::alpa_plan_options_set_progress(self.ptr, None, ptr::null_mut(), err) })?;
        self.callback = None;
        Ok(self)
    }

    fn raw(options: Option<&PlanOptions>) -> *const sys::alpa_plan_options {
        options.map_or(ptr::null(), |o| o.ptr as *const _)
    }
}

/// A manual (Megatron-LM style) configuration (experimental `alpa_manual_plan`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ManualPlan {
    /// 0: off; 1: optimizer state sharded over the data-parallel devices; 2: gradients too
    /// (reduce-scattered every microbatch, held as shards); 3: the weights too.
    pub zero_stage: i32,
    /// Data-parallel degree.
    pub data_parallel: i64,
    /// Tensor-parallel degree.
    pub tensor_parallel: i64,
    /// Pipeline-parallel degree (stages).
    pub pipeline_parallel: i64,
    /// Microbatches per iteration.
    pub microbatches: i64,
    /// Every stage's recomputation: `Off` (the default), `On` (full) or `Selective` (the
    /// attention cores); `Search` is not a manual choice (`Plan::manual` refuses it).
    pub remat: Remat,
    /// Tensor parallelism inside a host (mesh dim 1).
    pub tensor_inside_host: bool,
    /// Stages per device group: 1 (the default), or v >= 2 for interleaved 1F1B
    /// (`pipeline_parallel` x v stages, stage s on the devices of group s % `pipeline_parallel`;
    /// the plan's schedule is then `Schedule::InterleavedOneForwardOneBackward`).
    pub virtual_stages: i32,
}

impl Default for ManualPlan {
    /// The library's defaults (`alpa_manual_plan_init`): all degrees 1, 1 microbatch.
    fn default() -> ManualPlan {
        let mut raw = sys::alpa_manual_plan::default();
        // SAFETY: writes at most size bytes into raw.
        unsafe {
            sys::alpa_manual_plan_init(&mut raw, std::mem::size_of::<sys::alpa_manual_plan>(), ptr::null_mut());
        }
        ManualPlan::from_raw(&raw)
    }
}

impl ManualPlan {
    fn from_raw(r: &sys::alpa_manual_plan) -> ManualPlan {
        ManualPlan {
            zero_stage: r.zero_stage,
            data_parallel: r.data_parallel,
            tensor_parallel: r.tensor_parallel,
            pipeline_parallel: r.pipeline_parallel,
            microbatches: r.microbatches,
            remat: Remat::from_kind(r.remat),
            tensor_inside_host: r.tensor_inside_host != 0,
            // A version-1 answer ends before the field.
            virtual_stages: if r.version >= 2 { r.virtual_stages } else { 1 },
        }
    }
    fn to_raw(self) -> Result<sys::alpa_manual_plan> {
        let remat = match self.remat {
            Remat::Off => 0,
            Remat::On => 1,
            Remat::Selective => 2,
            Remat::Search => {
                return Err(Error::new(
                    ErrorKind::InvalidArgument,
                    "ManualPlan.remat: Remat::Search is not a manual choice (Off, On or Selective)",
                ))
            }
        };
        Ok(sys::alpa_manual_plan {
            struct_size: std::mem::size_of::<sys::alpa_manual_plan>(),
            version: 2,
            zero_stage: self.zero_stage,
            data_parallel: self.data_parallel,
            tensor_parallel: self.tensor_parallel,
            pipeline_parallel: self.pipeline_parallel,
            microbatches: self.microbatches,
            remat,
            tensor_inside_host: i32::from(self.tensor_inside_host),
            virtual_stages: self.virtual_stages,
            reserved: 0,
        })
    }
}

/// A pipeline plan: stages with their submeshes, logical meshes, layouts and predicted times.
/// Immutable; it holds its own copy of the planned graph.
pub struct Plan {
    ptr: *mut sys::alpa_plan,
}

// SAFETY: docs/threading.md does not list pipeline plans; this relies on alpa.h ("A plan is
// immutable and may be shared between threads.") and on docs/threading.md's "Handles are not
// internally locked" (no thread affinity) together with the fact that no call mutates a plan.
unsafe impl Send for Plan {}
// SAFETY: alpa.h, pipeline planning: "A plan is immutable and may be shared between threads."
unsafe impl Sync for Plan {}

impl Drop for Plan {
    fn drop(&mut self) {
        // SAFETY: owned handle, freed once.
        unsafe { sys::alpa_plan_destroy(self.ptr) }
    }
}

fn planning_call<F>(f: F) -> Result<Plan>
where
    F: FnOnce(*mut *mut sys::alpa_plan, *mut *mut sys::alpa_error) -> i32,
{
    let mut out = ptr::null_mut();
    progress::clear_panic();
    let result = check(|err| f(&mut out, err)).map(|_| Plan { ptr: out });
    progress::resume_panic();
    result
}

impl Plan {
    /// Plans a model-zoo spec ("gpt-2.6b", "gpt:hidden=256,layers=4,...") on a cluster. A bad
    /// spec is `Err(InvalidArgument)` with the library's message; no plan fitting the memory is
    /// `Err(Infeasible)`; a cancellation `Err(Cancelled)`.
    pub fn model(spec: &str, cluster: &Cluster, options: Option<&PlanOptions>) -> Result<Plan> {
        let c = cstring(spec, "model spec")?;
        let o = PlanOptions::raw(options);
        // SAFETY: live handles, only read; the options' callback and token outlive the call.
        planning_call(|out, err| unsafe { sys::alpa_model_plan(out, c.as_ptr(), cluster.as_ptr(), o, err) })
    }

    /// Evaluates a manual configuration of a model-zoo spec (experimental). `Err(InvalidArgument)`
    /// names a bad field (`remat: Remat::Search` among them).
    pub fn manual(spec: &str, cluster: &Cluster, manual: &ManualPlan, options: Option<&PlanOptions>) -> Result<Plan> {
        let c = cstring(spec, "model spec")?;
        let raw = manual.to_raw()?;
        let o = PlanOptions::raw(options);
        // SAFETY: as for `model`; raw is a complete version-1 struct.
        planning_call(|out, err| unsafe {
            sys::alpa_model_plan_manual(out, c.as_ptr(), cluster.as_ptr(), &raw, o, err)
        })
    }

    /// The Megatron-LM baseline: the fastest feasible manual plan of a grid (experimental).
    pub fn baseline(spec: &str, cluster: &Cluster, options: Option<&PlanOptions>) -> Result<Plan> {
        let c = cstring(spec, "model spec")?;
        let o = PlanOptions::raw(options);
        // SAFETY: as for `model`.
        planning_call(|out, err| unsafe {
            sys::alpa_model_plan_baseline(out, c.as_ptr(), cluster.as_ptr(), o, err)
        })
    }

    /// The predicted iteration time in seconds (what the planner ranks plans by).
    pub fn iteration_seconds(&self) -> f64 {
        // SAFETY: getter.
        unsafe { sys::alpa_plan_iteration_seconds(self.ptr) }
    }
    /// Steady-state seconds per microbatch.
    pub fn period_seconds(&self) -> f64 {
        // SAFETY: getter.
        unsafe { sys::alpa_plan_period_seconds(self.ptr) }
    }
    /// The stage DP's objective (without transfers).
    pub fn schedule_seconds(&self) -> f64 {
        // SAFETY: getter.
        unsafe { sys::alpa_plan_schedule_seconds(self.ptr) }
    }
    /// Seconds the planning call took.
    pub fn compile_seconds(&self) -> f64 {
        // SAFETY: getter.
        unsafe { sys::alpa_plan_compile_seconds(self.ptr) }
    }
    /// Microbatches per iteration.
    pub fn microbatches(&self) -> i64 {
        // SAFETY: getter.
        unsafe { sys::alpa_plan_microbatches(self.ptr) }
    }
    /// The name of the pipeline schedule the plan is made for: "1f1b", "zb-h1" where the
    /// zero_bubble option let the planner choose the zero-bubble schedule, or "interleaved-1f1b"
    /// where the interleave option let it choose interleaved 1F1B.
    pub fn schedule(&self) -> &'static str {
        self.pipeline_schedule().name()
    }
    /// The pipeline schedule the plan is made for: its prediction, in-flight counts and memory
    /// assume it, and `simulate(None)` runs it.
    pub fn pipeline_schedule(&self) -> Schedule {
        // SAFETY: getter.
        let v = unsafe { sys::alpa_plan_pipeline_schedule(self.ptr) };
        Schedule::from_raw(v).unwrap_or(Schedule::OneForwardOneBackward)
    }
    /// Stages per device group: 1, or v >= 2 for an interleaved 1F1B plan, whose stage s then
    /// runs on the devices of stage s % (stage_count / v).
    pub fn virtual_stages(&self) -> i32 {
        // SAFETY: getter.
        unsafe { sys::alpa_plan_virtual_stages(self.ptr) }
    }
    /// The largest per-device memory over the stages.
    pub fn peak_memory_bytes(&self) -> i64 {
        // SAFETY: getter.
        unsafe { sys::alpa_plan_peak_memory_bytes(self.ptr) }
    }
    /// Achieved TFLOP/s per device at the predicted iteration time.
    pub fn tflops_per_device(&self) -> f64 {
        // SAFETY: getter.
        unsafe { sys::alpa_plan_tflops_per_device(self.ptr) }
    }
    /// Number of pipeline stages.
    pub fn stage_count(&self) -> usize {
        // SAFETY: getter.
        unsafe { sys::alpa_plan_stage_count(self.ptr).max(0) as usize }
    }

    /// Stage `index`, or `None` out of range.
    pub fn stage(&self, index: usize) -> Option<Stage<'_>> {
        if index >= self.stage_count() {
            return None;
        }
        let mut info = sys::alpa_stage_info::default();
        // SAFETY: info is a whole version-1 struct of element_size bytes.
        let r = check(|err| unsafe {
            sys::alpa_plan_stage(&mut info, std::mem::size_of::<sys::alpa_stage_info>(), self.ptr, index as i32, err)
        });
        r.ok().map(|_| Stage { plan: self, index, info })
    }

    /// The stages in pipeline order, borrowed from the plan.
    pub fn stages(&self) -> Stages<'_> {
        Stages { plan: self, next: 0, end: self.stage_count() }
    }

    /// Per op of the planned graph, the stage computing it (-1 for ops of no layer).
    pub fn op_stages(&self) -> Vec<i32> {
        // SAFETY: count-then-fill.
        fill("alpa_plan_op_stages", |out, cap| unsafe { sys::alpa_plan_op_stages(self.ptr, out, cap) })
            .unwrap_or_default()
    }

    /// The tensors stages send each other each microbatch.
    pub fn transfers(&self) -> Vec<Transfer> {
        let size = std::mem::size_of::<sys::alpa_transfer>();
        // SAFETY: count-then-fill with our element size.
        fill("alpa_plan_transfers", |out, cap| unsafe { sys::alpa_plan_transfers(self.ptr, out, cap, size) })
            .unwrap_or_default()
            .iter()
            .map(|t| Transfer {
                from_stage: t.from_stage,
                to_stage: t.to_stage,
                tensor: t.tensor,
                bytes: t.bytes,
                seconds: t.seconds,
            })
            .collect()
    }

    /// A finalized copy of the planned microbatch graph (its op ids are the ones the per-op
    /// accessors use).
    pub fn graph(&self) -> Result<Graph> {
        let mut out = ptr::null_mut();
        // SAFETY: live handle.
        check(|err| unsafe { sys::alpa_plan_copy_graph(&mut out, self.ptr, err) })?;
        Ok(Graph::from_raw(out))
    }

    /// The layout and strategy of op `op` on its stage's mesh as text (experimental).
    pub fn op_spec(&self, op: i32) -> Result<String> {
        // SAFETY: live handle.
        buffer_string(|out, err| unsafe { sys::alpa_plan_op_spec(out, self.ptr, op, err) })
    }

    /// The layouts of the planned graph's ops: `(op id, spec)`, skipping ops without one
    /// (no stage, free or fused), borrowed from the plan (experimental).
    pub fn op_specs(&self) -> PlanSpecs<'_> {
        let n = self.op_stages().len();
        PlanSpecs { plan: self, next: 0, end: n }
    }

    /// The plan as JSON (docs/planner.md): `detail` 0 the summary, 1 per-op strategies,
    /// collectives and slice moves.
    pub fn to_json(&self, detail: i32) -> Result<String> {
        // SAFETY: live handle.
        buffer_string(|out, err| unsafe { sys::alpa_plan_to_json(out, self.ptr, detail, err) })
    }

    /// The configuration of a manual or baseline plan (experimental); `Err` for other plans.
    pub fn manual_spec(&self) -> Result<ManualPlan> {
        let mut raw = sys::alpa_manual_plan::default();
        // SAFETY: writes at most size bytes.
        check(|err| unsafe {
            sys::alpa_plan_manual_spec(&mut raw, std::mem::size_of::<sys::alpa_manual_plan>(), self.ptr, err)
        })?;
        Ok(ManualPlan::from_raw(&raw))
    }

    /// Simulates one iteration event by event (experimental) under `schedule`: a `Schedule`, or
    /// `None` for the plan's own (`pipeline_schedule`; an interleaved plan simulates under
    /// nothing else, `Error::InvalidArgument` says so).
    pub fn simulate(&self, schedule: impl Into<Option<Schedule>>) -> Result<Simulation> {
        let raw = self.schedule_or_planned(schedule.into());
        let mut out = ptr::null_mut();
        // SAFETY: live handle, only read.
        check(|err| unsafe { sys::alpa_plan_simulate(&mut out, self.ptr, raw, err) })?;
        Ok(Simulation::from_raw(out))
    }

    /// Simulates one iteration on the plan's device programs (`alpa simulate --programs`): the
    /// plan lowered as the executor lowers it, every instruction priced by the cost model.
    /// `schedule` as for `simulate`.
    pub fn simulate_programs(&self, schedule: impl Into<Option<Schedule>>) -> Result<Simulation> {
        let raw = self.schedule_or_planned(schedule.into());
        let mut out = ptr::null_mut();
        // SAFETY: live handle, only read.
        check(|err| unsafe { sys::alpa_plan_simulate_programs(&mut out, self.ptr, raw, err) })?;
        Ok(Simulation::from_raw(out))
    }

    /// The timeline of the iteration simulated under the plan's own schedule as SVG, `width`
    /// pixels wide (0: 1600).
    pub fn timeline_svg(&self, width: i32) -> Result<String> {
        self.simulate(None)?.timeline_svg(width)
    }

    fn schedule_or_planned(&self, schedule: Option<Schedule>) -> i32 {
        schedule.unwrap_or_else(|| self.pipeline_schedule()).raw()
    }
}

impl Graph {
    /// Plans this graph (one microbatch; its layer markers are the layers) on a cluster.
    pub fn plan(&self, cluster: &Cluster, options: Option<&PlanOptions>) -> Result<Plan> {
        let o = PlanOptions::raw(options);
        // SAFETY: live handles, only read.
        planning_call(|out, err| unsafe { sys::alpa_graph_plan(out, self.as_ptr(), cluster.as_ptr(), o, err) })
    }
}

/// A tensor one stage sends another each microbatch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Transfer {
    /// Sending stage.
    pub from_stage: i32,
    /// Receiving stage.
    pub to_stage: i32,
    /// Op id in the planned graph.
    pub tensor: i32,
    /// The whole tensor's bytes.
    pub bytes: i64,
    /// Estimated seconds.
    pub seconds: f64,
}

/// One pipeline stage, borrowed from its [`Plan`].
#[derive(Clone, Copy)]
pub struct Stage<'a> {
    plan: &'a Plan,
    index: usize,
    info: sys::alpa_stage_info,
}

impl<'a> Stage<'a> {
    /// The stage's position in the pipeline.
    pub fn index(&self) -> usize {
        self.index
    }
    /// The layer groups it computes (inclusive).
    pub fn layers(&self) -> RangeInclusive<i32> {
        self.info.first_layer..=self.info.last_layer
    }
    /// The submesh: (hosts, devices per host).
    pub fn submesh(&self) -> (i64, i64) {
        (self.info.submesh_hosts, self.info.submesh_devices_per_host)
    }
    /// The logical mesh shape (1 or 2 dims).
    pub fn logical_mesh(&self) -> Vec<i64> {
        let n = self.info.logical_ndim.clamp(0, 2) as usize;
        self.info.logical_mesh[..n].to_vec()
    }
    /// Number of devices.
    pub fn device_count(&self) -> i64 {
        self.info.devices
    }
    /// The physical device ids (host * devices_per_host + local index).
    pub fn devices(&self) -> Vec<i64> {
        // SAFETY: count-then-fill.
        fill("alpa_plan_stage_devices", |out, cap| unsafe {
            sys::alpa_plan_stage_devices(self.plan.ptr, self.index as i32, out, cap)
        })
        .unwrap_or_default()
    }
    /// Data-parallel degree.
    pub fn data_parallel(&self) -> i64 {
        self.info.data_parallel
    }
    /// Tensor-parallel degree.
    pub fn tensor_parallel(&self) -> i64 {
        self.info.tensor_parallel
    }
    /// Optimizer state sharded over the data-parallel devices.
    pub fn zero(&self) -> bool {
        self.info.zero != 0
    }
    /// ZeRO-2: gradients reduce-scattered every microbatch and accumulated as shards.
    pub fn shard_gradients(&self) -> bool {
        self.info.zero == 2
    }
    /// ZeRO-3: weights held as shards over the data-parallel devices, gathered where read.
    pub fn shard_parameters(&self) -> bool {
        self.info.zero == 3
    }
    /// Anything recomputed in the backward, fully or selectively ([`Stage::recompute`] says
    /// which).
    pub fn remat(&self) -> bool {
        self.info.remat != 0
    }
    /// What it recomputes in the backward: `Off`, `On` (full) or `Selective` (the attention
    /// cores).
    pub fn recompute(&self) -> Remat {
        Remat::from_kind(self.info.remat)
    }
    /// Predicted seconds of one microbatch, forward + backward.
    pub fn latency_seconds(&self) -> f64 {
        self.info.latency_seconds
    }
    /// Gradient synchronisation and update, once per iteration.
    pub fn iteration_overhead_seconds(&self) -> f64 {
        self.info.iteration_overhead_seconds
    }
    /// Per-device memory at its peak.
    pub fn memory_bytes(&self) -> i64 {
        self.info.memory_bytes
    }
    /// Microbatches of activations it holds (1F1B).
    pub fn in_flight(&self) -> i64 {
        self.info.in_flight
    }
    /// The collectives it inserts.
    pub fn collectives(&self) -> Vec<Collective> {
        // SAFETY: count-then-fill with our element size.
        collectives_of("alpa_plan_stage_collectives", |out, cap, size| unsafe {
            sys::alpa_plan_stage_collectives(self.plan.ptr, self.index as i32, out, cap, size)
        })
    }
    /// Its tasks in the order of the plan's schedule (`Plan::pipeline_schedule`): (backward?,
    /// microbatch) per task, backward under ZB-H1 being the input or the weight gradient; under
    /// interleaved 1F1B the stage's own tasks, in its device group's order.
    pub fn schedule(&self) -> Result<Vec<(bool, i32)>> {
        // SAFETY: count-then-fill.
        let flat = fill("alpa_plan_stage_schedule", |out, cap| unsafe {
            sys::alpa_plan_stage_schedule(self.plan.ptr, self.index as i32, out, cap)
        })?;
        Ok(flat.chunks(2).map(|c| (c[0] != 0, c[1])).collect())
    }
}

impl std::fmt::Debug for Stage<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stage")
            .field("index", &self.index)
            .field("layers", &self.layers())
            .field("submesh", &self.submesh())
            .field("logical_mesh", &self.logical_mesh())
            .field("latency_seconds", &self.latency_seconds())
            .finish()
    }
}

/// Iterator over a [`Plan`]'s stages.
pub struct Stages<'a> {
    plan: &'a Plan,
    next: usize,
    end: usize,
}

impl<'a> Iterator for Stages<'a> {
    type Item = Stage<'a>;
    fn next(&mut self) -> Option<Stage<'a>> {
        if self.next >= self.end {
            return None;
        }
        let s = self.plan.stage(self.next);
        self.next += 1;
        s
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.end - self.next;
        (n, Some(n))
    }
}

impl ExactSizeIterator for Stages<'_> {}

/// Iterator over the layouts of a [`Plan`]'s ops.
pub struct PlanSpecs<'a> {
    plan: &'a Plan,
    next: usize,
    end: usize,
}

impl<'a> Iterator for PlanSpecs<'a> {
    type Item = (i32, String);
    fn next(&mut self) -> Option<(i32, String)> {
        while self.next < self.end {
            let op = self.next as i32;
            self.next += 1;
            match self.plan.op_spec(op) {
                Ok(spec) if !spec.is_empty() => return Some((op, spec)),
                _ => {}
            }
        }
        None
    }
}


impl std::fmt::Debug for Plan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Plan")
            .field("iteration_seconds", &self.iteration_seconds())
            .field("microbatches", &self.microbatches())
            .field("stages", &self.stages().collect::<Vec<_>>())
            .finish()
    }
}

impl std::fmt::Debug for PlanOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlanOptions")
            .field("cancel_token", &self.token.is_some())
            .field("progress", &self.callback.is_some())
            .finish()
    }
}
