package alpa

/*
#include <stdlib.h>
#include "alpa_experimental.h"
*/
import "C"

import (
	"runtime"
	"strconv"
	"unsafe"
)

// OpKind is an operator kind (ALPA_OP_*); the attribute words each kind takes are documented
// at its constant in alpa.h.
type OpKind int32

// The op kinds of alpa.h.
const (
	OpParameter        OpKind = C.ALPA_OP_PARAMETER
	OpConstant         OpKind = C.ALPA_OP_CONSTANT
	OpIota             OpKind = C.ALPA_OP_IOTA
	OpNeg              OpKind = C.ALPA_OP_NEG
	OpAbs              OpKind = C.ALPA_OP_ABS
	OpExp              OpKind = C.ALPA_OP_EXP
	OpLog              OpKind = C.ALPA_OP_LOG
	OpTanh             OpKind = C.ALPA_OP_TANH
	OpSqrt             OpKind = C.ALPA_OP_SQRT
	OpRsqrt            OpKind = C.ALPA_OP_RSQRT
	OpGelu             OpKind = C.ALPA_OP_GELU
	OpRelu             OpKind = C.ALPA_OP_RELU
	OpConvert          OpKind = C.ALPA_OP_CONVERT
	OpAdd              OpKind = C.ALPA_OP_ADD
	OpSub              OpKind = C.ALPA_OP_SUB
	OpMul              OpKind = C.ALPA_OP_MUL
	OpDiv              OpKind = C.ALPA_OP_DIV
	OpMax              OpKind = C.ALPA_OP_MAX
	OpMin              OpKind = C.ALPA_OP_MIN
	OpPow              OpKind = C.ALPA_OP_POW
	OpCompare          OpKind = C.ALPA_OP_COMPARE
	OpSelect           OpKind = C.ALPA_OP_SELECT
	OpDotGeneral       OpKind = C.ALPA_OP_DOT_GENERAL
	OpConvolution      OpKind = C.ALPA_OP_CONVOLUTION
	OpBroadcastInDim   OpKind = C.ALPA_OP_BROADCAST_IN_DIM
	OpReshape          OpKind = C.ALPA_OP_RESHAPE
	OpTranspose        OpKind = C.ALPA_OP_TRANSPOSE
	OpSlice            OpKind = C.ALPA_OP_SLICE
	OpConcatenate      OpKind = C.ALPA_OP_CONCATENATE
	OpPad              OpKind = C.ALPA_OP_PAD
	OpReverse          OpKind = C.ALPA_OP_REVERSE
	OpReduceSum        OpKind = C.ALPA_OP_REDUCE_SUM
	OpReduceMax        OpKind = C.ALPA_OP_REDUCE_MAX
	OpReduceWindow     OpKind = C.ALPA_OP_REDUCE_WINDOW
	OpSelectAndScatter OpKind = C.ALPA_OP_SELECT_AND_SCATTER
	OpGather           OpKind = C.ALPA_OP_GATHER
	OpScatterAdd       OpKind = C.ALPA_OP_SCATTER_ADD
)

// DType is an element type (ALPA_DTYPE_*); DTypeInfer (-1) lets the library infer it.
type DType int32

const (
	DTypeInfer DType = -1
	F32        DType = C.ALPA_DTYPE_F32
	F16        DType = C.ALPA_DTYPE_F16
	BF16       DType = C.ALPA_DTYPE_BF16
	F64        DType = C.ALPA_DTYPE_F64
	S8         DType = C.ALPA_DTYPE_S8
	S32        DType = C.ALPA_DTYPE_S32
	S64        DType = C.ALPA_DTYPE_S64
	Pred       DType = C.ALPA_DTYPE_PRED
)

// Role is what a tensor is (ALPA_ROLE_*).
type Role int32

const (
	RoleActivation     Role = C.ALPA_ROLE_ACTIVATION
	RoleParameter      Role = C.ALPA_ROLE_PARAMETER
	RoleGradient       Role = C.ALPA_ROLE_GRADIENT
	RoleOptimizerState Role = C.ALPA_ROLE_OPTIMIZER_STATE
	RoleInput          Role = C.ALPA_ROLE_INPUT
)

// Phase is the phase of the training step an op belongs to (ALPA_PHASE_*).
type Phase int32

const (
	PhaseForward  Phase = C.ALPA_PHASE_FORWARD
	PhaseBackward Phase = C.ALPA_PHASE_BACKWARD
	PhaseUpdate   Phase = C.ALPA_PHASE_UPDATE
)

// Comparisons of OpCompare and reductions of OpReduceWindow.
const (
	CmpEQ     = int64(C.ALPA_CMP_EQ)
	CmpNE     = int64(C.ALPA_CMP_NE)
	CmpLT     = int64(C.ALPA_CMP_LT)
	CmpLE     = int64(C.ALPA_CMP_LE)
	CmpGT     = int64(C.ALPA_CMP_GT)
	CmpGE     = int64(C.ALPA_CMP_GE)
	ReduceSum = int64(C.ALPA_REDUCE_SUM)
	ReduceMax = int64(C.ALPA_REDUCE_MAX)
)

// Op is one operator of a graph (docs/graph-format.md): it produces one tensor and refers to
// its operands by op id. Graph.AddOps takes ops in topological order; Graph.Op reads one back
// in the same form, so ops of one graph can be added to another unchanged.
type Op struct {
	Kind     OpKind
	DType    DType   // required for parameter, constant, iota and convert; DTypeInfer elsewhere (a given dtype is checked)
	Role     Role    // RoleActivation by default
	Phase    Phase   // PhaseForward by default
	Layer    int32   // pipeline layer (>= 0), or -1 for none
	Operands []int32 // operand op ids, each smaller than the op's own id
	Shape    []int64 // result shape of parameter, constant, iota, broadcast_in_dim and reshape (nil: scalar); checked for other kinds when given
	Attrs    []int64 // the kind's attribute words (alpa.h)
	Value    float64 // splat value of constant, fill value of pad
	Name     string
	Alias    int32  // read back by Graph.Op: the parameter this op replaces after the step, or -1 (AddOps ignores it: use SetAlias)
	Source   string // read back by Graph.Op: where an imported op came from (HLO metadata op_name), or ""; AddOps ignores it
	// Read back by Graph.Op: autodiff treats the result as a constant (AddOps ignores it: use
	// SetStopGradient)
	StopGradient bool
}

// Graph is a training step as an operator graph. Build it (NewGraph, AddOps, SetAlias,
// SetOutputs, Finalize), read it (ReadGraphFile, ReadGraph) or build a model of the zoo
// (BuildModelGraph). A finalized graph is immutable and may be shared between goroutines.
type Graph struct {
	p *C.alpa_graph
}

func newGraph(p *C.alpa_graph) *Graph {
	x := &Graph{p: p}
	handleCreated()
	runtime.SetFinalizer(x, (*Graph).Close)
	return x
}

// Close frees the graph. Idempotent.
func (x *Graph) Close() error {
	if x.p != nil {
		C.alpa_graph_destroy(x.p)
		x.p = nil
		runtime.SetFinalizer(x, nil)
		handleFreed()
	}
	return nil
}

// NewGraph returns an empty graph in the building state.
func NewGraph() (*Graph, error) {
	var p *C.alpa_graph
	var e *C.alpa_error
	if err := takeError(C.alpa_graph_create(&p, &e), e); err != nil {
		return nil, err
	}
	return newGraph(p), nil
}

// BuildModelGraph builds the finalized training graph of a model-zoo spec ("gpt-2.6b",
// "mlp:layers=6,hidden=32", "gpt-350m:batch=8,layers=2"); ErrInvalidArgument names the bad
// family, key or value.
func BuildModelGraph(spec string) (*Graph, error) {
	cs := cString(spec)
	defer freeCString(cs)
	var p *C.alpa_graph
	var e *C.alpa_error
	if err := takeError(C.alpa_model_build_graph(&p, cs, &e), e); err != nil {
		return nil, err
	}
	return newGraph(p), nil
}

// ReadGraphFile reads a finalized graph from a JSON graph file (gzip accepted).
func ReadGraphFile(path string) (*Graph, error) {
	cp := cString(path)
	defer freeCString(cp)
	var p *C.alpa_graph
	var e *C.alpa_error
	if err := takeError(C.alpa_graph_read_file(&p, cp, &e), e); err != nil {
		return nil, err
	}
	return newGraph(p), nil
}

// ReadGraph reads a finalized graph from JSON bytes.
func ReadGraph(data []byte) (*Graph, error) {
	var p *C.alpa_graph
	var e *C.alpa_error
	st := C.alpa_graph_read_buffer(&p, bytesPtr(data), C.size_t(len(data)), &e)
	runtime.KeepAlive(data)
	if err := takeError(st, e); err != nil {
		return nil, err
	}
	return newGraph(p), nil
}

// ReadGraphFileWithOptions is ReadGraphFile with the input limit of opts
// (Set["max_input_bytes"]; nil: the default, 1 GiB).
func ReadGraphFileWithOptions(path string, opts *SolveOptions) (*Graph, error) {
	cp := cString(path)
	defer freeCString(cp)
	var p *C.alpa_graph
	err := withSolveOptions(opts, func(o *C.alpa_solve_options) error {
		var e *C.alpa_error
		return takeError(C.alpa_graph_read_file_with_options(&p, cp, o, &e), e)
	})
	if err != nil {
		return nil, err
	}
	return newGraph(p), nil
}

// ReadHLOFile imports the XLA HLO text of a jitted training step, as
// `jax.jit(step).lower(*args).as_text(dialect="hlo")` prints it (docs/hlo-import.md): donated
// arguments become weights and optimizer state, `layers_N` name scopes the layers. ErrIO: the
// file cannot be read; ErrParse: not HLO text (line and column); ErrUnsupported: an instruction
// the IR cannot express (named, with its line and the workaround).
func ReadHLOFile(path string) (*Graph, error) {
	cp := cString(path)
	defer freeCString(cp)
	var p *C.alpa_graph
	var e *C.alpa_error
	if err := takeError(C.alpa_graph_read_hlo_file(&p, cp, &e), e); err != nil {
		return nil, err
	}
	return newGraph(p), nil
}

// ReadHLO is ReadHLOFile from the text itself.
func ReadHLO(text []byte) (*Graph, error) {
	var p *C.alpa_graph
	var e *C.alpa_error
	st := C.alpa_graph_read_hlo_buffer(&p, bytesPtr(text), C.size_t(len(text)), &e)
	runtime.KeepAlive(text)
	if err := takeError(st, e); err != nil {
		return nil, err
	}
	return newGraph(p), nil
}

// MakeTraining turns a finalized forward graph (outputs[0] a floating-point scalar loss) into
// its training step: the backward pass and the optimizer's update, as the model zoo builds its
// graphs. optimizer: "sgd", "momentum" or "adam", with keys ("adam:lr=0.0003,eps=1e-6"; see
// docs/graph-format.md). The forward graph is unchanged. ErrInvalidArgument names the bad spec,
// loss or op; ErrUnsupported an op autodiff cannot differentiate.
func (x *Graph) MakeTraining(optimizer string) (*Graph, error) {
	if x.p == nil {
		return nil, closedError("Graph")
	}
	cs := cString(optimizer)
	defer freeCString(cs)
	var p *C.alpa_graph
	var e *C.alpa_error
	st := C.alpa_graph_make_training(&p, x.p, cs, &e)
	runtime.KeepAlive(x)
	if err := takeError(st, e); err != nil {
		return nil, err
	}
	return newGraph(p), nil
}

// AddOps appends ops (ids continue from OpCount). All or nothing: on failure
// (ErrInvalidGraph naming the first bad op) no op is added.
func (x *Graph) AddOps(ops []Op) error {
	if x.p == nil {
		return closedError("Graph")
	}
	n := len(ops)
	if n == 0 {
		return nil
	}
	kinds := make([]int32, n)
	dtypes := make([]int32, n)
	roles := make([]int32, n)
	phases := make([]int32, n)
	layers := make([]int32, n)
	values := make([]float64, n)
	opOff := make([]int64, n+1)
	shapeOff := make([]int64, n+1)
	attrOff := make([]int64, n+1)
	var operands []int32
	var shapes, attrs []int64
	// Names live in C memory; the array of their pointers holds C pointers only.
	names := unsafe.Slice((**C.char)(C.calloc(C.size_t(n), C.size_t(unsafe.Sizeof((*C.char)(nil))))), n)
	defer func() {
		for _, s := range names {
			if s != nil {
				C.free(unsafe.Pointer(s))
			}
		}
		C.free(unsafe.Pointer(&names[0]))
	}()
	for i, op := range ops {
		kinds[i] = int32(op.Kind)
		dtypes[i] = int32(op.DType)
		roles[i] = int32(op.Role)
		phases[i] = int32(op.Phase)
		layers[i] = op.Layer
		values[i] = op.Value
		operands = append(operands, op.Operands...)
		shapes = append(shapes, op.Shape...)
		attrs = append(attrs, op.Attrs...)
		opOff[i+1] = int64(len(operands))
		shapeOff[i+1] = int64(len(shapes))
		attrOff[i+1] = int64(len(attrs))
		if op.Name != "" {
			names[i] = cString(op.Name)
		}
	}
	var e *C.alpa_error
	st := C.alpa_graph_add_ops(x.p, C.int64_t(n), i32Ptr(kinds), i32Ptr(dtypes), i32Ptr(roles),
		i32Ptr(phases), i32Ptr(layers), i64Ptr(opOff), i32Ptr(operands), i64Ptr(shapeOff),
		i64Ptr(shapes), i64Ptr(attrOff), i64Ptr(attrs), f64Ptr(values), &names[0], &e)
	keepAlive(x, kinds, dtypes, roles, phases, layers, opOff, operands, shapeOff, shapes, attrOff, attrs, values)
	return takeError(st, e)
}

// SetAlias marks op (an update result) as the new value of parameter op parameter after the
// step; parameter -1 removes the mark.
func (x *Graph) SetAlias(op, parameter int32) error {
	if x.p == nil {
		return closedError("Graph")
	}
	var e *C.alpa_error
	st := C.alpa_graph_set_alias(x.p, C.int32_t(op), C.int32_t(parameter), &e)
	runtime.KeepAlive(x)
	return takeError(st, e)
}

// SetStopGradient marks op (stop true) so that MakeTraining's autodiff treats its result as a
// constant, as JAX's lax.stop_gradient (the zoo marks a softmax's row maximum), or clears the
// mark.
func (x *Graph) SetStopGradient(op int32, stop bool) error {
	if x.p == nil {
		return closedError("Graph")
	}
	flag := C.int32_t(0)
	if stop {
		flag = 1
	}
	var e *C.alpa_error
	st := C.alpa_graph_set_stop_gradient(x.p, C.int32_t(op), flag, &e)
	runtime.KeepAlive(x)
	return takeError(st, e)
}

// SetOutputs sets the graph's outputs (loss first by convention).
func (x *Graph) SetOutputs(ids []int32) error {
	if x.p == nil {
		return closedError("Graph")
	}
	var e *C.alpa_error
	st := C.alpa_graph_set_outputs(x.p, C.int64_t(len(ids)), i32Ptr(ids), &e)
	keepAlive(x, ids)
	return takeError(st, e)
}

// Finalize validates the whole graph and freezes it (ErrInvalidGraph naming the op).
func (x *Graph) Finalize() error {
	if x.p == nil {
		return closedError("Graph")
	}
	var e *C.alpa_error
	st := C.alpa_graph_finalize(x.p, &e)
	runtime.KeepAlive(x)
	return takeError(st, e)
}

// JSON serializes a finalized graph (docs/graph-format.md).
func (x *Graph) JSON() ([]byte, error) {
	if x.p == nil {
		return nil, closedError("Graph")
	}
	var b *C.alpa_buffer
	var e *C.alpa_error
	st := C.alpa_graph_to_json(&b, x.p, &e)
	runtime.KeepAlive(x)
	if err := takeError(st, e); err != nil {
		return nil, err
	}
	return takeBuffer(b), nil
}

// StatsJSON is the statistics of a finalized graph (ops, layers, parameters, FLOPs, bytes by
// role; experimental).
func (x *Graph) StatsJSON() ([]byte, error) {
	if x.p == nil {
		return nil, closedError("Graph")
	}
	var b *C.alpa_buffer
	var e *C.alpa_error
	st := C.alpa_graph_stats_to_json(&b, x.p, &e)
	runtime.KeepAlive(x)
	if err := takeError(st, e); err != nil {
		return nil, err
	}
	return takeBuffer(b), nil
}

// OpCount is the number of ops.
func (x *Graph) OpCount() int {
	n := int(C.alpa_graph_op_count(x.p))
	runtime.KeepAlive(x)
	return n
}

// Op reads op i back in AddOps's form.
func (x *Graph) Op(i int) (Op, error) {
	if x.p == nil {
		return Op{}, closedError("Graph")
	}
	id := C.int32_t(i)
	kind := C.alpa_graph_op_kind(x.p, id)
	if kind < 0 {
		return Op{}, statusError(StatusInvalidArgument, "Graph.Op: no op "+strconv.Itoa(i))
	}
	op := Op{
		Kind:         OpKind(kind),
		DType:        DType(C.alpa_graph_op_dtype(x.p, id)),
		Role:         Role(C.alpa_graph_op_role(x.p, id)),
		Phase:        Phase(C.alpa_graph_op_phase(x.p, id)),
		Layer:        int32(C.alpa_graph_op_layer(x.p, id)),
		Alias:        int32(C.alpa_graph_op_alias(x.p, id)),
		Value:        float64(C.alpa_graph_op_value(x.p, id)),
		Name:         C.GoString(C.alpa_graph_op_name(x.p, id)),
		Source:       C.GoString(C.alpa_graph_op_source(x.p, id)),
		StopGradient: C.alpa_graph_op_stop_gradient(x.p, id) == 1,
	}
	operands, err := countThenFill("Graph.Op operands", func(out *C.int32_t, c C.int64_t) C.int64_t {
		return C.alpa_graph_op_operands(x.p, id, out, c)
	})
	if err != nil {
		return Op{}, err
	}
	shape, err := countThenFill("Graph.Op shape", func(out *C.int64_t, c C.int64_t) C.int64_t {
		return C.alpa_graph_op_shape(x.p, id, out, c)
	})
	if err != nil {
		return Op{}, err
	}
	attrs, err := countThenFill("Graph.Op attrs", func(out *C.int64_t, c C.int64_t) C.int64_t {
		return C.alpa_graph_op_attrs(x.p, id, out, c)
	})
	if err != nil {
		return Op{}, err
	}
	runtime.KeepAlive(x)
	op.Operands, op.Shape, op.Attrs = toInt32s(operands), toInt64s(shape), toInt64s(attrs)
	return op, nil
}

// Outputs is the graph's outputs.
func (x *Graph) Outputs() []int32 {
	out, err := countThenFill("Graph.Outputs", func(out *C.int32_t, c C.int64_t) C.int64_t {
		return C.alpa_graph_outputs(x.p, out, c)
	})
	runtime.KeepAlive(x)
	if err != nil {
		return nil
	}
	return toInt32s(out)
}
