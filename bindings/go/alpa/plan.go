package alpa

/*
#include <stdlib.h>
#include "alpa_experimental.h"
*/
import "C"

import (
	"fmt"
	"runtime"
)

// Plan is a pipeline plan: stages, their submeshes, logical meshes and sharding, and the
// predicted iteration time (docs/planner.md). Immutable; keeps its own copy of the planned
// graph; may be shared between goroutines.
type Plan struct {
	p *C.alpa_plan
}

func newPlan(p *C.alpa_plan) *Plan {
	x := &Plan{p: p}
	handleCreated()
	runtime.SetFinalizer(x, (*Plan).Close)
	return x
}

// Close frees the plan. Idempotent.
func (x *Plan) Close() error {
	if x.p != nil {
		C.alpa_plan_destroy(x.p)
		x.p = nil
		runtime.SetFinalizer(x, nil)
		handleFreed()
	}
	return nil
}

func runPlan(opts *PlanOptions, borrows []interface{}, call func(o *C.alpa_plan_options, out **C.alpa_plan, e **C.alpa_error) C.int32_t) (*Plan, error) {
	o, res, err := opts.build()
	if err != nil {
		return nil, err
	}
	var p *C.alpa_plan
	var e *C.alpa_error
	st := call(o, &p, &e)
	C.alpa_plan_options_destroy(o)
	res.release()
	keepAlive(opts)
	keepAlive(borrows...)
	if err := takeError(st, e); err != nil {
		res.state.rethrow()
		return nil, err
	}
	plan := newPlan(p)
	res.state.rethrow()
	return plan, nil
}

// PlanModel plans a model-zoo spec ("gpt-2.6b", "gpt:hidden=256,layers=4,...") on a cluster.
// opts may be nil (defaults). Errors: ErrInvalidArgument (a bad spec or option, microbatches
// that do not divide the batch), ErrInfeasible (nothing fits the device memory; the message
// gives the smallest memory that fits), ErrCancelled.
func PlanModel(spec string, cluster *Cluster, opts *PlanOptions) (*Plan, error) {
	if cluster == nil || cluster.p == nil {
		return nil, closedError("Cluster")
	}
	cs := cString(spec)
	defer freeCString(cs)
	return runPlan(opts, []interface{}{cluster}, func(o *C.alpa_plan_options, out **C.alpa_plan, e **C.alpa_error) C.int32_t {
		return C.alpa_model_plan(out, cs, cluster.p, o, e)
	})
}

// Plan plans a finalized graph of one microbatch on a cluster (its ops' layer markers are the
// layers). Same errors as PlanModel, plus ErrInvalidGraph.
func (x *Graph) Plan(cluster *Cluster, opts *PlanOptions) (*Plan, error) {
	if x.p == nil {
		return nil, closedError("Graph")
	}
	if cluster == nil || cluster.p == nil {
		return nil, closedError("Cluster")
	}
	return runPlan(opts, []interface{}{x, cluster}, func(o *C.alpa_plan_options, out **C.alpa_plan, e **C.alpa_error) C.int32_t {
		return C.alpa_graph_plan(out, x.p, cluster.p, o, e)
	})
}

// ManualPlan is a pipeline configuration stated Megatron-LM style (experimental).
type ManualPlan struct {
	ZeroStage        int32 // 0: off; 1: optimizer state sharded over data-parallel devices; 2: gradients too; 3: weights too
	DataParallel     int64 // dp x tp x pp = the cluster's devices
	TensorParallel   int64
	PipelineParallel int64
	Microbatches     int64
	// Recompute is every stage's recomputation in the backward: RematOff, RematOn (full) or
	// RematSelective (only the attention cores). RematSearch, the zero value, leaves it to Remat.
	Recompute Remat
	// Remat is the two-way form: true asks for full recomputation when Recompute is
	// RematSearch. Read back (DefaultManualPlan, Plan.ManualSpec) it is true when anything is
	// recomputed, full or selective; Recompute then says which.
	Remat            bool
	TensorInsideHost bool // tensor parallelism inside a host (the library's default)
	// VirtualStages is the stages per device group: 1 (the default; 0 means 1 too), or v >= 2
	// for interleaved 1F1B (PipelineParallel x v stages, stage s on the devices of group
	// s % PipelineParallel; the plan's schedule is then ScheduleInterleaved1F1B).
	VirtualStages int32
}

// DefaultManualPlan is the library's defaults (alpa_manual_plan_init): dp = tp = pp = 1, one
// microbatch, ZeRO and recomputation off (Recompute RematOff), tensor parallelism inside a host,
// one stage per device group.
func DefaultManualPlan() ManualPlan {
	var c C.alpa_manual_plan
	C.alpa_manual_plan_init(&c, C.sizeof_alpa_manual_plan, nil)
	return manualFromC(&c)
}

func manualFromC(c *C.alpa_manual_plan) ManualPlan {
	return ManualPlan{
		ZeroStage: int32(c.zero_stage), DataParallel: int64(c.data_parallel),
		TensorParallel: int64(c.tensor_parallel), PipelineParallel: int64(c.pipeline_parallel),
		Microbatches: int64(c.microbatches), Recompute: recomputeFromC(c.remat), Remat: c.remat != 0,
		TensorInsideHost: c.tensor_inside_host != 0, VirtualStages: virtualStagesFromC(c),
	}
}

// virtualStagesFromC is c's virtual_stages; 1 for a version-1 answer, which ends before it.
func virtualStagesFromC(c *C.alpa_manual_plan) int32 {
	if c.version < 2 {
		return 1
	}
	return int32(c.virtual_stages)
}

// recomputeFromC reads the recomputation of alpa_stage_info.remat and alpa_manual_plan.remat
// (0 none, 1 full, 2 selective); RematSearch for a kind this binding does not know (a newer
// library).
func recomputeFromC(v C.int32_t) Remat {
	switch v {
	case 0:
		return RematOff
	case 1:
		return RematOn
	case 2:
		return RematSelective
	}
	return RematSearch
}

// recomputeToC is alpa_manual_plan.remat for manual: Recompute when set, else Remat.
func recomputeToC(manual ManualPlan) (C.int32_t, error) {
	switch manual.Recompute {
	case RematSearch:
		return b32(manual.Remat), nil
	case RematOff:
		return 0, nil
	case RematOn:
		return 1, nil
	case RematSelective:
		return 2, nil
	}
	return 0, statusError(StatusInvalidArgument, fmt.Sprintf(
		"ManualPlan.Recompute: %v is not RematOff, RematOn, RematSelective or RematSearch (Remat decides)",
		manual.Recompute))
}

func b32(v bool) C.int32_t {
	if v {
		return 1
	}
	return 0
}

// PlanModelManual evaluates one manual configuration with the planner's cost model
// (experimental). ErrInvalidArgument names a bad field; ErrInfeasible names the stage that does
// not fit.
func PlanModelManual(spec string, cluster *Cluster, manual ManualPlan, opts *PlanOptions) (*Plan, error) {
	if cluster == nil || cluster.p == nil {
		return nil, closedError("Cluster")
	}
	remat, err := recomputeToC(manual)
	if err != nil {
		return nil, err
	}
	var c C.alpa_manual_plan
	C.alpa_manual_plan_init(&c, C.sizeof_alpa_manual_plan, nil)
	c.zero_stage = C.int32_t(manual.ZeroStage)
	c.data_parallel = C.int64_t(manual.DataParallel)
	c.tensor_parallel = C.int64_t(manual.TensorParallel)
	c.pipeline_parallel = C.int64_t(manual.PipelineParallel)
	c.microbatches = C.int64_t(manual.Microbatches)
	c.remat = remat
	c.tensor_inside_host = b32(manual.TensorInsideHost)
	if manual.VirtualStages != 0 {
		c.virtual_stages = C.int32_t(manual.VirtualStages)
	}
	cs := cString(spec)
	defer freeCString(cs)
	return runPlan(opts, []interface{}{cluster}, func(o *C.alpa_plan_options, out **C.alpa_plan, e **C.alpa_error) C.int32_t {
		return C.alpa_model_plan_manual(out, cs, cluster.p, &c, o, e)
	})
}

// PlanModelBaseline runs the Megatron-LM baseline search (experimental): the fastest feasible
// manual plan of the grid.
func PlanModelBaseline(spec string, cluster *Cluster, opts *PlanOptions) (*Plan, error) {
	if cluster == nil || cluster.p == nil {
		return nil, closedError("Cluster")
	}
	cs := cString(spec)
	defer freeCString(cs)
	return runPlan(opts, []interface{}{cluster}, func(o *C.alpa_plan_options, out **C.alpa_plan, e **C.alpa_error) C.int32_t {
		return C.alpa_model_plan_baseline(out, cs, cluster.p, o, e)
	})
}

// ManualSpec is the configuration of a plan made by PlanModelManual or PlanModelBaseline.
func (x *Plan) ManualSpec() (ManualPlan, error) {
	if x.p == nil {
		return ManualPlan{}, closedError("Plan")
	}
	var c C.alpa_manual_plan
	var e *C.alpa_error
	st := C.alpa_plan_manual_spec(&c, C.sizeof_alpa_manual_plan, x.p, &e)
	runtime.KeepAlive(x)
	if err := takeError(st, e); err != nil {
		return ManualPlan{}, err
	}
	return manualFromC(&c), nil
}

// IterationSeconds is the predicted iteration time (what the planner ranks plans by).
func (x *Plan) IterationSeconds() float64 {
	v := float64(C.alpa_plan_iteration_seconds(x.p))
	runtime.KeepAlive(x)
	return v
}

// PeriodSeconds is the steady-state seconds per microbatch of the prediction.
func (x *Plan) PeriodSeconds() float64 {
	v := float64(C.alpa_plan_period_seconds(x.p))
	runtime.KeepAlive(x)
	return v
}

// ScheduleSeconds is the stage DP's objective, without the transfers.
func (x *Plan) ScheduleSeconds() float64 {
	v := float64(C.alpa_plan_schedule_seconds(x.p))
	runtime.KeepAlive(x)
	return v
}

// CompileSeconds is the time the planning call took.
func (x *Plan) CompileSeconds() float64 {
	v := float64(C.alpa_plan_compile_seconds(x.p))
	runtime.KeepAlive(x)
	return v
}

// Microbatches per iteration.
func (x *Plan) Microbatches() int64 {
	v := int64(C.alpa_plan_microbatches(x.p))
	runtime.KeepAlive(x)
	return v
}

// Schedule is the name of the pipeline schedule the plan is made for: "1f1b", "zb-h1" where
// the zero_bubble option let the planner choose the zero-bubble schedule, or
// "interleaved-1f1b" where the interleave option let it choose interleaved 1F1B.
func (x *Plan) Schedule() string {
	return x.PipelineSchedule().String()
}

// PipelineSchedule is the schedule the plan is made for (Schedule1F1B, ScheduleZBH1 or
// ScheduleInterleaved1F1B): its prediction, in-flight counts and memory assume it. Schedule1F1B
// for a closed plan.
func (x *Plan) PipelineSchedule() Schedule {
	v := Schedule(C.alpa_plan_pipeline_schedule(x.p))
	runtime.KeepAlive(x)
	if _, ok := scheduleNames[v]; !ok {
		return Schedule1F1B
	}
	return v
}

// VirtualStages is the number of stages per device group: 1, or v >= 2 for an interleaved
// 1F1B plan, whose stage s then runs on the devices of stage s % (NumStages() / v). 0 for a
// closed plan.
func (x *Plan) VirtualStages() int {
	v := int(C.alpa_plan_virtual_stages(x.p))
	runtime.KeepAlive(x)
	return v
}

// PeakMemoryBytes is the largest per-device memory over the stages.
func (x *Plan) PeakMemoryBytes() int64 {
	v := int64(C.alpa_plan_peak_memory_bytes(x.p))
	runtime.KeepAlive(x)
	return v
}

// TFLOPSPerDevice is the achieved TFLOP/s per device at the predicted iteration time.
func (x *Plan) TFLOPSPerDevice() float64 {
	v := float64(C.alpa_plan_tflops_per_device(x.p))
	runtime.KeepAlive(x)
	return v
}

// NumStages is the number of pipeline stages.
func (x *Plan) NumStages() int {
	v := int(C.alpa_plan_stage_count(x.p))
	runtime.KeepAlive(x)
	return v
}

// Stage is one pipeline stage.
type Stage struct {
	Index                    int
	FirstLayer, LastLayer    int   // layer groups, inclusive
	SubmeshHosts             int64 // the submesh: hosts x devices per host
	SubmeshDevicesPerHost    int64
	LogicalMesh              []int64 // 1 or 2 dims
	Devices                  []int64 // physical ids: host * devices_per_host + local index
	DataParallel             int64
	TensorParallel           int64
	ZeRO                     bool    // optimizer state sharded over the data-parallel devices
	ShardGradients           bool    // ZeRO-2: gradients reduce-scattered per microbatch, held as shards
	ShardParameters          bool    // ZeRO-3: weights held as shards, gathered where read
	Recompute                Remat   // RematOff, RematOn (full) or RematSelective (attention cores)
	Remat                    bool    // anything recomputed in the backward (full or selective)
	LatencySeconds           float64 // one microbatch, forward + backward
	IterationOverheadSeconds float64 // gradient synchronisation and update, once per iteration
	MemoryBytes              int64   // per device at its peak
	InFlight                 int64   // microbatches of activations it holds (1F1B)
}

// Stage reads stage i.
func (x *Plan) Stage(i int) (Stage, error) {
	if x.p == nil {
		return Stage{}, closedError("Plan")
	}
	var info C.alpa_stage_info
	var e *C.alpa_error
	st := C.alpa_plan_stage(&info, C.sizeof_alpa_stage_info, x.p, C.int32_t(i), &e)
	if err := takeError(st, e); err != nil {
		return Stage{}, err
	}
	devices, err := countThenFill("Plan.Stage devices", func(out *C.int64_t, c C.int64_t) C.int64_t {
		return C.alpa_plan_stage_devices(x.p, C.int32_t(i), out, c)
	})
	runtime.KeepAlive(x)
	if err != nil {
		return Stage{}, err
	}
	mesh := make([]int64, int(info.logical_ndim))
	for d := range mesh {
		mesh[d] = int64(info.logical_mesh[d])
	}
	return Stage{
		Index: i, FirstLayer: int(info.first_layer), LastLayer: int(info.last_layer),
		SubmeshHosts: int64(info.submesh_hosts), SubmeshDevicesPerHost: int64(info.submesh_devices_per_host),
		LogicalMesh: mesh, Devices: toInt64s(devices),
		DataParallel: int64(info.data_parallel), TensorParallel: int64(info.tensor_parallel),
		ZeRO: info.zero != 0, ShardGradients: info.zero == 2, ShardParameters: info.zero == 3, Recompute: recomputeFromC(info.remat), Remat: info.remat != 0,
		LatencySeconds: float64(info.latency_seconds), IterationOverheadSeconds: float64(info.iteration_overhead_seconds),
		MemoryBytes: int64(info.memory_bytes), InFlight: int64(info.in_flight),
	}, nil
}

// Stages reads every stage.
func (x *Plan) Stages() ([]Stage, error) {
	n := x.NumStages()
	out := make([]Stage, 0, n)
	for i := 0; i < n; i++ {
		s, err := x.Stage(i)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// OpStages is, per op of the planned graph, the stage that computes it (-1 for ops of no layer).
func (x *Plan) OpStages() ([]int32, error) {
	out, err := countThenFill("Plan.OpStages", func(out *C.int32_t, c C.int64_t) C.int64_t {
		return C.alpa_plan_op_stages(x.p, out, c)
	})
	runtime.KeepAlive(x)
	if err != nil {
		return nil, err
	}
	return toInt32s(out), nil
}

// StageCollectives lists the collectives a stage inserts, piece after piece.
func (x *Plan) StageCollectives(stage int) ([]Collective, error) {
	out, err := collectivesOf(func(out *C.alpa_collective, n C.int64_t) C.int64_t {
		return C.alpa_plan_stage_collectives(x.p, C.int32_t(stage), out, n, C.sizeof_alpa_collective)
	}, "Plan.StageCollectives")
	runtime.KeepAlive(x)
	return out, err
}

// Transfer is a tensor one stage sends another each microbatch.
type Transfer struct {
	FromStage, ToStage int
	Tensor             int32   // op id in the planned graph
	Bytes              int64   // the whole tensor
	Seconds            float64 // estimate
}

// Transfers lists the cross-stage transfers.
func (x *Plan) Transfers() ([]Transfer, error) {
	raw, err := countThenFill("Plan.Transfers", func(out *C.alpa_transfer, c C.int64_t) C.int64_t {
		return C.alpa_plan_transfers(x.p, out, c, C.sizeof_alpa_transfer)
	})
	runtime.KeepAlive(x)
	if err != nil {
		return nil, err
	}
	out := make([]Transfer, len(raw))
	for i, t := range raw {
		out[i] = Transfer{FromStage: int(t.from_stage), ToStage: int(t.to_stage), Tensor: int32(t.tensor),
			Bytes: int64(t.bytes), Seconds: float64(t.seconds)}
	}
	return out, nil
}

// SliceMove is one device-to-device piece of a transfer: the box (offsets, sizes in elements
// per tensor dim) that SrcDevice sends DstDevice each microbatch.
type SliceMove struct {
	SrcDevice, DstDevice int64
	Offsets, Sizes       []int64
	Bytes                int64
}

// TransferMoves lists transfer i's slice moves, by receiving device, then slice.
// ErrUnsupported for a tensor of more than 8 dims (the plan JSON at detail 1 lists those).
func (x *Plan) TransferMoves(i int) ([]SliceMove, error) {
	raw, err := countThenFill("Plan.TransferMoves", func(out *C.alpa_slice_move, c C.int64_t) C.int64_t {
		return C.alpa_plan_transfer_moves(x.p, C.int64_t(i), out, c, C.sizeof_alpa_slice_move)
	})
	runtime.KeepAlive(x)
	if err != nil {
		return nil, err
	}
	out := make([]SliceMove, len(raw))
	for k, m := range raw {
		rank := int(m.rank)
		mv := SliceMove{SrcDevice: int64(m.src_device), DstDevice: int64(m.dst_device),
			Bytes: int64(m.bytes), Offsets: make([]int64, rank), Sizes: make([]int64, rank)}
		for d := 0; d < rank; d++ {
			mv.Offsets[d], mv.Sizes[d] = int64(m.offsets[d]), int64(m.sizes[d])
		}
		out[k] = mv
	}
	return out, nil
}

// ScheduleTask is one task of a stage's schedule (Backward: under ZB-H1 the input gradient or
// the weight gradient).
type ScheduleTask struct {
	Backward   bool
	Microbatch int
}

// StageSchedule is a stage's tasks in the order of the plan's schedule (PipelineSchedule): under
// 1F1B and interleaved 1F1B each microbatch once forward, later once backward (interleaved: the
// stage's own tasks, in its device group's order).
func (x *Plan) StageSchedule(stage int) ([]ScheduleTask, error) {
	raw, err := countThenFill("Plan.StageSchedule", func(out *C.int32_t, c C.int64_t) C.int64_t {
		return C.alpa_plan_stage_schedule(x.p, C.int32_t(stage), out, c)
	})
	runtime.KeepAlive(x)
	if err != nil {
		return nil, err
	}
	out := make([]ScheduleTask, len(raw)/2)
	for i := range out {
		out[i] = ScheduleTask{Backward: raw[2*i] != 0, Microbatch: int(raw[2*i+1])}
	}
	return out, nil
}

// Graph is a copy of the planned graph (one microbatch), whose op ids OpStages and the
// collectives use.
func (x *Plan) Graph() (*Graph, error) {
	if x.p == nil {
		return nil, closedError("Plan")
	}
	var g *C.alpa_graph
	var e *C.alpa_error
	st := C.alpa_plan_copy_graph(&g, x.p, &e)
	runtime.KeepAlive(x)
	if err := takeError(st, e); err != nil {
		return nil, err
	}
	return newGraph(g), nil
}

// OpSpec is op's layout and strategy on its stage's logical mesh as text (experimental).
func (x *Plan) OpSpec(op int) (string, error) {
	if x.p == nil {
		return "", closedError("Plan")
	}
	var b *C.alpa_buffer
	var e *C.alpa_error
	st := C.alpa_plan_op_spec(&b, x.p, C.int32_t(op), &e)
	runtime.KeepAlive(x)
	if err := takeError(st, e); err != nil {
		return "", err
	}
	return string(takeBuffer(b)), nil
}

// Plan JSON detail levels.
const (
	PlanJSONSummary    = 0 // stages, transfers with their move counts, compile time split (the CLI's --json)
	PlanJSONDetailed   = 1 // also per-op strategies, collectives and slice moves
	PlanJSONExecutable = 2 // also the graph and every piece's sharding: the executable plan (the CLI's -o)
)

// JSON is the plan as one JSON object (docs/planner.md) at a detail level.
func (x *Plan) JSON(detail int) ([]byte, error) {
	if x.p == nil {
		return nil, closedError("Plan")
	}
	var b *C.alpa_buffer
	var e *C.alpa_error
	st := C.alpa_plan_to_json(&b, x.p, C.int32_t(detail), &e)
	runtime.KeepAlive(x)
	if err := takeError(st, e); err != nil {
		return nil, err
	}
	return takeBuffer(b), nil
}

// ReadPlanJSON reads an executable plan JSON (Plan.JSON(PlanJSONExecutable), `alpa plan -o`)
// back into a plan; every piece is checked against its graph. ErrParse names the JSON path of
// a missing or mistyped field (and refuses plans written at detail 0 or 1); ErrInvalidGraph and
// ErrInvalidArgument name what does not fit together.
func ReadPlanJSON(data []byte) (*Plan, error) {
	var p *C.alpa_plan
	var e *C.alpa_error
	st := C.alpa_plan_read_json(&p, bytesPtr(data), C.size_t(len(data)), &e)
	runtime.KeepAlive(data)
	if err := takeError(st, e); err != nil {
		return nil, err
	}
	return newPlan(p), nil
}

// ReadPlanFile is ReadPlanJSON from a file (ErrIO when it cannot be read).
func ReadPlanFile(path string) (*Plan, error) {
	cp := cString(path)
	defer freeCString(cp)
	var p *C.alpa_plan
	var e *C.alpa_error
	if err := takeError(C.alpa_plan_read_file(&p, cp, &e), e); err != nil {
		return nil, err
	}
	return newPlan(p), nil
}
