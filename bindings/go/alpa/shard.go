package alpa

/*
#include <stdlib.h>
#include "alpa_experimental.h"
*/
import "C"

import (
	"runtime"
)

// CollectiveKind is a collective (ALPA_COLLECTIVE_*).
type CollectiveKind int32

const (
	AllGather     CollectiveKind = C.ALPA_COLLECTIVE_ALL_GATHER
	AllReduce     CollectiveKind = C.ALPA_COLLECTIVE_ALL_REDUCE
	ReduceScatter CollectiveKind = C.ALPA_COLLECTIVE_REDUCE_SCATTER
	AllToAll      CollectiveKind = C.ALPA_COLLECTIVE_ALL_TO_ALL
	SendRecv      CollectiveKind = C.ALPA_COLLECTIVE_SEND_RECV
)

// Collective flags (bits of Collective.Flags).
const (
	CollectiveInsideOp     = uint32(C.ALPA_COLLECTIVE_FLAG_INSIDE_OP)
	CollectiveGradientSync = uint32(C.ALPA_COLLECTIVE_FLAG_GRADIENT_SYNC)
)

// PlanCost selects a part of a sharding plan's objective (ALPA_PLAN_COST_*).
type PlanCost int32

const (
	CostCompute       PlanCost = C.ALPA_PLAN_COST_COMPUTE
	CostCommunication PlanCost = C.ALPA_PLAN_COST_COMMUNICATION
	CostResharding    PlanCost = C.ALPA_PLAN_COST_RESHARDING
)

// Collective is one collective a plan inserts.
type Collective struct {
	Kind     CollectiveKind
	MeshDims uint32  // bit k: runs over mesh dimension k
	Flags    uint32  // CollectiveInsideOp, CollectiveGradientSync
	Bytes    float64 // the full tensor
	Cost     float64 // in the plan's cost units (seconds with the real cost model)
	Tensor   int32   // the op whose result it moves
	Consumer int32   // the op that needs it (-1: laid out once for all readers)
	Operand  int32   // which operand of Consumer it feeds (-1 inside an op or for all readers)
}

func collectivesOf(get func(out *C.alpa_collective, c C.int64_t) C.int64_t, what string) ([]Collective, error) {
	raw, err := countThenFill(what, get)
	if err != nil {
		return nil, err
	}
	out := make([]Collective, len(raw))
	for i, c := range raw {
		out[i] = Collective{
			Kind: CollectiveKind(c.kind), MeshDims: uint32(c.mesh_dims), Flags: uint32(c.flags),
			Bytes: float64(c.bytes), Cost: float64(c.cost), Tensor: int32(c.tensor),
			Consumer: int32(c.consumer), Operand: int32(c.operand),
		}
	}
	return out, nil
}

// ShardingPlan is the answer of Graph.AutoShard: one strategy per operator on one logical
// mesh. Immutable; keeps its own copy of the graph; may be shared between goroutines.
type ShardingPlan struct {
	p *C.alpa_sharding_plan
}

func newShardingPlan(p *C.alpa_sharding_plan) *ShardingPlan {
	x := &ShardingPlan{p: p}
	handleCreated()
	runtime.SetFinalizer(x, (*ShardingPlan).Close)
	return x
}

// Close frees the plan. Idempotent.
func (x *ShardingPlan) Close() error {
	if x.p != nil {
		C.alpa_sharding_plan_destroy(x.p)
		x.p = nil
		runtime.SetFinalizer(x, nil)
		handleFreed()
	}
	return nil
}

// AutoShard runs Alpa's intra-op pass on a finalized graph: one sharding strategy per operator
// on mesh. cluster may be nil only with SolveOptions.AlpaCostModel; opts may be nil (real cost
// model, ZeRO off, no memory budget, no time limit). No answer is an error (ErrInfeasible,
// ErrTimeout, ErrCancelled). Several goroutines may auto-shard the same graph at once.
func (x *Graph) AutoShard(mesh *Mesh, cluster *Cluster, opts *SolveOptions) (*ShardingPlan, error) {
	if x.p == nil {
		return nil, closedError("Graph")
	}
	if mesh == nil || mesh.p == nil {
		return nil, closedError("Mesh")
	}
	var cp *C.alpa_cluster
	if cluster != nil {
		if cluster.p == nil {
			return nil, closedError("Cluster")
		}
		cp = cluster.p
	}
	o, res, err := opts.build()
	if err != nil {
		return nil, err
	}
	var p *C.alpa_sharding_plan
	var e *C.alpa_error
	st := C.alpa_graph_auto_shard(&p, x.p, mesh.p, cp, o, &e)
	C.alpa_solve_options_destroy(o)
	res.release()
	keepAlive(x, mesh, cluster, opts)
	if err := takeError(st, e); err != nil {
		res.state.rethrow()
		return nil, err
	}
	plan := newShardingPlan(p)
	res.state.rethrow()
	return plan, nil
}

// Status is SolveOptimal, SolveFeasible or SolveCancelled.
func (x *ShardingPlan) Status() SolveStatus {
	v := SolveStatus(C.alpa_sharding_plan_status(x.p))
	runtime.KeepAlive(x)
	return v
}

// Objective is compute + communication + resharding, in the plan's cost units.
func (x *ShardingPlan) Objective() float64 {
	v := float64(C.alpa_sharding_plan_objective(x.p))
	runtime.KeepAlive(x)
	return v
}

// LowerBound is the solver's best proven lower bound (-Inf if none).
func (x *ShardingPlan) LowerBound() float64 {
	v := float64(C.alpa_sharding_plan_lower_bound(x.p))
	runtime.KeepAlive(x)
	return v
}

// Cost is one part of the objective.
func (x *ShardingPlan) Cost(which PlanCost) float64 {
	v := float64(C.alpa_sharding_plan_cost(x.p, C.int32_t(which)))
	runtime.KeepAlive(x)
	return v
}

// PeakMemoryBytes is the peak bytes live on one device.
func (x *ShardingPlan) PeakMemoryBytes() int64 {
	v := int64(C.alpa_sharding_plan_peak_memory_bytes(x.p))
	runtime.KeepAlive(x)
	return v
}

// Message says why the solve stopped short of proving optimality ("" otherwise).
func (x *ShardingPlan) Message() string {
	s := C.GoString(C.alpa_sharding_plan_message(x.p))
	runtime.KeepAlive(x)
	return s
}

// CollectiveCounts counts the collectives by kind, indexed by CollectiveKind (AllGather ..
// AllToAll). combined: gradient synchronizations of one kind over the same mesh dims count once.
func (x *ShardingPlan) CollectiveCounts(combined bool) ([]int64, error) {
	c := C.int32_t(0)
	if combined {
		c = 1
	}
	out, err := countThenFill("ShardingPlan.CollectiveCounts", func(out *C.int64_t, n C.int64_t) C.int64_t {
		return C.alpa_sharding_plan_collective_counts(x.p, c, out, n)
	})
	runtime.KeepAlive(x)
	if err != nil {
		return nil, err
	}
	return toInt64s(out), nil
}

// OpStrategies is the strategy each op chose (-1 for free and fused ops).
func (x *ShardingPlan) OpStrategies() ([]int32, error) {
	out, err := countThenFill("ShardingPlan.OpStrategies", func(out *C.int32_t, n C.int64_t) C.int64_t {
		return C.alpa_sharding_plan_op_strategies(x.p, out, n)
	})
	runtime.KeepAlive(x)
	if err != nil {
		return nil, err
	}
	return toInt32s(out), nil
}

// Collectives lists the collectives to insert, in execution order.
func (x *ShardingPlan) Collectives() ([]Collective, error) {
	out, err := collectivesOf(func(out *C.alpa_collective, n C.int64_t) C.int64_t {
		return C.alpa_sharding_plan_collectives(x.p, out, n, C.sizeof_alpa_collective)
	}, "ShardingPlan.Collectives")
	runtime.KeepAlive(x)
	return out, err
}

// OpSpec is the layout of op's result as text ("S0 R", "R S01"; "" for free and fused ops).
func (x *ShardingPlan) OpSpec(op int) (string, error) {
	if x.p == nil {
		return "", closedError("ShardingPlan")
	}
	var b *C.alpa_buffer
	var e *C.alpa_error
	st := C.alpa_sharding_plan_op_spec(&b, x.p, C.int32_t(op), &e)
	runtime.KeepAlive(x)
	if err := takeError(st, e); err != nil {
		return "", err
	}
	return string(takeBuffer(b)), nil
}

// JSON is the plan as one JSON object (docs/auto-sharding.md).
func (x *ShardingPlan) JSON() ([]byte, error) {
	if x.p == nil {
		return nil, closedError("ShardingPlan")
	}
	var b *C.alpa_buffer
	var e *C.alpa_error
	st := C.alpa_sharding_plan_to_json(&b, x.p, &e)
	runtime.KeepAlive(x)
	if err := takeError(st, e); err != nil {
		return nil, err
	}
	return takeBuffer(b), nil
}
