//! The raw solver tier: sharding problems (nodes with strategies, edges with cost matrices,
//! liveness and a memory limit), solve options and solutions.
use crate::error::{check, Error, ErrorKind, Result};
use crate::progress::{self, CancelToken, SolveCallback, SolveProgress};
use crate::util::{buffer_string, cstring, fill, len_i64, string_from};
use alpa_sys as sys;
use std::fmt;
use std::os::raw::{c_char, c_void};
use std::path::Path;
use std::ptr;

/// File / buffer formats of a sharding problem.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// Alpa JSON if the object has `"format": "alpa"`, else IOPDDL.
    Auto,
    /// The IOPDDL contest JSON, plain or gzip.
    Iopddl,
    /// Alpa's serialized solver arrays as JSON.
    Alpa,
}

impl Format {
    fn raw(self) -> i32 {
        match self {
            Format::Auto => sys::ALPA_FORMAT_AUTO,
            Format::Iopddl => sys::ALPA_FORMAT_IOPDDL,
            Format::Alpa => sys::ALPA_FORMAT_ALPA,
        }
    }
}

/// A problem being built: nodes, edges, liveness, followers, aliases and a memory limit.
/// [`finalize`](ProblemBuilder::finalize) validates it and turns it into an immutable
/// [`Problem`].
pub struct ProblemBuilder {
    ptr: *mut sys::alpa_problem,
}

// SAFETY: docs/threading.md: "A problem being built (`add_*`, `set_*`) needs exclusive
// access". Every call on a builder takes `&mut self` (or `self`), so Rust gives it that
// exclusive access; the handle has no thread affinity ("Handles are not internally locked"),
// so it may move to another thread. It is deliberately not Sync.
unsafe impl Send for ProblemBuilder {}

impl Drop for ProblemBuilder {
    fn drop(&mut self) {
        // SAFETY: owned handle, freed once.
        unsafe { sys::alpa_problem_destroy(self.ptr) }
    }
}

/// The error of a failed `finalize`: the library's error and the builder, which stays in the
/// building state. Converts into [`Error`] for `?`.
pub struct FinalizeError<B> {
    /// What the library reported (it names the node, edge, alias, op or time step).
    pub error: Error,
    /// The builder, unchanged.
    pub builder: B,
}

impl<B> From<FinalizeError<B>> for Error {
    fn from(e: FinalizeError<B>) -> Error {
        e.error
    }
}

impl<B> fmt::Debug for FinalizeError<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl<B> fmt::Display for FinalizeError<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, f)
    }
}

impl<B> std::error::Error for FinalizeError<B> {}

fn invalid(message: String) -> Error {
    Error::new(ErrorKind::InvalidArgument, message)
}

impl ProblemBuilder {
    /// An empty problem.
    pub fn new() -> Result<ProblemBuilder> {
        let mut out = ptr::null_mut();
        // SAFETY: valid out-parameters.
        check(|err| unsafe { sys::alpa_problem_create(&mut out, err) })?;
        Ok(ProblemBuilder { ptr: out })
    }

    /// Appends nodes: `strategy_counts[i]` strategies for node i, their `costs` node after node
    /// (`sum(strategy_counts)` entries) and memory `usages` (same length, or `None` for zeros).
    pub fn add_nodes(
        &mut self,
        strategy_counts: &[i32],
        costs: &[f64],
        usages: Option<&[i64]>,
    ) -> Result<()> {
        if let Some(i) = strategy_counts.iter().position(|&k| k < 0) {
            return Err(invalid(format!(
                "add_nodes: node {} of the batch has {} strategies",
                i, strategy_counts[i]
            )));
        }
        let total: i64 = strategy_counts.iter().map(|&k| i64::from(k)).sum();
        if costs.len() as i64 != total {
            return Err(invalid(format!(
                "add_nodes: {} costs for {} strategies",
                costs.len(),
                total
            )));
        }
        if let Some(u) = usages {
            if u.len() as i64 != total {
                return Err(invalid(format!(
                    "add_nodes: {} usages for {} strategies",
                    u.len(),
                    total
                )));
            }
        }
        let usages_ptr = usages.map_or(ptr::null(), |u| u.as_ptr());
        // SAFETY: the slices hold as many entries as the library reads (checked above).
        check(|err| unsafe {
            sys::alpa_problem_add_nodes(
                self.ptr,
                len_i64(strategy_counts.len()),
                strategy_counts.as_ptr(),
                costs.as_ptr(),
                usages_ptr,
                err,
            )
        })
    }

    /// Sets the liveness of the first `intervals.len()` nodes: half-open `[lo, hi)` times.
    pub fn set_intervals(&mut self, intervals: &[[i64; 2]]) -> Result<()> {
        let flat: Vec<i64> = intervals.iter().flat_map(|iv| iv.iter().copied()).collect();
        // SAFETY: 2 * count entries.
        check(|err| unsafe {
            sys::alpa_problem_set_intervals(self.ptr, len_i64(intervals.len()), flat.as_ptr(), err)
        })
    }

    /// Sets liveness as explicit live sets: the nodes live at each time step.
    pub fn set_live_sets<S: AsRef<[i32]>>(&mut self, steps: &[S]) -> Result<()> {
        let sizes: Vec<i64> = steps.iter().map(|s| len_i64(s.as_ref().len())).collect();
        let ids: Vec<i32> = steps.iter().flat_map(|s| s.as_ref().iter().copied()).collect();
        // SAFETY: sizes[num_steps], ids[sum sizes].
        check(|err| unsafe {
            sys::alpa_problem_set_live_sets(
                self.ptr,
                len_i64(sizes.len()),
                sizes.as_ptr(),
                ids.as_ptr(),
                err,
            )
        })
    }

    fn strategy_count(&self, node: i32) -> i64 {
        // SAFETY: getter on a live handle.
        i64::from(unsafe { sys::alpa_problem_strategy_count(self.ptr, i64::from(node)) })
    }

    fn pair_cells(&self, pairs: &[[i32; 2]], what: &str) -> Result<i64> {
        let mut total = 0i64;
        for (i, &[u, v]) in pairs.iter().enumerate() {
            let (ku, kv) = (self.strategy_count(u), self.strategy_count(v));
            if ku < 0 || kv < 0 {
                return Err(invalid(format!("{} {} ({}, {}): no such node", what, i, u, v)));
            }
            total += ku * kv;
        }
        Ok(total)
    }

    /// Appends edges `(u, v)` with their cost matrices row-major (rows = u's strategies), one
    /// matrix after another.
    pub fn add_edges(&mut self, endpoints: &[[i32; 2]], costs: &[f64]) -> Result<()> {
        let cells = self.pair_cells(endpoints, "edge")?;
        if costs.len() as i64 != cells {
            return Err(invalid(format!(
                "add_edges: {} costs for {} matrix entries",
                costs.len(),
                cells
            )));
        }
        let flat: Vec<i32> = endpoints.iter().flat_map(|e| e.iter().copied()).collect();
        // SAFETY: 2 * count endpoints and sum k_u * k_v costs (checked).
        check(|err| unsafe {
            sys::alpa_problem_add_edges(
                self.ptr,
                len_i64(endpoints.len()),
                flat.as_ptr(),
                costs.as_ptr(),
                err,
            )
        })
    }

    /// Followers of the first `follows.len()` nodes: `-1` (free) or the node whose choice it
    /// shares.
    pub fn set_followers(&mut self, follows: &[i32]) -> Result<()> {
        // SAFETY: count entries.
        check(|err| unsafe {
            sys::alpa_problem_set_followers(self.ptr, len_i64(follows.len()), follows.as_ptr(), err)
        })
    }

    /// Appends alias pairs `(u, v)` with `forbidden` matrices row-major (true: u taking i and v
    /// taking j together is not allowed).
    pub fn add_aliases(&mut self, pairs: &[[i32; 2]], forbidden: &[bool]) -> Result<()> {
        let cells = self.pair_cells(pairs, "alias")?;
        if forbidden.len() as i64 != cells {
            return Err(invalid(format!(
                "add_aliases: {} entries for {} matrix entries",
                forbidden.len(),
                cells
            )));
        }
        let flat: Vec<i32> = pairs.iter().flat_map(|e| e.iter().copied()).collect();
        let bytes: Vec<u8> = forbidden.iter().map(|&b| u8::from(b)).collect();
        // SAFETY: 2 * count ids and sum k_u * k_v flags (checked).
        check(|err| unsafe {
            sys::alpa_problem_add_aliases(
                self.ptr,
                len_i64(pairs.len()),
                flat.as_ptr(),
                bytes.as_ptr(),
                err,
            )
        })
    }

    /// The memory limit in bytes (`None`: no limit, the default).
    pub fn set_memory_limit(&mut self, limit: Option<i64>) -> Result<()> {
        let limit = limit.unwrap_or(-1);
        // SAFETY: live handle.
        check(|err| unsafe { sys::alpa_problem_set_memory_limit(self.ptr, limit, err) })
    }

    /// Nodes added so far.
    pub fn node_count(&self) -> i64 {
        // SAFETY: getter.
        unsafe { sys::alpa_problem_node_count(self.ptr) }
    }

    /// Validates and freezes the problem. On failure the error names the node, edge, alias or
    /// time step, and the builder comes back unchanged.
    pub fn finalize(self) -> std::result::Result<Problem, FinalizeError<ProblemBuilder>> {
        // SAFETY: live handle, exclusive (self by value).
        match check(|err| unsafe { sys::alpa_problem_finalize(self.ptr, err) }) {
            Ok(()) => {
                let ptr = self.ptr;
                std::mem::forget(self);
                Ok(Problem { ptr })
            }
            Err(error) => Err(FinalizeError { error, builder: self }),
        }
    }
}

/// A finalized, immutable sharding problem: solve it, evaluate assignments, serialize it.
pub struct Problem {
    ptr: *mut sys::alpa_problem,
}

// SAFETY: docs/threading.md: "once finalized it is immutable and any number of threads may
// solve, evaluate or write it at the same time." A `Problem` exists only finalized (from
// `ProblemBuilder::finalize` or a reader, whose results are finalized) and offers no mutation.
unsafe impl Send for Problem {}
// SAFETY: the same sentence ("any number of threads may solve, evaluate or write it at the
// same time").
unsafe impl Sync for Problem {}

impl Drop for Problem {
    fn drop(&mut self) {
        // SAFETY: owned handle, freed once.
        unsafe { sys::alpa_problem_destroy(self.ptr) }
    }
}

impl Problem {
    /// Reads a problem from a file (.json or .json.gz).
    pub fn read_file<P: AsRef<Path>>(path: P, format: Format) -> Result<Problem> {
        let path = path.as_ref();
        let c = cstring(&path.to_string_lossy(), "path")?;
        let mut out = ptr::null_mut();
        // SAFETY: NUL-terminated path; the library copies it.
        check(|err| unsafe { sys::alpa_problem_read_file(&mut out, c.as_ptr(), format.raw(), err) })?;
        Ok(Problem { ptr: out })
    }

    /// Reads a problem from bytes (JSON, or gzip).
    pub fn from_bytes(data: &[u8], format: Format) -> Result<Problem> {
        let mut out = ptr::null_mut();
        // SAFETY: data[size].
        check(|err| unsafe {
            sys::alpa_problem_read_buffer(
                &mut out,
                data.as_ptr() as *const c_char,
                data.len(),
                format.raw(),
                err,
            )
        })?;
        Ok(Problem { ptr: out })
    }

    /// Serializes the problem (`Format::Iopddl` or `Format::Alpa`).
    pub fn to_json(&self, format: Format) -> Result<String> {
        // SAFETY: live handle.
        buffer_string(|out, err| unsafe { sys::alpa_problem_to_json(out, self.ptr, format.raw(), err) })
    }

    /// Number of nodes.
    pub fn node_count(&self) -> i64 {
        // SAFETY: getter.
        unsafe { sys::alpa_problem_node_count(self.ptr) }
    }

    /// Number of edges.
    pub fn edge_count(&self) -> i64 {
        // SAFETY: getter.
        unsafe { sys::alpa_problem_edge_count(self.ptr) }
    }

    /// Strategies of a node; `None` if there is no such node.
    pub fn strategy_count(&self, node: i64) -> Option<i32> {
        // SAFETY: getter.
        let k = unsafe { sys::alpa_problem_strategy_count(self.ptr, node) };
        if k < 0 {
            None
        } else {
            Some(k)
        }
    }

    /// Solves the problem. `Ok` holds an optimal, feasible (time limit) or cancelled solution;
    /// no answer is an `Err`: `Infeasible` (the message says why), `Timeout`, `Cancelled`.
    /// A panic in the progress callback cancels the solve and resumes here.
    pub fn solve(&self, options: Option<&SolveOptions>) -> Result<Solution> {
        let mut out = ptr::null_mut();
        let opts = options.map_or(ptr::null(), |o| o.ptr as *const _);
        progress::clear_panic();
        // SAFETY: live handles; the options (and their callback and token) outlive the call.
        let result = check(|err| unsafe { sys::alpa_problem_solve(&mut out, self.ptr, opts, err) })
            .map(|_| Solution { ptr: out });
        progress::resume_panic();
        result
    }

    /// The cost of an assignment (one strategy per node) by the independent evaluator.
    /// `Err(Infeasible)` names the violated constraint.
    pub fn evaluate(&self, assignment: &[i32]) -> Result<f64> {
        let mut cost = 0.0;
        // SAFETY: assignment[count]; the library checks count against the node count.
        check(|err| unsafe {
            sys::alpa_problem_evaluate(
                &mut cost,
                self.ptr,
                len_i64(assignment.len()),
                assignment.as_ptr(),
                err,
            )
        })?;
        Ok(cost)
    }
}

/// Parses an assignment as IOPDDL prints it (`"[0, 0, 2, 1, 0]"`).
pub fn parse_assignment(text: &str) -> Result<Vec<i32>> {
    let mut first_error: Option<Error> = None;
    let v = fill("alpa_assignment_parse", |out, cap| {
        let mut err = ptr::null_mut();
        // SAFETY: text[size]; out[cap].
        let n = unsafe {
            sys::alpa_assignment_parse(text.as_ptr() as *const c_char, text.len(), out, cap, &mut err)
        };
        if n < 0 {
            first_error = Some(unsafe { Error::from_raw((-n) as i32, err) });
        } else if !err.is_null() {
            unsafe { sys::alpa_error_free(err) };
        }
        n
    });
    match (v, first_error) {
        (Ok(v), _) => Ok(v),
        (Err(_), Some(e)) => Err(e),
        (Err(e), None) => Err(e),
    }
}

/// One-shot solve over JSON (`{"problem": ..., "options": ...}`); the result JSON reports every
/// outcome in its `"status"`.
pub fn solve_json(request: &[u8]) -> Result<String> {
    // SAFETY: request[size].
    buffer_string(|out, err| unsafe {
        sys::alpa_problem_solve_json(out, request.as_ptr() as *const c_char, request.len(), err)
    })
}

/// Solve options: the solve family (time limit, determinism, threads, gap), the shard family
/// (for auto-sharding), a warm start, a cancel token and a progress callback.
pub struct SolveOptions {
    ptr: *mut sys::alpa_solve_options,
    token: Option<CancelToken>,
    callback: Option<Box<SolveCallback>>,
}

// SAFETY: docs/threading.md: "Options objects may be shared read-only by concurrent solves."
// Setters take `&mut self`; solves take `&SolveOptions`. The progress callback is `Send` and
// called under a mutex, the token is `Send + Sync`.
unsafe impl Send for SolveOptions {}
// SAFETY: the same sentence ("Options objects may be shared read-only by concurrent solves").
unsafe impl Sync for SolveOptions {}

impl Drop for SolveOptions {
    fn drop(&mut self) {
        // SAFETY: owned handle; the callback box and token are dropped after it.
        unsafe { sys::alpa_solve_options_destroy(self.ptr) }
    }
}

impl SolveOptions {
    /// The defaults (no time limit, all threads, gap 0, real cost model, ZeRO off, ...).
    pub fn new() -> Result<SolveOptions> {
        let mut out = ptr::null_mut();
        // SAFETY: valid out-parameters.
        check(|err| unsafe { sys::alpa_solve_options_create(&mut out, err) })?;
        Ok(SolveOptions { ptr: out, token: None, callback: None })
    }

    /// Sets an `ALPA_OPT_*` key (solve 100.., shard 200..) from an integer.
    pub fn set_int(&mut self, key: i32, value: i64) -> Result<&mut Self> {
        // SAFETY: exclusive access (&mut).
        check(|err| unsafe { sys::alpa_solve_options_set_int(self.ptr, key, value, err) })?;
        Ok(self)
    }

    /// Sets an `ALPA_OPT_*` key from a double.
    pub fn set_double(&mut self, key: i32, value: f64) -> Result<&mut Self> {
        // SAFETY: exclusive access (&mut).
        check(|err| unsafe { sys::alpa_solve_options_set_double(self.ptr, key, value, err) })?;
        Ok(self)
    }

    /// Sets an option by name ("time_limit_seconds", "zero", "cost_model", ...).
    pub fn set(&mut self, name: &str, value: &str) -> Result<&mut Self> {
        let n = cstring(name, "option name")?;
        let v = cstring(value, "option value")?;
        // SAFETY: NUL-terminated strings, copied by the library.
        check(|err| unsafe {
            sys::alpa_solve_options_set_by_name(self.ptr, n.as_ptr(), v.as_ptr(), err)
        })?;
        Ok(self)
    }

    /// Time limit in seconds (`ALPA_OPT_TIME_LIMIT_SECONDS`).
    pub fn time_limit(&mut self, seconds: f64) -> Result<&mut Self> {
        self.set_double(sys::ALPA_OPT_TIME_LIMIT_SECONDS, seconds)
    }

    /// Identical answers run to run (`ALPA_OPT_DETERMINISTIC`).
    pub fn deterministic(&mut self, on: bool) -> Result<&mut Self> {
        self.set_int(sys::ALPA_OPT_DETERMINISTIC, i64::from(on))
    }

    /// Solver threads, 0 = all hardware threads (`ALPA_OPT_THREADS`).
    pub fn threads(&mut self, threads: i64) -> Result<&mut Self> {
        self.set_int(sys::ALPA_OPT_THREADS, threads)
    }

    /// Stop within this relative gap (`ALPA_OPT_RELATIVE_GAP`).
    pub fn relative_gap(&mut self, gap: f64) -> Result<&mut Self> {
        self.set_double(sys::ALPA_OPT_RELATIVE_GAP, gap)
    }

    /// A starting assignment (empty clears it).
    pub fn warm_start(&mut self, assignment: &[i32]) -> Result<&mut Self> {
        // SAFETY: assignment[count], copied.
        check(|err| unsafe {
            sys::alpa_solve_options_set_warm_start(
                self.ptr,
                len_i64(assignment.len()),
                assignment.as_ptr(),
                err,
            )
        })?;
        Ok(self)
    }

    /// Attaches a cancel token (`None` removes it). The options keep a clone of it.
    pub fn cancel_token(&mut self, token: Option<&CancelToken>) -> Result<&mut Self> {
        let raw = token.map_or(ptr::null_mut(), |t| t.as_ptr());
        // SAFETY: the token lives as long as self.token holds its clone.
        check(|err| unsafe { sys::alpa_solve_options_set_cancel_token(self.ptr, raw, err) })?;
        self.token = token.cloned();
        Ok(self)
    }

    /// A progress callback, run on the thread that solves; return `false` to cancel. A panic
    /// inside it cancels the call and resumes in the caller once the library has returned.
    pub fn on_progress<F>(&mut self, f: F) -> Result<&mut Self>
    where
        F: FnMut(&SolveProgress) -> bool + Send + 'static,
    {
        let cb = SolveCallback::new(f);
        let user = &*cb as *const SolveCallback as *mut c_void;
        // SAFETY: the box lives in self.callback until replaced after the library lets go.
        check(|err| unsafe {
            sys::alpa_solve_options_set_progress(self.ptr, Some(progress::solve_trampoline), user, err)
        })?;
        self.callback = Some(cb);
        Ok(self)
    }

    /// Removes the progress callback.
    pub fn clear_progress(&mut self) -> Result<&mut Self> {
        // SAFETY: live handle.
        check(|err| unsafe {
            sys::alpa_solve_options_set_progress(self.ptr, None, ptr::null_mut(), err)
        })?;
        self.callback = None;
        Ok(self)
    }

    pub(crate) fn as_ptr(&self) -> *const sys::alpa_solve_options {
        self.ptr
    }
}

/// How a solve (or an auto-sharding call) ended with an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SolveStatus {
    /// Proven optimal (within the relative gap).
    Optimal,
    /// The time limit hit: the best feasible assignment found.
    Feasible,
    /// Cancelled after a first assignment: the best found.
    Cancelled,
    /// Another `ALPA_SOLVE_*` value (a newer library).
    Other(i32),
}

impl SolveStatus {
    pub(crate) fn from_raw(v: i32) -> SolveStatus {
        match v {
            sys::ALPA_SOLVE_OPTIMAL => SolveStatus::Optimal,
            sys::ALPA_SOLVE_FEASIBLE => SolveStatus::Feasible,
            sys::ALPA_SOLVE_CANCELLED => SolveStatus::Cancelled,
            other => SolveStatus::Other(other),
        }
    }
}

/// An immutable solution.
pub struct Solution {
    ptr: *mut sys::alpa_solution,
}

// SAFETY: docs/threading.md: "Solutions are immutable." No call mutates one.
unsafe impl Send for Solution {}
// SAFETY: docs/threading.md: "Solutions are immutable."
unsafe impl Sync for Solution {}

impl Drop for Solution {
    fn drop(&mut self) {
        // SAFETY: owned handle, freed once.
        unsafe { sys::alpa_solution_destroy(self.ptr) }
    }
}

impl Solution {
    /// Optimal, feasible or cancelled.
    pub fn status(&self) -> SolveStatus {
        // SAFETY: getter.
        SolveStatus::from_raw(unsafe { sys::alpa_solution_status(self.ptr) })
    }

    /// The objective of the assignment.
    pub fn objective(&self) -> f64 {
        // SAFETY: getter.
        unsafe { sys::alpa_solution_objective(self.ptr) }
    }

    /// The best proven lower bound (-inf if none).
    pub fn lower_bound(&self) -> f64 {
        // SAFETY: getter.
        unsafe { sys::alpa_solution_lower_bound(self.ptr) }
    }

    /// Seconds the solve took.
    pub fn seconds(&self) -> f64 {
        // SAFETY: getter.
        unsafe { sys::alpa_solution_seconds(self.ptr) }
    }

    /// One strategy per node.
    pub fn assignment(&self) -> Vec<i32> {
        // SAFETY: count-then-fill into a buffer of `cap` entries.
        fill("alpa_solution_assignment", |out, cap| unsafe {
            sys::alpa_solution_assignment(self.ptr, out, cap)
        })
        .unwrap_or_default()
    }

    /// Why the solve stopped short of proving optimality; "" otherwise.
    pub fn message(&self) -> String {
        // SAFETY: valid while the solution lives; copied.
        unsafe { string_from(sys::alpa_solution_message(self.ptr)) }
    }

    /// The solution as JSON (status, objective, bound, seconds, assignment, stats).
    pub fn to_json(&self) -> Result<String> {
        // SAFETY: live handle.
        buffer_string(|out, err| unsafe { sys::alpa_solution_to_json(out, self.ptr, err) })
    }
}

impl fmt::Debug for Solution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Solution")
            .field("status", &self.status())
            .field("objective", &self.objective())
            .field("assignment", &self.assignment())
            .finish()
    }
}

impl fmt::Debug for ProblemBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProblemBuilder").field("nodes", &self.node_count()).finish()
    }
}

impl fmt::Debug for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Problem").field("nodes", &self.node_count()).field("edges", &self.edge_count()).finish()
    }
}

impl fmt::Debug for SolveOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SolveOptions")
            .field("cancel_token", &self.token.is_some())
            .field("progress", &self.callback.is_some())
            .finish()
    }
}
