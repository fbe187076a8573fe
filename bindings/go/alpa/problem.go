package alpa

/*
#include <stdlib.h>
#include "alpa.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"unsafe"
)

// Format is a problem file format (ALPA_FORMAT_*).
type Format int32

const (
	FormatAuto   Format = C.ALPA_FORMAT_AUTO   // Alpa JSON if the object has "format": "alpa", else IOPDDL
	FormatIOPDDL Format = C.ALPA_FORMAT_IOPDDL // the IOPDDL contest JSON, plain or gzip
	FormatAlpa   Format = C.ALPA_FORMAT_ALPA   // Alpa's serialized solver arrays as JSON
)

// ForbiddenCost (1e18) or more forbids a strategy or a pair of strategies.
const ForbiddenCost = float64(C.ALPA_FORBIDDEN_COST)

// Problem is a sharding problem (the raw solver tier): nodes with strategies and their costs
// and memory usages, edges with cost matrices, liveness, followers, aliases and a memory limit.
// Build it (NewProblem, Add*, Set*, Finalize) or read it (ReadProblemFile, ReadProblem); once
// finalized it is immutable and may be solved from several goroutines at once.
type Problem struct {
	p *C.alpa_problem
}

func newProblem(p *C.alpa_problem) *Problem {
	x := &Problem{p: p}
	handleCreated()
	runtime.SetFinalizer(x, (*Problem).Close)
	return x
}

// Close frees the problem. Idempotent.
func (x *Problem) Close() error {
	if x.p != nil {
		C.alpa_problem_destroy(x.p)
		x.p = nil
		runtime.SetFinalizer(x, nil)
		handleFreed()
	}
	return nil
}

// NewProblem returns an empty problem in the building state.
func NewProblem() (*Problem, error) {
	var p *C.alpa_problem
	var e *C.alpa_error
	if err := takeError(C.alpa_problem_create(&p, &e), e); err != nil {
		return nil, err
	}
	return newProblem(p), nil
}

// ReadProblemFile reads a finalized problem from a file (.json or .json.gz).
func ReadProblemFile(path string, format Format) (*Problem, error) {
	cp := cString(path)
	defer freeCString(cp)
	var p *C.alpa_problem
	var e *C.alpa_error
	if err := takeError(C.alpa_problem_read_file(&p, cp, C.int32_t(format), &e), e); err != nil {
		return nil, err
	}
	return newProblem(p), nil
}

// ReadProblemFileWithOptions is ReadProblemFile with the input limit of opts
// (Set["max_input_bytes"]; nil: the default, 1 GiB).
func ReadProblemFileWithOptions(path string, format Format, opts *SolveOptions) (*Problem, error) {
	cp := cString(path)
	defer freeCString(cp)
	var p *C.alpa_problem
	err := withSolveOptions(opts, func(o *C.alpa_solve_options) error {
		var e *C.alpa_error
		return takeError(C.alpa_problem_read_file_with_options(&p, cp, C.int32_t(format), o, &e), e)
	})
	if err != nil {
		return nil, err
	}
	return newProblem(p), nil
}

// ReadProblem reads a finalized problem from bytes (gzip detected).
func ReadProblem(data []byte, format Format) (*Problem, error) {
	var p *C.alpa_problem
	var e *C.alpa_error
	st := C.alpa_problem_read_buffer(&p, bytesPtr(data), C.size_t(len(data)), C.int32_t(format), &e)
	runtime.KeepAlive(data)
	if err := takeError(st, e); err != nil {
		return nil, err
	}
	return newProblem(p), nil
}

// AddNodes appends len(strategyCounts) nodes: costs holds every new node's strategy costs node
// after node (sum of strategyCounts entries); usages their memory bytes, or nil for zero.
func (x *Problem) AddNodes(strategyCounts []int32, costs []float64, usages []int64) error {
	if x.p == nil {
		return closedError("Problem")
	}
	total := int64(0)
	for i, k := range strategyCounts {
		if k < 0 {
			return statusError(StatusInvalidArgument, fmt.Sprintf("AddNodes: new node %d has %d strategies", i, k))
		}
		total += int64(k)
	}
	if int64(len(costs)) != total {
		return statusError(StatusInvalidArgument, fmt.Sprintf("AddNodes: %d costs, expected %d (the sum of the strategy counts)", len(costs), total))
	}
	if usages != nil && int64(len(usages)) != total {
		return statusError(StatusInvalidArgument, fmt.Sprintf("AddNodes: %d usages, expected %d (the sum of the strategy counts)", len(usages), total))
	}
	var e *C.alpa_error
	st := C.alpa_problem_add_nodes(x.p, C.int64_t(len(strategyCounts)), i32Ptr(strategyCounts),
		f64Ptr(costs), i64Ptr(usages), &e)
	keepAlive(x, strategyCounts, costs, usages)
	return takeError(st, e)
}

// SetIntervals sets the liveness of the first len(intervals) nodes as half-open intervals
// [lo, hi): the node's usage counts at times lo .. hi-1.
func (x *Problem) SetIntervals(intervals [][2]int64) error {
	if x.p == nil {
		return closedError("Problem")
	}
	var ptr *C.int64_t
	if len(intervals) > 0 {
		ptr = (*C.int64_t)(unsafe.Pointer(&intervals[0][0]))
	}
	var e *C.alpa_error
	st := C.alpa_problem_set_intervals(x.p, C.int64_t(len(intervals)), ptr, &e)
	keepAlive(x, intervals)
	return takeError(st, e)
}

// SetLiveSets sets liveness as explicit live sets (replacing intervals): steps[t] lists the
// nodes live at time step t.
func (x *Problem) SetLiveSets(steps [][]int32) error {
	if x.p == nil {
		return closedError("Problem")
	}
	sizes := make([]int64, len(steps))
	var ids []int32
	for t, s := range steps {
		sizes[t] = int64(len(s))
		ids = append(ids, s...)
	}
	var e *C.alpa_error
	st := C.alpa_problem_set_live_sets(x.p, C.int64_t(len(steps)), i64Ptr(sizes), i32Ptr(ids), &e)
	keepAlive(x, sizes, ids)
	return takeError(st, e)
}

// strategies is the strategy count of node u, or an error naming what refers to it.
func (x *Problem) strategies(u int32, what string) (int64, error) {
	k := int64(C.alpa_problem_strategy_count(x.p, C.int64_t(u)))
	if k < 0 {
		return 0, statusError(StatusInvalidArgument, fmt.Sprintf("%s: node %d does not exist (%d nodes)", what, u, int64(C.alpa_problem_node_count(x.p))))
	}
	return k, nil
}

// pairCells is the number of matrix cells the pairs need (sum k_u * k_v).
func (x *Problem) pairCells(pairs [][2]int32, what string) (int64, error) {
	cells := int64(0)
	for i, pr := range pairs {
		ku, err := x.strategies(pr[0], fmt.Sprintf("%s %d", what, i))
		if err != nil {
			return 0, err
		}
		kv, err := x.strategies(pr[1], fmt.Sprintf("%s %d", what, i))
		if err != nil {
			return 0, err
		}
		cells += ku * kv
	}
	return cells, nil
}

// AddEdges appends edges (u, v); costs holds each edge's k_u x k_v matrix row-major, edge
// after edge. Several edges on one pair add up.
func (x *Problem) AddEdges(endpoints [][2]int32, costs []float64) error {
	if x.p == nil {
		return closedError("Problem")
	}
	cells, err := x.pairCells(endpoints, "AddEdges: edge")
	if err != nil {
		return err
	}
	if int64(len(costs)) != cells {
		return statusError(StatusInvalidArgument, fmt.Sprintf("AddEdges: %d costs, expected %d (sum of k_u*k_v)", len(costs), cells))
	}
	var ptr *C.int32_t
	if len(endpoints) > 0 {
		ptr = (*C.int32_t)(unsafe.Pointer(&endpoints[0][0]))
	}
	var e *C.alpa_error
	st := C.alpa_problem_add_edges(x.p, C.int64_t(len(endpoints)), ptr, f64Ptr(costs), &e)
	keepAlive(x, endpoints, costs)
	return takeError(st, e)
}

// SetFollowers sets followers of the first len(follows) nodes: -1 (free) or the node whose
// choice the node shares.
func (x *Problem) SetFollowers(follows []int32) error {
	if x.p == nil {
		return closedError("Problem")
	}
	var e *C.alpa_error
	st := C.alpa_problem_set_followers(x.p, C.int64_t(len(follows)), i32Ptr(follows), &e)
	keepAlive(x, follows)
	return takeError(st, e)
}

// AddAliases appends alias pairs (u, v); forbidden holds each pair's k_u x k_v matrix
// row-major, true where u taking i and v taking j together is not allowed.
func (x *Problem) AddAliases(pairs [][2]int32, forbidden []bool) error {
	if x.p == nil {
		return closedError("Problem")
	}
	cells, err := x.pairCells(pairs, "AddAliases: alias")
	if err != nil {
		return err
	}
	if int64(len(forbidden)) != cells {
		return statusError(StatusInvalidArgument, fmt.Sprintf("AddAliases: %d matrix cells, expected %d (sum of k_u*k_v)", len(forbidden), cells))
	}
	bytes := make([]byte, len(forbidden))
	for i, f := range forbidden {
		if f {
			bytes[i] = 1
		}
	}
	var ptr *C.int32_t
	if len(pairs) > 0 {
		ptr = (*C.int32_t)(unsafe.Pointer(&pairs[0][0]))
	}
	var bp *C.uint8_t
	if len(bytes) > 0 {
		bp = (*C.uint8_t)(unsafe.Pointer(&bytes[0]))
	}
	var e *C.alpa_error
	st := C.alpa_problem_add_aliases(x.p, C.int64_t(len(pairs)), ptr, bp, &e)
	keepAlive(x, pairs, bytes)
	return takeError(st, e)
}

// SetMemoryLimit sets the memory limit in bytes; a negative value removes it.
func (x *Problem) SetMemoryLimit(limit int64) error {
	if x.p == nil {
		return closedError("Problem")
	}
	var e *C.alpa_error
	st := C.alpa_problem_set_memory_limit(x.p, C.int64_t(limit), &e)
	runtime.KeepAlive(x)
	return takeError(st, e)
}

// Finalize validates and freezes the problem (ErrInvalidProblem naming the element).
func (x *Problem) Finalize() error {
	if x.p == nil {
		return closedError("Problem")
	}
	var e *C.alpa_error
	st := C.alpa_problem_finalize(x.p, &e)
	runtime.KeepAlive(x)
	return takeError(st, e)
}

// NodeCount is the number of nodes.
func (x *Problem) NodeCount() int64 {
	n := int64(C.alpa_problem_node_count(x.p))
	runtime.KeepAlive(x)
	return n
}

// EdgeCount is the number of edges.
func (x *Problem) EdgeCount() int64 {
	n := int64(C.alpa_problem_edge_count(x.p))
	runtime.KeepAlive(x)
	return n
}

// StrategyCount is the number of strategies of a node, or -1 if it does not exist.
func (x *Problem) StrategyCount(node int64) int32 {
	n := int32(C.alpa_problem_strategy_count(x.p, C.int64_t(node)))
	runtime.KeepAlive(x)
	return n
}

// Evaluate is the total cost of an assignment (one strategy per node) of a finalized problem,
// by the independent evaluator; ErrInfeasible names the violated constraint.
func (x *Problem) Evaluate(assignment []int32) (float64, error) {
	if x.p == nil {
		return 0, closedError("Problem")
	}
	var cost C.double
	var e *C.alpa_error
	st := C.alpa_problem_evaluate(&cost, x.p, C.int64_t(len(assignment)), i32Ptr(assignment), &e)
	keepAlive(x, assignment)
	if err := takeError(st, e); err != nil {
		return 0, err
	}
	return float64(cost), nil
}

// JSON serializes a finalized problem (FormatIOPDDL or FormatAlpa).
func (x *Problem) JSON(format Format) ([]byte, error) {
	if x.p == nil {
		return nil, closedError("Problem")
	}
	var b *C.alpa_buffer
	var e *C.alpa_error
	st := C.alpa_problem_to_json(&b, x.p, C.int32_t(format), &e)
	runtime.KeepAlive(x)
	if err := takeError(st, e); err != nil {
		return nil, err
	}
	return takeBuffer(b), nil
}

// Solve solves a finalized problem. opts may be nil (defaults). No answer is an error:
// ErrInfeasible, ErrTimeout (time limit before any assignment), ErrCancelled (before one).
func (x *Problem) Solve(opts *SolveOptions) (*Solution, error) {
	if x.p == nil {
		return nil, closedError("Problem")
	}
	o, res, err := opts.build()
	if err != nil {
		return nil, err
	}
	var s *C.alpa_solution
	var e *C.alpa_error
	st := C.alpa_problem_solve(&s, x.p, o, &e)
	C.alpa_solve_options_destroy(o)
	res.release()
	keepAlive(x, opts)
	if err := takeError(st, e); err != nil {
		res.state.rethrow()
		return nil, err
	}
	sol := newSolution(s)
	res.state.rethrow()
	return sol, nil
}

// ParseAssignment parses an assignment written as IOPDDL prints it ("[0, 0, 2, 1, 0]").
func ParseAssignment(text string) ([]int32, error) {
	b := []byte(text)
	var e *C.alpa_error
	n := C.alpa_assignment_parse(bytesPtr(b), C.size_t(len(b)), nil, 0, &e)
	if n < 0 {
		return nil, takeError(C.int32_t(-n), e)
	}
	C.alpa_error_free(e)
	out := make([]int32, int(n))
	if n > 0 {
		e = nil
		m := C.alpa_assignment_parse(bytesPtr(b), C.size_t(len(b)), (*C.int32_t)(unsafe.Pointer(&out[0])), n, &e)
		if m < 0 {
			return nil, takeError(C.int32_t(-m), e)
		}
		C.alpa_error_free(e)
	}
	runtime.KeepAlive(b)
	return out, nil
}

// SolveJSON is the one-shot solve over JSON (alpa_problem_solve_json): a request
// {"problem": ..., "options": {...}} in, the result JSON out, whatever the outcome.
func SolveJSON(request []byte) ([]byte, error) {
	var b *C.alpa_buffer
	var e *C.alpa_error
	st := C.alpa_problem_solve_json(&b, bytesPtr(request), C.size_t(len(request)), &e)
	runtime.KeepAlive(request)
	if err := takeError(st, e); err != nil {
		return nil, err
	}
	return takeBuffer(b), nil
}

// SolveStatus is the status of a Solution or ShardingPlan (ALPA_SOLVE_*).
type SolveStatus int32

const (
	SolveOptimal   SolveStatus = C.ALPA_SOLVE_OPTIMAL   // proven optimal (within the relative gap)
	SolveFeasible  SolveStatus = C.ALPA_SOLVE_FEASIBLE  // time limit hit: the best assignment found
	SolveCancelled SolveStatus = C.ALPA_SOLVE_CANCELLED // cancelled after a first assignment
)

func (s SolveStatus) String() string {
	switch s {
	case SolveOptimal:
		return "optimal"
	case SolveFeasible:
		return "feasible"
	case SolveCancelled:
		return "cancelled"
	case C.ALPA_SOLVE_INFEASIBLE:
		return "infeasible"
	case C.ALPA_SOLVE_INVALID_INPUT:
		return "invalid_input"
	case C.ALPA_SOLVE_NO_SOLUTION:
		return "no_solution"
	}
	return fmt.Sprintf("SolveStatus(%d)", int32(s))
}

// Solution is the answer of Problem.Solve. Immutable; may be shared between goroutines.
type Solution struct {
	p *C.alpa_solution
}

func newSolution(p *C.alpa_solution) *Solution {
	x := &Solution{p: p}
	handleCreated()
	runtime.SetFinalizer(x, (*Solution).Close)
	return x
}

// Close frees the solution. Idempotent.
func (x *Solution) Close() error {
	if x.p != nil {
		C.alpa_solution_destroy(x.p)
		x.p = nil
		runtime.SetFinalizer(x, nil)
		handleFreed()
	}
	return nil
}

// Status is SolveOptimal, SolveFeasible or SolveCancelled.
func (x *Solution) Status() SolveStatus {
	s := SolveStatus(C.alpa_solution_status(x.p))
	runtime.KeepAlive(x)
	return s
}

// Objective is the cost of the assignment.
func (x *Solution) Objective() float64 {
	v := float64(C.alpa_solution_objective(x.p))
	runtime.KeepAlive(x)
	return v
}

// LowerBound is the best proven lower bound (-Inf if none).
func (x *Solution) LowerBound() float64 {
	v := float64(C.alpa_solution_lower_bound(x.p))
	runtime.KeepAlive(x)
	return v
}

// Seconds is the time the solve took.
func (x *Solution) Seconds() float64 {
	v := float64(C.alpa_solution_seconds(x.p))
	runtime.KeepAlive(x)
	return v
}

// Assignment is one strategy per node.
func (x *Solution) Assignment() []int32 {
	out, err := countThenFill("Solution.Assignment", func(out *C.int32_t, c C.int64_t) C.int64_t {
		return C.alpa_solution_assignment(x.p, out, c)
	})
	runtime.KeepAlive(x)
	if err != nil {
		return nil
	}
	return toInt32s(out)
}

// Message says why the solve stopped short of proving optimality ("" otherwise).
func (x *Solution) Message() string {
	s := C.GoString(C.alpa_solution_message(x.p))
	runtime.KeepAlive(x)
	return s
}

// JSON is the solution as one JSON object (docs/formats.md).
func (x *Solution) JSON() ([]byte, error) {
	if x.p == nil {
		return nil, closedError("Solution")
	}
	var b *C.alpa_buffer
	var e *C.alpa_error
	st := C.alpa_solution_to_json(&b, x.p, &e)
	runtime.KeepAlive(x)
	if err := takeError(st, e); err != nil {
		return nil, err
	}
	return takeBuffer(b), nil
}
