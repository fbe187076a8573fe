//! Simulation of a plan's training iteration (experimental).
use crate::error::{check, Result};
use crate::util::buffer_string;
use alpa_sys as sys;
use std::os::raw::c_char;
use std::ptr;

/// Pipeline schedules (`ALPA_SCHEDULE_*`). `Plan::simulate` and `Plan::simulate_programs` take
/// one or `None` (the plan's own, `Plan::pipeline_schedule`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Schedule {
    /// Every forward, then every backward.
    GPipe,
    /// One forward one backward, as the planner assumes by default.
    OneForwardOneBackward,
    /// Zero-bubble ZB-H1: each backward split into the input gradient and the weight gradient,
    /// stage s keeping its s latest weight gradients for the drain.
    ZeroBubbleH1,
    /// Interleaved 1F1B (Megatron-LM's virtual pipeline stages): each device group runs
    /// `Plan::virtual_stages` stages, the bubble shrinking by that factor. Only for a plan made
    /// for it (the "interleave" plan option), and such a plan runs only under it.
    InterleavedOneForwardOneBackward,
}

impl Schedule {
    pub(crate) fn raw(self) -> i32 {
        match self {
            Schedule::GPipe => sys::ALPA_SCHEDULE_GPIPE,
            Schedule::OneForwardOneBackward => sys::ALPA_SCHEDULE_1F1B,
            Schedule::ZeroBubbleH1 => sys::ALPA_SCHEDULE_ZB_H1,
            Schedule::InterleavedOneForwardOneBackward => sys::ALPA_SCHEDULE_INTERLEAVED_1F1B,
        }
    }

    /// The schedule of an `ALPA_SCHEDULE_*` value; `None` for any other.
    pub(crate) fn from_raw(raw: i32) -> Option<Schedule> {
        [
            Schedule::GPipe,
            Schedule::OneForwardOneBackward,
            Schedule::ZeroBubbleH1,
            Schedule::InterleavedOneForwardOneBackward,
        ]
        .into_iter()
        .find(|s| s.raw() == raw)
    }

    /// The name the plan JSON and the CLI use: "gpipe", "1f1b", "zb-h1", "interleaved-1f1b".
    pub fn name(self) -> &'static str {
        match self {
            Schedule::GPipe => "gpipe",
            Schedule::OneForwardOneBackward => "1f1b",
            Schedule::ZeroBubbleH1 => "zb-h1",
            Schedule::InterleavedOneForwardOneBackward => "interleaved-1f1b",
        }
    }
}

impl std::fmt::Display for Schedule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// One stage of a simulated iteration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SimulatedStage {
    /// Forward + backward + gradient synchronisation + update.
    pub busy_seconds: f64,
    /// Blocked on inputs in flight.
    pub communication_wait_seconds: f64,
    /// Nothing to run (the bubble).
    pub idle_seconds: f64,
    /// idle / iteration.
    pub bubble_fraction: f64,
    /// When its update ended.
    pub finish_seconds: f64,
    /// The most microbatches in flight at once.
    pub peak_in_flight: i64,
    /// Per device.
    pub peak_memory_bytes: i64,
}

/// A simulated iteration. Immutable.
pub struct Simulation {
    ptr: *mut sys::alpa_simulation,
}

// SAFETY: docs/threading.md does not list simulations; this relies on alpa_experimental.h ("A
// simulation is immutable and may be shared between threads; it keeps no pointer to the plan.")
// and on docs/threading.md's "Handles are not internally locked" (no thread affinity).
unsafe impl Send for Simulation {}
// SAFETY: alpa_experimental.h: "A simulation is immutable and may be shared between threads".
unsafe impl Sync for Simulation {}

impl Drop for Simulation {
    fn drop(&mut self) {
        // SAFETY: owned handle, freed once.
        unsafe { sys::alpa_simulation_destroy(self.ptr) }
    }
}

impl Simulation {
    pub(crate) fn from_raw(ptr: *mut sys::alpa_simulation) -> Simulation {
        Simulation { ptr }
    }

    /// Simulates a plan JSON (`Plan::to_json`, `alpa plan --json` / `-o`) under `schedule` (the
    /// JSON's "schedule" is not read: pass the plan's, `Plan::pipeline_schedule`, to simulate it
    /// as planned).
    pub fn from_plan_json(json: &[u8], schedule: Schedule) -> Result<Simulation> {
        let mut out = ptr::null_mut();
        // SAFETY: json[size].
        check(|err| unsafe {
            sys::alpa_plan_simulate_json(&mut out, json.as_ptr() as *const c_char, json.len(), schedule.raw(), err)
        })?;
        Ok(Simulation { ptr: out })
    }

    /// The simulated iteration time.
    pub fn iteration_seconds(&self) -> f64 {
        // SAFETY: getter.
        unsafe { sys::alpa_simulation_iteration_seconds(self.ptr) }
    }
    /// The stage DP's closed form on the simulated stages.
    pub fn closed_form_seconds(&self) -> f64 {
        // SAFETY: getter.
        unsafe { sys::alpa_simulation_closed_form_seconds(self.ptr) }
    }
    /// The plan's predicted iteration time (NaN when unknown).
    pub fn planner_seconds(&self) -> f64 {
        // SAFETY: getter.
        unsafe { sys::alpa_simulation_planner_seconds(self.ptr) }
    }
    /// Per stage statistics.
    pub fn stages(&self) -> Vec<SimulatedStage> {
        // SAFETY: getter, then whole version-1 structs.
        let n = unsafe { sys::alpa_simulation_stage_count(self.ptr) };
        (0..n)
            .filter_map(|s| {
                let mut raw = sys::alpa_simulated_stage::default();
                check(|err| unsafe {
                    sys::alpa_simulation_stage(&mut raw, std::mem::size_of::<sys::alpa_simulated_stage>(), self.ptr, s, err)
                })
                .ok()
                .map(|_| SimulatedStage {
                    busy_seconds: raw.busy_seconds,
                    communication_wait_seconds: raw.communication_wait_seconds,
                    idle_seconds: raw.idle_seconds,
                    bubble_fraction: raw.bubble_fraction,
                    finish_seconds: raw.finish_seconds,
                    peak_in_flight: raw.peak_in_flight,
                    peak_memory_bytes: raw.peak_memory_bytes,
                })
            })
            .collect()
    }
    /// The timeline as a self-contained SVG `width` pixels wide (0: 1600).
    pub fn timeline_svg(&self, width: i32) -> Result<String> {
        // SAFETY: live handle.
        buffer_string(|out, err| unsafe { sys::alpa_simulation_timeline_to_svg(out, self.ptr, width, err) })
    }
    /// The simulation as JSON.
    pub fn to_json(&self) -> Result<String> {
        // SAFETY: live handle.
        buffer_string(|out, err| unsafe { sys::alpa_simulation_to_json(out, self.ptr, err) })
    }
}

impl std::fmt::Debug for Simulation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulation").field("iteration_seconds", &self.iteration_seconds()).finish()
    }
}
