package alpa

/*
#include <stdlib.h>
#include "alpa_experimental.h"
*/
import "C"

import (
	"runtime"
)

// Schedule is a pipeline schedule of the simulator (ALPA_SCHEDULE_*).
type Schedule int32

const (
	ScheduleGPipe Schedule = C.ALPA_SCHEDULE_GPIPE // every forward, then every backward
	Schedule1F1B  Schedule = C.ALPA_SCHEDULE_1F1B  // one forward one backward, as the planner assumes

	// ScheduleZBH1 is the zero-bubble ZB-H1: each backward split into the input gradient and
	// the weight gradient, stage s keeping its s latest weight gradients for the drain.
	ScheduleZBH1 Schedule = C.ALPA_SCHEDULE_ZB_H1
)

// Simulation is one training iteration of a plan run event by event (experimental; see
// docs/planner.md, "Simulation"). Immutable; may be shared between goroutines.
type Simulation struct {
	p *C.alpa_simulation
}

func newSimulation(p *C.alpa_simulation) *Simulation {
	x := &Simulation{p: p}
	handleCreated()
	runtime.SetFinalizer(x, (*Simulation).Close)
	return x
}

// Close frees the simulation. Idempotent.
func (x *Simulation) Close() error {
	if x.p != nil {
		C.alpa_simulation_destroy(x.p)
		x.p = nil
		runtime.SetFinalizer(x, nil)
		handleFreed()
	}
	return nil
}

// Simulate simulates the plan on the cluster it was planned for.
func (x *Plan) Simulate(schedule Schedule) (*Simulation, error) {
	return x.simulate(schedule, false)
}

// SimulatePrograms simulates the plan on its device programs (`alpa simulate --programs`): the
// plan lowered as the executor lowers it, every instruction priced by the cost model.
func (x *Plan) SimulatePrograms(schedule Schedule) (*Simulation, error) {
	return x.simulate(schedule, true)
}

func (x *Plan) simulate(schedule Schedule, programs bool) (*Simulation, error) {
	if x.p == nil {
		return nil, closedError("Plan")
	}
	var s *C.alpa_simulation
	var e *C.alpa_error
	var st C.int32_t
	if programs {
		st = C.alpa_plan_simulate_programs(&s, x.p, C.int32_t(schedule), &e)
	} else {
		st = C.alpa_plan_simulate(&s, x.p, C.int32_t(schedule), &e)
	}
	runtime.KeepAlive(x)
	if err := takeError(st, e); err != nil {
		return nil, err
	}
	return newSimulation(s), nil
}

// SimulatePlanJSON simulates a plan given as JSON (Plan.JSON, `alpa plan -o` / `--json`).
func SimulatePlanJSON(planJSON []byte, schedule Schedule) (*Simulation, error) {
	var s *C.alpa_simulation
	var e *C.alpa_error
	st := C.alpa_plan_simulate_json(&s, bytesPtr(planJSON), C.size_t(len(planJSON)), C.int32_t(schedule), &e)
	runtime.KeepAlive(planJSON)
	if err := takeError(st, e); err != nil {
		return nil, err
	}
	return newSimulation(s), nil
}

// IterationSeconds is the simulated iteration time.
func (x *Simulation) IterationSeconds() float64 {
	v := float64(C.alpa_simulation_iteration_seconds(x.p))
	runtime.KeepAlive(x)
	return v
}

// ClosedFormSeconds is the stage DP's closed form on the simulated stages.
func (x *Simulation) ClosedFormSeconds() float64 {
	v := float64(C.alpa_simulation_closed_form_seconds(x.p))
	runtime.KeepAlive(x)
	return v
}

// PlannerSeconds is the plan's predicted iteration time (NaN when unknown).
func (x *Simulation) PlannerSeconds() float64 {
	v := float64(C.alpa_simulation_planner_seconds(x.p))
	runtime.KeepAlive(x)
	return v
}

// NumStages is the number of simulated stages.
func (x *Simulation) NumStages() int {
	v := int(C.alpa_simulation_stage_count(x.p))
	runtime.KeepAlive(x)
	return v
}

// SimulatedStage is one stage of a simulated iteration; busy + communication wait + idle =
// the iteration time.
type SimulatedStage struct {
	BusySeconds              float64
	CommunicationWaitSeconds float64
	IdleSeconds              float64
	BubbleFraction           float64
	FinishSeconds            float64
	PeakInFlight             int64
	PeakMemoryBytes          int64
}

// Stage reads simulated stage i.
func (x *Simulation) Stage(i int) (SimulatedStage, error) {
	if x.p == nil {
		return SimulatedStage{}, closedError("Simulation")
	}
	var s C.alpa_simulated_stage
	var e *C.alpa_error
	st := C.alpa_simulation_stage(&s, C.sizeof_alpa_simulated_stage, x.p, C.int32_t(i), &e)
	runtime.KeepAlive(x)
	if err := takeError(st, e); err != nil {
		return SimulatedStage{}, err
	}
	return SimulatedStage{
		BusySeconds: float64(s.busy_seconds), CommunicationWaitSeconds: float64(s.communication_wait_seconds),
		IdleSeconds: float64(s.idle_seconds), BubbleFraction: float64(s.bubble_fraction),
		FinishSeconds: float64(s.finish_seconds), PeakInFlight: int64(s.peak_in_flight),
		PeakMemoryBytes: int64(s.peak_memory_bytes),
	}, nil
}

// TimelineSVG is the iteration's timeline as a self-contained SVG picture width pixels wide
// (0: 1600; else 200..20000).
func (x *Simulation) TimelineSVG(width int) ([]byte, error) {
	if x.p == nil {
		return nil, closedError("Simulation")
	}
	var b *C.alpa_buffer
	var e *C.alpa_error
	st := C.alpa_simulation_timeline_to_svg(&b, x.p, C.int32_t(width), &e)
	runtime.KeepAlive(x)
	if err := takeError(st, e); err != nil {
		return nil, err
	}
	return takeBuffer(b), nil
}

// JSON is the simulation as one JSON object (docs/planner.md, "Simulation JSON").
func (x *Simulation) JSON() ([]byte, error) {
	if x.p == nil {
		return nil, closedError("Simulation")
	}
	var b *C.alpa_buffer
	var e *C.alpa_error
	st := C.alpa_simulation_to_json(&b, x.p, &e)
	runtime.KeepAlive(x)
	if err := takeError(st, e); err != nil {
		return nil, err
	}
	return takeBuffer(b), nil
}
