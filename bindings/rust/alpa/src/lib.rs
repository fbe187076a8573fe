//! Safe Rust bindings to libalpa, an automatic parallelization planner for deep learning
//! (Alpa re-created behind a plain C ABI). Everything goes through `alpa.h` /
//! `alpa_experimental.h` via the [`sys`] crate (`alpa-sys`).
//!
//! - Handles are owned values freed by `Drop`; fallible calls return [`Result<T>`] whose
//!   [`Error`] carries the library's status and message.
//! - `Send` / `Sync` follow docs/threading.md: finalized problems and graphs, solutions,
//!   clusters, meshes, sharding plans and (by alpa.h) plans and simulations are `Send + Sync`;
//!   builders ([`ProblemBuilder`], [`GraphBuilder`]) are `Send` only and need `&mut`; options
//!   are `Sync` for concurrent calls and need `&mut` to change; a [`CancelToken`] triggers from
//!   any thread.
//! - Progress callbacks run on the calling thread; their panics are caught before they reach C,
//!   cancel the call, and resume in the caller afterwards.
//!
//! ```no_run
//! let cluster = alpa::Cluster::from_spec("p3.16xlarge:2")?;
//! let plan = alpa::Plan::model("gpt-2.6b", &cluster, None)?;
//! for stage in plan.stages() {
//!     println!("{:?} on {:?}: {:?}", stage.layers(), stage.submesh(), stage.devices());
//! }
//! println!("{} s per iteration", plan.iteration_seconds());
//! # Ok::<(), alpa::Error>(())
//! ```
//!
//! Builders are not `Sync` (building needs exclusive access), so this does not compile:
//!
//! ```compile_fail
//! fn shared<T: Sync>(_: &T) {}
//! let builder = alpa::ProblemBuilder::new().unwrap();
//! shared(&builder);
//! ```
//!
//! ```compile_fail
//! fn shared<T: Sync>(_: &T) {}
//! let builder = alpa::GraphBuilder::new().unwrap();
//! shared(&builder);
//! ```
#![warn(missing_docs)]

mod cluster;
mod error;
mod graph;
mod plan;
mod problem;
mod progress;
mod shard;
mod simulate;
mod util;

pub use alpa_sys as sys;
pub use cluster::{cluster_presets, Cluster, Mesh};
pub use error::{status_string, Error, ErrorKind, Result};
pub use graph::{model_presets, model_zoo_json, Graph, GraphBuilder, ModelPreset, Op, OpColumns, Ops};
pub use plan::{ManualPlan, Plan, PlanOptions, PlanSpecs, Remat, Stage, Stages, Transfer};
pub use problem::{
    parse_assignment, solve_json, FinalizeError, Format, Problem, ProblemBuilder, Solution, SolveOptions,
    SolveStatus,
};
pub use progress::{CancelToken, PlanProgress, SolveProgress};
pub use shard::{Collective, ShardingPlan, ShardingSpecs};
pub use simulate::{Schedule, SimulatedStage, Simulation};

/// The loaded library's version ("0.1.0").
pub fn version() -> &'static str {
    // SAFETY: static storage, never NULL.
    unsafe { util::static_str(sys::alpa_version_string()) }
}

/// `ALPA_VERSION_NUMBER` of the loaded library (major * 10000 + minor * 100 + patch).
pub fn version_number() -> i32 {
    // SAFETY: no arguments.
    unsafe { sys::alpa_version_number() }
}
