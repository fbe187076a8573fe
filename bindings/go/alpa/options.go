package alpa

/*
#include <stdint.h>
#include <stdlib.h>
#include "alpa.h"
int32_t alpa_go_solve_options_set_progress(alpa_solve_options* options, uintptr_t handle,
                                           alpa_error** err);
int32_t alpa_go_plan_options_set_progress(alpa_plan_options* options, uintptr_t handle,
                                          alpa_error** err);
*/
import "C"

import (
	"context"
	"fmt"
	"runtime"
	"runtime/cgo"
	"sync"
)

// ---- cancel tokens ---------------------------------------------------------------------------

// CancelToken cancels solves and planning calls that use it (SolveOptions.Cancel,
// PlanOptions.Cancel). Trigger may be called from any goroutine at any time; the call stops at
// its next check and returns its best answer so far (a solve), or ErrCancelled. Close it after
// every call using it has returned.
type CancelToken struct {
	mu sync.Mutex
	p  *C.alpa_cancel_token
}

// NewCancelToken returns a token that is not triggered.
func NewCancelToken() (*CancelToken, error) {
	var p *C.alpa_cancel_token
	var e *C.alpa_error
	if err := takeError(C.alpa_cancel_token_create(&p, &e), e); err != nil {
		return nil, err
	}
	t := &CancelToken{p: p}
	handleCreated()
	runtime.SetFinalizer(t, (*CancelToken).Close)
	return t, nil
}

// Trigger requests cancellation. Safe from any goroutine, any number of times; a no-op after
// Close.
func (t *CancelToken) Trigger() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.p != nil {
		C.alpa_cancel_token_trigger(t.p)
	}
}

// Close frees the token. Idempotent.
func (t *CancelToken) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.p != nil {
		C.alpa_cancel_token_destroy(t.p)
		t.p = nil
		runtime.SetFinalizer(t, nil)
		handleFreed()
	}
	return nil
}

func (t *CancelToken) ptr() *C.alpa_cancel_token {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.p
}

// callResources is what one C call borrows from its Go options: the C options object, the
// progress handle, the context watcher. release frees them after the call.
type callResources struct {
	state   *callState
	handle  cgo.Handle
	token   *CancelToken // made for a Context
	stop    chan struct{}
	done    chan struct{}
	borrows []interface{}
}

func (r *callResources) watch(ctx context.Context) error {
	if ctx == nil || ctx.Done() == nil {
		return nil
	}
	tok, err := NewCancelToken()
	if err != nil {
		return err
	}
	r.token = tok
	r.stop = make(chan struct{})
	r.done = make(chan struct{})
	if ctx.Err() != nil {
		tok.Trigger()
	}
	go func() {
		defer close(r.done)
		select {
		case <-ctx.Done():
			tok.Trigger()
		case <-r.stop:
		}
	}()
	return nil
}

// cancelToken is the C token a call polls: the caller's Cancel (borrowed for the call) or one
// triggered when ctx is done; nil when neither is set. `what` names the options in errors.
func (r *callResources) cancelToken(cancel *CancelToken, ctx context.Context, what string) (*C.alpa_cancel_token, error) {
	tok := cancel.ptr()
	if cancel != nil {
		if tok == nil {
			return nil, closedError("CancelToken")
		}
		r.borrows = append(r.borrows, cancel)
	}
	if ctx != nil && cancel != nil {
		return nil, statusError(StatusInvalidArgument, what+": set Cancel or Context, not both")
	}
	if err := r.watch(ctx); err != nil {
		return nil, err
	}
	if r.token != nil {
		tok = r.token.p
	}
	return tok, nil
}

func (r *callResources) release() {
	if r.stop != nil {
		close(r.stop)
		<-r.done
	}
	if r.token != nil {
		r.token.Close()
	}
	if r.handle != 0 {
		r.handle.Delete()
	}
	keepAlive(r.borrows...)
}

// ---- solve options ---------------------------------------------------------------------------

// Zero modes of SolveOptions.Zero (ALPA_ZERO_*).
type ZeroMode int32

const (
	ZeroOff    ZeroMode = C.ALPA_ZERO_OFF
	ZeroSearch ZeroMode = C.ALPA_ZERO_SEARCH
	ZeroForce  ZeroMode = C.ALPA_ZERO_FORCE
)

// SolveOptions configure Problem.Solve and Graph.AutoShard. The zero value (or a nil pointer)
// is the library's defaults; a zero field leaves its option at the default.
type SolveOptions struct {
	TimeLimitSeconds float64 // > 0: stop with the best assignment found (ALPA_OPT_TIME_LIMIT_SECONDS)
	Deterministic    bool    // identical answers run to run
	Threads          int     // 0: all hardware threads
	RelativeGap      float64 // stop within this relative gap
	WarmStart        []int32 // a starting assignment, one strategy per node

	// Auto-sharding (Graph.AutoShard only).
	AlpaCostModel     bool     // Alpa's abstract cost formulas (ALPA_COST_MODE_ALPA) instead of seconds
	Zero              ZeroMode // ZeRO: off (default), search, force
	ForceDataParallel bool     // weights replicated, batch split
	MemoryBudgetBytes int64    // > 0: bytes per device the plan must fit

	// Any solve or shard option by its library name ("batch_mesh_dim": "all",
	// "allow_all_to_all": "false", ...), applied after the fields above in name order.
	Set map[string]string

	Cancel   *CancelToken             // cancels the call when triggered
	Context  context.Context          // cancels the call when done (through a cancel token)
	Progress func(SolveProgress) bool // progress on the calling goroutine; false cancels
}

func (o *SolveOptions) build() (*C.alpa_solve_options, *callResources, error) {
	var opts *C.alpa_solve_options
	var e *C.alpa_error
	if err := takeError(C.alpa_solve_options_create(&opts, &e), e); err != nil {
		return nil, nil, err
	}
	res := &callResources{}
	fail := func(err error) (*C.alpa_solve_options, *callResources, error) {
		C.alpa_solve_options_destroy(opts)
		res.release()
		return nil, nil, err
	}
	if o == nil {
		return opts, res, nil
	}
	setD := func(key C.int32_t, v float64) error {
		var e *C.alpa_error
		return takeError(C.alpa_solve_options_set_double(opts, key, C.double(v), &e), e)
	}
	setI := func(key C.int32_t, v int64) error {
		var e *C.alpa_error
		return takeError(C.alpa_solve_options_set_int(opts, key, C.int64_t(v), &e), e)
	}
	steps := []func() error{
		func() error {
			if o.TimeLimitSeconds != 0 {
				return setD(C.ALPA_OPT_TIME_LIMIT_SECONDS, o.TimeLimitSeconds)
			}
			return nil
		},
		func() error {
			if o.Deterministic {
				return setI(C.ALPA_OPT_DETERMINISTIC, 1)
			}
			return nil
		},
		func() error {
			if o.Threads != 0 {
				return setI(C.ALPA_OPT_THREADS, int64(o.Threads))
			}
			return nil
		},
		func() error {
			if o.RelativeGap != 0 {
				return setD(C.ALPA_OPT_RELATIVE_GAP, o.RelativeGap)
			}
			return nil
		},
		func() error {
			if o.AlpaCostModel {
				return setI(C.ALPA_OPT_COST_MODEL, C.ALPA_COST_MODE_ALPA)
			}
			return nil
		},
		func() error {
			if o.Zero != ZeroOff {
				return setI(C.ALPA_OPT_ZERO, int64(o.Zero))
			}
			return nil
		},
		func() error {
			if o.ForceDataParallel {
				return setI(C.ALPA_OPT_FORCE_DATA_PARALLEL, 1)
			}
			return nil
		},
		func() error {
			if o.MemoryBudgetBytes > 0 {
				return setI(C.ALPA_OPT_MEMORY_BUDGET_BYTES, o.MemoryBudgetBytes)
			}
			return nil
		},
		func() error {
			if len(o.WarmStart) == 0 {
				return nil
			}
			var e *C.alpa_error
			st := C.alpa_solve_options_set_warm_start(opts, C.int64_t(len(o.WarmStart)),
				i32Ptr(o.WarmStart), &e)
			runtime.KeepAlive(o.WarmStart)
			return takeError(st, e)
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return fail(err)
		}
	}
	for _, name := range sortedKeys(o.Set) {
		cn, cv := cString(name), cString(o.Set[name])
		var e *C.alpa_error
		st := C.alpa_solve_options_set_by_name(opts, cn, cv, &e)
		freeCString(cn)
		freeCString(cv)
		if err := takeError(st, e); err != nil {
			return fail(err)
		}
	}
	tok, err := res.cancelToken(o.Cancel, o.Context, "SolveOptions")
	if err != nil {
		return fail(err)
	}
	if tok != nil {
		var e *C.alpa_error
		if err := takeError(C.alpa_solve_options_set_cancel_token(opts, tok, &e), e); err != nil {
			return fail(err)
		}
	}
	if o.Progress != nil {
		res.state = &callState{solve: o.Progress}
		res.handle = cgo.NewHandle(res.state)
		var e *C.alpa_error
		st := C.alpa_go_solve_options_set_progress(opts, C.uintptr_t(res.handle), &e)
		if err := takeError(st, e); err != nil {
			return fail(err)
		}
	}
	return opts, res, nil
}

// ---- plan options ----------------------------------------------------------------------------

// Remat is a recomputation choice (ALPA_REMAT_*): what PlanOptions.Remat asks the planner for
// (RematSearch: per stage, the planner's choice), what ManualPlan.Recompute states for every
// stage, and what Stage.Recompute reports (RematOff, RematOn or RematSelective).
type Remat int32

const (
	RematSearch    Remat = C.ALPA_REMAT_SEARCH    // per stage, searched (default)
	RematOff       Remat = C.ALPA_REMAT_OFF       // nothing recomputed
	RematOn        Remat = C.ALPA_REMAT_ON        // full: every forward recomputed in the backward
	RematSelective Remat = C.ALPA_REMAT_SELECTIVE // only the attention cores recomputed
)

// String is the choice's name as the "remat" option by name takes it ("search", "off", "on",
// "selective").
func (r Remat) String() string {
	switch r {
	case RematSearch:
		return "search"
	case RematOff:
		return "off"
	case RematOn:
		return "on"
	case RematSelective:
		return "selective"
	}
	return fmt.Sprintf("Remat(%d)", int32(r))
}

// PlanOptions configure the planning calls (PlanModel, Graph.Plan, PlanModelManual,
// PlanModelBaseline). The zero value (or a nil pointer) is the library's defaults; a zero field
// leaves its option at the default.
type PlanOptions struct {
	Microbatches      int64   // 0: searched over powers of two
	MaxMicrobatches   int64   // 0: the library's default (1024)
	NumLayers         int64   // 0: the graph's layers (<= 16)
	Threads           int     // 0: all hardware threads
	DeviceMemoryBytes int64   // 0: the cluster's device memory
	Remat             Remat   // RematSearch (default), RematOff, RematOn, RematSelective
	IntraOpExact      bool    // prove every intra-op solve with GLPK
	IntraOpTimeLimit  float64 // seconds per intra-op solve (0: default 0.5)

	// Any plan option by its library name ("intra_op_gap": "0", "clustering_delta": "0.25",
	// ...), applied after the fields above in name order.
	Set map[string]string

	Cancel   *CancelToken            // cancels the call when triggered
	Context  context.Context         // cancels the call when done (through a cancel token)
	Progress func(PlanProgress) bool // progress on the calling goroutine; false cancels
}

func (o *PlanOptions) build() (*C.alpa_plan_options, *callResources, error) {
	var opts *C.alpa_plan_options
	var e *C.alpa_error
	if err := takeError(C.alpa_plan_options_create(&opts, &e), e); err != nil {
		return nil, nil, err
	}
	res := &callResources{}
	fail := func(err error) (*C.alpa_plan_options, *callResources, error) {
		C.alpa_plan_options_destroy(opts)
		res.release()
		return nil, nil, err
	}
	if o == nil {
		return opts, res, nil
	}
	setI := func(key C.int32_t, v int64) error {
		if v == 0 {
			return nil
		}
		var e *C.alpa_error
		return takeError(C.alpa_plan_options_set_int(opts, key, C.int64_t(v), &e), e)
	}
	setD := func(key C.int32_t, v float64) error {
		if v == 0 {
			return nil
		}
		var e *C.alpa_error
		return takeError(C.alpa_plan_options_set_double(opts, key, C.double(v), &e), e)
	}
	exact := int64(0)
	if o.IntraOpExact {
		exact = 1
	}
	for _, err := range []func() error{
		func() error { return setI(C.ALPA_PLAN_OPT_MICROBATCHES, o.Microbatches) },
		func() error { return setI(C.ALPA_PLAN_OPT_MAX_MICROBATCHES, o.MaxMicrobatches) },
		func() error { return setI(C.ALPA_PLAN_OPT_NUM_LAYERS, o.NumLayers) },
		func() error { return setI(C.ALPA_PLAN_OPT_THREADS, int64(o.Threads)) },
		func() error { return setI(C.ALPA_PLAN_OPT_DEVICE_MEMORY_BYTES, o.DeviceMemoryBytes) },
		func() error { return setI(C.ALPA_PLAN_OPT_REMAT, int64(o.Remat)) },
		func() error { return setI(C.ALPA_PLAN_OPT_INTRA_OP_EXACT, exact) },
		func() error { return setD(C.ALPA_PLAN_OPT_INTRA_OP_TIME_LIMIT, o.IntraOpTimeLimit) },
	} {
		if err := err(); err != nil {
			return fail(err)
		}
	}
	for _, name := range sortedKeys(o.Set) {
		cn, cv := cString(name), cString(o.Set[name])
		var e *C.alpa_error
		st := C.alpa_plan_options_set_by_name(opts, cn, cv, &e)
		freeCString(cn)
		freeCString(cv)
		if err := takeError(st, e); err != nil {
			return fail(err)
		}
	}
	tok, err := res.cancelToken(o.Cancel, o.Context, "PlanOptions")
	if err != nil {
		return fail(err)
	}
	if tok != nil {
		var e *C.alpa_error
		if err := takeError(C.alpa_plan_options_set_cancel_token(opts, tok, &e), e); err != nil {
			return fail(err)
		}
	}
	if o.Progress != nil {
		res.state = &callState{plan: o.Progress}
		res.handle = cgo.NewHandle(res.state)
		var e *C.alpa_error
		st := C.alpa_go_plan_options_set_progress(opts, C.uintptr_t(res.handle), &e)
		if err := takeError(st, e); err != nil {
			return fail(err)
		}
	}
	return opts, res, nil
}

// withSolveOptions builds opts for one call and frees them (and their resources) after it.
func withSolveOptions(opts *SolveOptions, call func(o *C.alpa_solve_options) error) error {
	o, res, err := opts.build()
	if err != nil {
		return err
	}
	defer res.release()
	defer C.alpa_solve_options_destroy(o)
	return call(o)
}
