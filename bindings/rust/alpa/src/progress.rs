//! Cancellation and progress callbacks. A callback runs on the thread that called the solve or
//! planning call (docs/threading.md); its panics are caught inside the trampoline so that they
//! never unwind through C, the call is cancelled, and the panic resumes on that same thread once
//! the library has returned.
use crate::error::{check, Result};
use crate::util::static_str;
use alpa_sys as sys;
use std::any::Any;
use std::cell::RefCell;
use std::os::raw::c_void;
use std::panic::{self, AssertUnwindSafe};
use std::ptr;
use std::sync::{Arc, Mutex};

struct TokenHandle(*mut sys::alpa_cancel_token);

// SAFETY: docs/threading.md: "`alpa_cancel_token_trigger` may be called from any thread at any
// time". The handle has no thread affinity; the only other call on it, destroy, happens once in
// Drop when the last owner lets go.
unsafe impl Send for TokenHandle {}
// SAFETY: the same sentence: "`alpa_cancel_token_trigger` may be called from any thread at any
// time"; trigger is the only call made through a shared reference.
unsafe impl Sync for TokenHandle {}

impl Drop for TokenHandle {
    fn drop(&mut self) {
        // SAFETY: the last owner: no options object refers to it any more (they hold a clone).
        unsafe { sys::alpa_cancel_token_destroy(self.0) }
    }
}

/// A cancel token: attach it to [`SolveOptions`](crate::SolveOptions) or
/// [`PlanOptions`](crate::PlanOptions), clone it to another thread and call
/// [`trigger`](CancelToken::trigger) there; the running call stops at its next check. A solve
/// with an assignment by then returns it with status `Cancelled`; a call without an answer yet
/// returns `Err` of kind [`Cancelled`](crate::ErrorKind::Cancelled). Options keep a clone, so
/// the token lives as long as any call that may use it.
#[derive(Clone)]
pub struct CancelToken(Arc<TokenHandle>);

impl CancelToken {
    /// A token, not triggered.
    pub fn new() -> Result<CancelToken> {
        let mut out: *mut sys::alpa_cancel_token = ptr::null_mut();
        // SAFETY: out-parameters are valid; on success we own the handle.
        check(|err| unsafe { sys::alpa_cancel_token_create(&mut out, err) })?;
        Ok(CancelToken(Arc::new(TokenHandle(out))))
    }

    /// Requests cancellation; any thread, any number of times. A token stays triggered.
    pub fn trigger(&self) {
        // SAFETY: a live handle; trigger is thread-safe (docs/threading.md).
        unsafe { sys::alpa_cancel_token_trigger((self.0).0) }
    }

    pub(crate) fn as_ptr(&self) -> *mut sys::alpa_cancel_token {
        (self.0).0
    }
}

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelToken").finish()
    }
}

/// A progress report of a solve or an auto-sharding call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SolveProgress {
    /// Seconds since the solve started.
    pub seconds: f64,
    /// The best feasible objective so far (+inf if none).
    pub objective: f64,
    /// The best proven lower bound (-inf if none).
    pub lower_bound: f64,
    /// "reduce", "elimination", "heuristic", "ilp", "warm_start".
    pub phase: &'static str,
}

/// A progress report of a planning call.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlanProgress {
    /// Seconds since the call started.
    pub seconds: f64,
    /// "build", "cluster", "intra-op", "dp".
    pub phase: &'static str,
    /// The microbatch count being planned.
    pub microbatches: i64,
    /// Intra-op solves finished for it.
    pub done: i64,
    /// Intra-op solves scheduled for it.
    pub total: i64,
}

type SolveFn = dyn FnMut(&SolveProgress) -> bool + Send;
type PlanFn = dyn FnMut(&PlanProgress) -> bool + Send;

/// The boxed callback an options object owns; its address is the C `user_data`. The mutex
/// makes a shared options object (used by several threads' calls at once) call it one at a time.
pub(crate) struct SolveCallback(Mutex<Box<SolveFn>>);
pub(crate) struct PlanCallback(Mutex<Box<PlanFn>>);

impl SolveCallback {
    pub(crate) fn new<F: FnMut(&SolveProgress) -> bool + Send + 'static>(f: F) -> Box<Self> {
        Box::new(SolveCallback(Mutex::new(Box::new(f))))
    }
}
impl PlanCallback {
    pub(crate) fn new<F: FnMut(&PlanProgress) -> bool + Send + 'static>(f: F) -> Box<Self> {
        Box::new(PlanCallback(Mutex::new(Box::new(f))))
    }
}

thread_local! {
    /// The payload of a callback panic on this thread, resumed after the C call returns.
    static CALLBACK_PANIC: RefCell<Option<Box<dyn Any + Send + 'static>>> = RefCell::new(None);
}

fn stash_panic(payload: Box<dyn Any + Send + 'static>) {
    let _ = CALLBACK_PANIC.try_with(|slot| {
        let mut slot = slot.borrow_mut();
        if slot.is_none() {
            *slot = Some(payload);
        }
    });
}

/// Forgets a stale panic (before a call that may run callbacks).
pub(crate) fn clear_panic() {
    let _ = CALLBACK_PANIC.try_with(|slot| slot.borrow_mut().take());
}

/// Resumes a panic a callback raised on this thread during the call that just returned.
/// Call it after every result handle is owned by a Rust value, so unwinding frees them.
pub(crate) fn resume_panic() {
    let payload = CALLBACK_PANIC.try_with(|slot| slot.borrow_mut().take()).ok().flatten();
    if let Some(payload) = payload {
        panic::resume_unwind(payload);
    }
}

pub(crate) unsafe extern "C" fn solve_trampoline(
    user_data: *mut c_void,
    progress: *const sys::alpa_progress,
) -> i32 {
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: user_data is the SolveCallback the options own (alive during the call);
        // progress is valid for the duration of the callback.
        let cb = &*(user_data as *const SolveCallback);
        let p = &*progress;
        let report = SolveProgress {
            seconds: p.seconds,
            objective: p.objective,
            lower_bound: p.lower_bound,
            phase: static_str(p.phase),
        };
        let mut f = cb.0.lock().unwrap_or_else(|e| e.into_inner());
        (*f)(&report)
    }));
    match result {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(payload) => {
            stash_panic(payload);
            1
        }
    }
}

pub(crate) unsafe extern "C" fn plan_trampoline(
    user_data: *mut c_void,
    progress: *const sys::alpa_plan_progress,
) -> i32 {
    let result = panic::catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: as in solve_trampoline.
        let cb = &*(user_data as *const PlanCallback);
        let p = &*progress;
        let report = PlanProgress {
            seconds: p.seconds,
            phase: static_str(p.phase),
            microbatches: p.microbatches,
            done: p.done,
            total: p.total,
        };
        let mut f = cb.0.lock().unwrap_or_else(|e| e.into_inner());
        (*f)(&report)
    }));
    match result {
        Ok(true) => 0,
        Ok(false) => 1,
        Err(payload) => {
            stash_panic(payload);
            1
        }
    }
}
