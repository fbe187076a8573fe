package alpa

/*
#include <stdlib.h>
#include "alpa.h"
*/
import "C"

import (
	"runtime"
)

// DeviceMode is how an Executor's devices run (ALPA_DEVICES_*).
type DeviceMode int32

const (
	DevicesThreads DeviceMode = C.ALPA_DEVICES_THREADS // threads of this process
	DevicesMPI     DeviceMode = C.ALPA_DEVICES_MPI     // one MPI process per device
	DevicesNCCL    DeviceMode = C.ALPA_DEVICES_NCCL    // one process per device, each on its own GPU over NCCL
)

// Backend is what runs the devices' programs (ALPA_BACKEND_*).
type Backend int32

const (
	BackendCPU  Backend = C.ALPA_BACKEND_CPU  // the CPU runtime
	BackendCUDA Backend = C.ALPA_BACKEND_CUDA // a GPU per device (a library built with CUDA)
)

// ExecutorConfig configures NewExecutor. DefaultExecutorConfig gives the library's defaults
// with the plan's own schedule; a nil *ExecutorConfig means them too.
type ExecutorConfig struct {
	Schedule  Schedule // SchedulePlanned (default: the plan's own), Schedule1F1B, ScheduleGPipe, ...
	Seed      uint64   // synthetic parameters and data
	Check     bool     // compare every step with the one-device interpreter
	Devices   DeviceMode
	RTol      float64 // the check's tolerance per element: |a - b| <= ATol + RTol |b|
	ATol      float64
	Backend   Backend
	AllowTF32 bool // f32 contractions in TF32 on the GPU (loosen the tolerance)
}

// DefaultExecutorConfig is alpa_executor_config_init's defaults (seed 0, no check, thread
// devices, rtol 1e-5, atol 4e-5, the CPU backend), except the schedule: SchedulePlanned, the
// plan's own (the library's default, 1F1B, cannot run a plan made for interleaved 1F1B).
func DefaultExecutorConfig() ExecutorConfig {
	var c C.alpa_executor_config
	C.alpa_executor_config_init(&c, C.sizeof_alpa_executor_config, nil)
	return ExecutorConfig{
		Schedule: SchedulePlanned, Seed: uint64(c.seed), Check: c.check != 0,
		Devices: DeviceMode(c.devices), RTol: float64(c.rtol), ATol: float64(c.atol),
		Backend: Backend(c.backend), AllowTF32: c.allow_tf32 != 0,
	}
}

func (x *ExecutorConfig) toC(plan *Plan) C.alpa_executor_config {
	var c C.alpa_executor_config
	C.alpa_executor_config_init(&c, C.sizeof_alpa_executor_config, nil)
	c.schedule = C.int32_t(x.Schedule.resolve(plan))
	c.seed = C.uint64_t(x.Seed)
	c.check = b32(x.Check)
	c.devices = C.int32_t(x.Devices)
	c.rtol = C.double(x.RTol)
	c.atol = C.double(x.ATol)
	c.backend = C.int32_t(x.Backend)
	c.allow_tf32 = b32(x.AllowTF32)
	return c
}

// Executor runs a plan's device programs, one training step at a time (docs/executor.md).
// Parameters and optimizer state stay on the devices between steps. Not safe for concurrent
// use: call it from one goroutine at a time.
type Executor struct {
	p *C.alpa_executor
}

// StepResult is what one training step reports.
type StepResult struct {
	Step           int64
	Loss           float64 // mean over the microbatches
	Seconds        float64 // wall time of the slowest device
	Passed         bool    // false when the check found a difference above tolerance
	ReferenceLoss  float64 // the one-device interpreter's loss with Check; else NaN
	LossError      float64 // with Check: max |a - b| / (atol + rtol |b|); else NaN
	ParameterError float64 // the same over every parameter and optimizer state
	PeakBytes      int64   // the largest measured peak over the devices
	PlannedBytes   int64   // the planner's memory for that device
}

// NewExecutor lowers plan to one program per device and prepares the devices. config may be
// nil (defaults: DefaultExecutorConfig, the plan's own schedule). Errors: ErrInvalidArgument (a
// bad config field, named; a schedule the plan is not made for where only one fits it: an
// interleaved plan runs only under ScheduleInterleaved1F1B, other plans never under it),
// ErrUnsupported (what the executor cannot run yet, naming the op; the CUDA backend in a library
// built without it), ErrInternal (a plan whose layouts do not fit together).
func NewExecutor(plan *Plan, config *ExecutorConfig) (*Executor, error) {
	if plan == nil || plan.p == nil {
		return nil, closedError("Plan")
	}
	cfg := DefaultExecutorConfig()
	if config != nil {
		cfg = *config
	}
	c := cfg.toC(plan)
	var p *C.alpa_executor
	var e *C.alpa_error
	st := C.alpa_executor_create(&p, plan.p, &c, &e)
	runtime.KeepAlive(plan)
	if err := takeError(st, e); err != nil {
		return nil, err
	}
	x := &Executor{p: p}
	handleCreated()
	runtime.SetFinalizer(x, (*Executor).Close)
	return x, nil
}

// Close frees the executor (and, with DevicesMPI, finalizes MPI). Idempotent.
func (x *Executor) Close() error {
	if x.p != nil {
		C.alpa_executor_destroy(x.p)
		x.p = nil
		runtime.SetFinalizer(x, nil)
		handleFreed()
	}
	return nil
}

// Devices is the number of devices the programs run on; -1 when closed.
func (x *Executor) Devices() int {
	n := int(C.alpa_executor_devices(x.p))
	runtime.KeepAlive(x)
	return n
}

// Rank is this process's rank (DevicesMPI; 0 with thread devices); -1 when closed.
func (x *Executor) Rank() int {
	n := int(C.alpa_executor_rank(x.p))
	runtime.KeepAlive(x)
	return n
}

// GPU is the GPU device `device`'s program runs on with BackendCUDA; -1 otherwise.
func (x *Executor) GPU(device int) int {
	n := int(C.alpa_executor_gpu(x.p, C.int32_t(device)))
	runtime.KeepAlive(x)
	return n
}

// ProgramText is device `device`'s program, one instruction per line (what `alpa compile`
// prints); device -1: every device's.
func (x *Executor) ProgramText(device int) (string, error) {
	if x.p == nil {
		return "", closedError("Executor")
	}
	var b *C.alpa_buffer
	var e *C.alpa_error
	st := C.alpa_executor_program_text(&b, x.p, C.int32_t(device), &e)
	runtime.KeepAlive(x)
	if err := takeError(st, e); err != nil {
		return "", err
	}
	return string(takeBuffer(b)), nil
}

// SetParameter replaces a parameter or optimizer state (by its op name, "fc0.w", "fc0.w.m")
// with the whole tensor in row-major order. ErrInvalidArgument names the tensor for an unknown
// name or a wrong length.
func (x *Executor) SetParameter(name string, values []float64) error {
	return x.setTensor(name, values, "Executor.SetParameter", true)
}

// SetInput sets the next step's data of input `name` (the whole batch, row-major); inputs not
// set are synthetic.
func (x *Executor) SetInput(name string, values []float64) error {
	return x.setTensor(name, values, "Executor.SetInput", false)
}

func (x *Executor) setTensor(name string, values []float64, what string, parameter bool) error {
	if x.p == nil {
		return closedError("Executor")
	}
	cn := cString(name)
	defer freeCString(cn)
	var e *C.alpa_error
	var st C.int32_t
	if parameter {
		st = C.alpa_executor_set_parameter(x.p, cn, f64Ptr(values), C.int64_t(len(values)), &e)
	} else {
		st = C.alpa_executor_set_input(x.p, cn, f64Ptr(values), C.int64_t(len(values)), &e)
	}
	runtime.KeepAlive(values)
	runtime.KeepAlive(x)
	return takeError(st, e)
}

// RunStep runs one training step on every device. A failing device ends the step everywhere
// with its message (the executor is then unusable). A check above tolerance is not an error:
// StepResult.Passed is false.
func (x *Executor) RunStep() (StepResult, error) {
	if x.p == nil {
		return StepResult{}, closedError("Executor")
	}
	var r C.alpa_step_result
	var e *C.alpa_error
	st := C.alpa_executor_run_step(x.p, &r, C.sizeof_alpa_step_result, &e)
	runtime.KeepAlive(x)
	if err := takeError(st, e); err != nil {
		return StepResult{}, err
	}
	return StepResult{
		Step: int64(r.step), Loss: float64(r.loss), Seconds: float64(r.seconds),
		Passed: r.passed != 0, ReferenceLoss: float64(r.reference_loss),
		LossError: float64(r.loss_error), ParameterError: float64(r.parameter_error),
		PeakBytes: int64(r.peak_bytes), PlannedBytes: int64(r.planned_bytes),
	}, nil
}

// Parameter is a parameter's or optimizer state's current values (the whole tensor, row-major),
// assembled from the devices. ErrInvalidArgument for an unknown name.
func (x *Executor) Parameter(name string) ([]float64, error) {
	if x.p == nil {
		return nil, closedError("Executor")
	}
	cn := cString(name)
	defer freeCString(cn)
	get := func(out *C.double, capacity C.int64_t) (C.int64_t, error) {
		var e *C.alpa_error
		n := C.alpa_executor_get_parameter(x.p, cn, out, capacity, &e)
		if n < 0 {
			return n, takeError(C.int32_t(-n), e)
		}
		if e != nil {
			C.alpa_error_free(e)
		}
		return n, nil
	}
	n, err := get(nil, 0)
	if err != nil {
		return nil, err
	}
	out := make([]float64, int(n))
	if n > 0 {
		if _, err := get(f64Ptr(out), n); err != nil {
			return nil, err
		}
	}
	runtime.KeepAlive(x)
	return out, nil
}
