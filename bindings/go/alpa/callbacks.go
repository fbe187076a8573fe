package alpa

/*
#include <stdint.h>
#include "alpa.h"
*/
import "C"

import (
	"runtime/cgo"
)

// SolveProgress is one progress report of a solve (Problem.Solve, Graph.AutoShard).
type SolveProgress struct {
	Seconds    float64 // since the solve started
	Objective  float64 // best feasible objective so far, +Inf if none
	LowerBound float64 // best proven lower bound, -Inf if none
	Phase      string  // "reduce", "elimination", "heuristic", "ilp", "warm_start"
}

// PlanProgress is one progress report of a planning call.
type PlanProgress struct {
	Seconds      float64 // since the call started
	Phase        string  // "build", "cluster", "intra-op", "dp"
	Microbatches int64   // the microbatch count being planned
	Done, Total  int64   // intra-op solves finished / scheduled for it
}

// callState is what one C call's progress callback reaches through its cgo.Handle.
type callState struct {
	solve    func(SolveProgress) bool
	plan     func(PlanProgress) bool
	panicked bool
	panicVal interface{}
}

// rethrow re-raises, on the calling goroutine, a panic that a callback raised during the call
// (the callback cancelled the call instead of unwinding through C frames).
func (s *callState) rethrow() {
	if s != nil && s.panicked {
		panic(s.panicVal)
	}
}

func (s *callState) run(f func() bool) (ret C.int32_t) {
	if s.panicked {
		return 1
	}
	defer func() {
		if r := recover(); r != nil {
			s.panicked, s.panicVal = true, r
			ret = 1
		}
	}()
	if f() {
		return 0
	}
	return 1
}

//export alpaGoSolveProgress
func alpaGoSolveProgress(user C.uintptr_t, p *C.alpa_progress) C.int32_t {
	s := cgo.Handle(uintptr(user)).Value().(*callState)
	report := SolveProgress{
		Seconds:    float64(p.seconds),
		Objective:  float64(p.objective),
		LowerBound: float64(p.lower_bound),
		Phase:      C.GoString(p.phase),
	}
	return s.run(func() bool { return s.solve(report) })
}

//export alpaGoPlanProgress
func alpaGoPlanProgress(user C.uintptr_t, p *C.alpa_plan_progress) C.int32_t {
	s := cgo.Handle(uintptr(user)).Value().(*callState)
	report := PlanProgress{
		Seconds:      float64(p.seconds),
		Phase:        C.GoString(p.phase),
		Microbatches: int64(p.microbatches),
		Done:         int64(p.done),
		Total:        int64(p.total),
	}
	return s.run(func() bool { return s.plan(report) })
}
