//! Auto-sharding (Alpa's intra-op pass) of a graph on one logical mesh.
use crate::cluster::{Cluster, Mesh};
use crate::error::{check, Result};
use crate::graph::Graph;
use crate::problem::{SolveOptions, SolveStatus};
use crate::progress;
use crate::util::{buffer_string, fill, string_from};
use alpa_sys as sys;
use std::ptr;

/// One collective a plan inserts.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Collective {
    /// `ALPA_COLLECTIVE_*`.
    pub kind: i32,
    /// Bit k set: runs over mesh dimension k.
    pub mesh_dims: u32,
    /// `ALPA_COLLECTIVE_FLAG_*`.
    pub flags: u32,
    /// The cost model's bytes (the full tensor).
    pub bytes: f64,
    /// In the plan's cost units.
    pub cost: f64,
    /// The op whose result it moves.
    pub tensor: i32,
    /// The op that needs it (-1: laid out once for all readers).
    pub consumer: i32,
    /// Which operand of the consumer it feeds (-1 inside an op or for all readers).
    pub operand: i32,
}

impl Collective {
    pub(crate) fn from_raw(c: &sys::alpa_collective) -> Collective {
        Collective {
            kind: c.kind,
            mesh_dims: c.mesh_dims,
            flags: c.flags,
            bytes: c.bytes,
            cost: c.cost,
            tensor: c.tensor,
            consumer: c.consumer,
            operand: c.operand,
        }
    }
}

pub(crate) fn collectives_of<F>(what: &str, mut f: F) -> Vec<Collective>
where
    F: FnMut(*mut sys::alpa_collective, i64, usize) -> i64,
{
    let size = std::mem::size_of::<sys::alpa_collective>();
    fill(what, |out, cap| f(out, cap, size)).unwrap_or_default().iter().map(Collective::from_raw).collect()
}

/// A sharding plan: one strategy per op, its cost split and the collectives it inserts.
/// Immutable; it holds its own copy of the graph.
pub struct ShardingPlan {
    ptr: *mut sys::alpa_sharding_plan,
}

// SAFETY: docs/threading.md: "sharding plans are immutable and hold their own copy of the
// graph".
unsafe impl Send for ShardingPlan {}
// SAFETY: docs/threading.md: "sharding plans are immutable and hold their own copy of the graph".
unsafe impl Sync for ShardingPlan {}

impl Drop for ShardingPlan {
    fn drop(&mut self) {
        // SAFETY: owned handle, freed once.
        unsafe { sys::alpa_sharding_plan_destroy(self.ptr) }
    }
}

impl Graph {
    /// Auto-shards the graph on a logical mesh. `cluster` may be `None` only with the Alpa cost
    /// model (`ALPA_OPT_COST_MODEL` = `ALPA_COST_MODE_ALPA` on the options). No answer is an
    /// `Err` (`Infeasible` with the smallest peak found, `Timeout`, `Cancelled`).
    pub fn auto_shard(
        &self,
        mesh: &Mesh,
        cluster: Option<&Cluster>,
        options: Option<&SolveOptions>,
    ) -> Result<ShardingPlan> {
        let mut out = ptr::null_mut();
        let c = cluster.map_or(ptr::null(), |c| c.as_ptr());
        let o = options.map_or(ptr::null(), |o| o.as_ptr());
        progress::clear_panic();
        // SAFETY: live handles, only read; the options' callback outlives the call.
        let result = check(|err| unsafe {
            sys::alpa_graph_auto_shard(&mut out, self.as_ptr(), mesh.as_ptr(), c, o, err)
        })
        .map(|_| ShardingPlan { ptr: out });
        progress::resume_panic();
        result
    }
}

impl ShardingPlan {
    /// Optimal, feasible or cancelled.
    pub fn status(&self) -> SolveStatus {
        // SAFETY: getter.
        SolveStatus::from_raw(unsafe { sys::alpa_sharding_plan_status(self.ptr) })
    }
    /// Compute + communication + resharding.
    pub fn objective(&self) -> f64 {
        // SAFETY: getter.
        unsafe { sys::alpa_sharding_plan_objective(self.ptr) }
    }
    /// The solver's best proven lower bound.
    pub fn lower_bound(&self) -> f64 {
        // SAFETY: getter.
        unsafe { sys::alpa_sharding_plan_lower_bound(self.ptr) }
    }
    /// One part of the objective (`ALPA_PLAN_COST_*`).
    pub fn cost(&self, which: i32) -> f64 {
        // SAFETY: getter.
        unsafe { sys::alpa_sharding_plan_cost(self.ptr, which) }
    }
    /// Peak bytes on one device.
    pub fn peak_memory_bytes(&self) -> i64 {
        // SAFETY: getter.
        unsafe { sys::alpa_sharding_plan_peak_memory_bytes(self.ptr) }
    }
    /// Why the solve stopped short of optimality; "" otherwise.
    pub fn message(&self) -> String {
        // SAFETY: copied while the plan lives.
        unsafe { string_from(sys::alpa_sharding_plan_message(self.ptr)) }
    }
    /// Collective counts indexed by `ALPA_COLLECTIVE_*` (all-gather, all-reduce, reduce-scatter,
    /// all-to-all); `combined`: gradient synchronisations of one kind and mesh dims count once.
    pub fn collective_counts(&self, combined: bool) -> Vec<i64> {
        // SAFETY: count-then-fill.
        fill("alpa_sharding_plan_collective_counts", |out, cap| unsafe {
            sys::alpa_sharding_plan_collective_counts(self.ptr, i32::from(combined), out, cap)
        })
        .unwrap_or_default()
    }
    /// The strategy index of each op (-1 for free and fused ops).
    pub fn op_strategies(&self) -> Vec<i32> {
        // SAFETY: count-then-fill.
        fill("alpa_sharding_plan_op_strategies", |out, cap| unsafe {
            sys::alpa_sharding_plan_op_strategies(self.ptr, out, cap)
        })
        .unwrap_or_default()
    }
    /// The collectives to insert, in execution order.
    pub fn collectives(&self) -> Vec<Collective> {
        // SAFETY: count-then-fill with the caller's element size.
        collectives_of("alpa_sharding_plan_collectives", |out, cap, size| unsafe {
            sys::alpa_sharding_plan_collectives(self.ptr, out, cap, size)
        })
    }
    /// The layout of op `op`'s result as text ("S0 R", "R S01", ""; experimental).
    pub fn op_spec(&self, op: i32) -> Result<String> {
        // SAFETY: live handle.
        buffer_string(|out, err| unsafe { sys::alpa_sharding_plan_op_spec(out, self.ptr, op, err) })
    }
    /// The layouts of every op, borrowed from the plan: `(op id, spec)` (experimental).
    pub fn op_specs(&self) -> ShardingSpecs<'_> {
        let n = self.op_strategies().len();
        ShardingSpecs { plan: self, next: 0, end: n }
    }
    /// The plan as JSON (docs/auto-sharding.md).
    pub fn to_json(&self) -> Result<String> {
        // SAFETY: live handle.
        buffer_string(|out, err| unsafe { sys::alpa_sharding_plan_to_json(out, self.ptr, err) })
    }
}

/// Iterator over the layouts of a [`ShardingPlan`]'s ops.
pub struct ShardingSpecs<'a> {
    plan: &'a ShardingPlan,
    next: usize,
    end: usize,
}

impl<'a> Iterator for ShardingSpecs<'a> {
    type Item = (i32, String);
    fn next(&mut self) -> Option<(i32, String)> {
        while self.next < self.end {
            let op = self.next as i32;
            self.next += 1;
            if let Ok(spec) = self.plan.op_spec(op) {
                return Some((op, spec));
            }
        }
        None
    }
}

impl std::fmt::Debug for ShardingPlan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardingPlan")
            .field("status", &self.status())
            .field("objective", &self.objective())
            .finish()
    }
}
