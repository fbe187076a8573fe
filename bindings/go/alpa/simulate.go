package alpa

/*
#include <stdlib.h>
#include "alpa_experimental.h"
*/
import "C"

import (
	"encoding/json"
	"runtime"
	"strconv"
)

// Schedule is a pipeline schedule of the simulator and the executor (ALPA_SCHEDULE_*).
type Schedule int32

const (
	// SchedulePlanned is the schedule the plan is made for (Plan.Schedule; a plan JSON's
	// "schedule"): what Simulate, SimulatePrograms, SimulatePlanJSON and NewExecutor should
	// usually be given, since a plan made for ZB-H1 or interleaved 1F1B is predicted under it,
	// and an interleaved plan runs under nothing else. The binding's own value (-1), resolved
	// before the C call.
	SchedulePlanned Schedule = -1

	ScheduleGPipe Schedule = C.ALPA_SCHEDULE_GPIPE // every forward, then every backward
	Schedule1F1B  Schedule = C.ALPA_SCHEDULE_1F1B  // one forward one backward, as the planner assumes

	// ScheduleZBH1 is the zero-bubble ZB-H1: each backward split into the input gradient and
	// the weight gradient, stage s keeping its s latest weight gradients for the drain.
	ScheduleZBH1 Schedule = C.ALPA_SCHEDULE_ZB_H1

	// ScheduleInterleaved1F1B is interleaved 1F1B (Megatron-LM's virtual pipeline stages): each
	// device group runs Plan.VirtualStages stages, the bubble shrinking by that factor. Only for
	// a plan made for it (the "interleave" plan option), and such a plan runs only under it.
	ScheduleInterleaved1F1B Schedule = C.ALPA_SCHEDULE_INTERLEAVED_1F1B
)

var scheduleNames = map[Schedule]string{
	ScheduleGPipe:           "gpipe",
	Schedule1F1B:            "1f1b",
	ScheduleZBH1:            "zb-h1",
	ScheduleInterleaved1F1B: "interleaved-1f1b",
}

// String is the schedule's name as the plan JSON and the CLI write it ("gpipe", "1f1b",
// "zb-h1", "interleaved-1f1b"; "planned" for SchedulePlanned).
func (s Schedule) String() string {
	if s == SchedulePlanned {
		return "planned"
	}
	if name, ok := scheduleNames[s]; ok {
		return name
	}
	return "Schedule(" + strconv.Itoa(int(s)) + ")"
}

// scheduleNamed is the schedule of a plan JSON's "schedule" name; 1F1B for any other.
func scheduleNamed(name string) Schedule {
	for s, n := range scheduleNames {
		if n == name {
			return s
		}
	}
	return Schedule1F1B
}

// resolve is s, or the plan's own schedule for SchedulePlanned.
func (s Schedule) resolve(plan *Plan) Schedule {
	if s != SchedulePlanned {
		return s
	}
	return plan.PipelineSchedule()
}

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

// Simulate simulates the plan on the cluster it was planned for under schedule
// (SchedulePlanned: the plan's own).
func (x *Plan) Simulate(schedule Schedule) (*Simulation, error) {
	return x.simulate(schedule, false)
}

// SimulatePrograms simulates the plan on its device programs (`alpa simulate --programs`): the
// plan lowered as the executor lowers it, every instruction priced by the cost model
// (SchedulePlanned: the plan's own schedule).
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
	schedule = schedule.resolve(x)
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

// SimulatePlanJSON simulates a plan given as JSON (Plan.JSON, `alpa plan -o` / `--json`) under
// schedule; SchedulePlanned: the JSON's "schedule" ("1f1b" where it has none).
func SimulatePlanJSON(planJSON []byte, schedule Schedule) (*Simulation, error) {
	if schedule == SchedulePlanned {
		// Only the one field; malformed JSON is left to the library, which names the error.
		var doc struct {
			Schedule string `json:"schedule"`
		}
		schedule = Schedule1F1B
		if json.Unmarshal(planJSON, &doc) == nil {
			schedule = scheduleNamed(doc.Schedule)
		}
	}
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
