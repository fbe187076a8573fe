package alpa_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/libalpa/alpa/bindings/go/alpa"
	"github.com/libalpa/alpa/bindings/go/internal/cgocheck"
)

// A small model and cluster that plan into two stages in about a second.
const (
	smallModel   = "gpt:hidden=256,layers=4,heads=4,seq=128,vocab=1000,batch=16"
	smallCluster = "p3.16xlarge:hosts=2,devices_per_host=2"
)

func repoRoot() string {
	if r := os.Getenv("ALPA_REPO_ROOT"); r != "" {
		return r
	}
	return filepath.Join("..", "..", "..")
}

func examplePath() string {
	return filepath.Join(repoRoot(), "tests", "golden", "iopddl_example.json")
}

// cli is the alpa CLI of the libalpa under test: $ALPA_CLI, else PREFIX/bin/alpa from
// pkg-config. Tests that compare with it skip when it cannot be found and ALPA_CLI is unset.
func cli(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("ALPA_CLI"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("ALPA_CLI=%s: %v", p, err)
		}
		return p
	}
	out, err := exec.Command("pkg-config", "--variable=prefix", "alpa").Output()
	if err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "bin", "alpa")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("the alpa CLI was not found (set ALPA_CLI)")
	return ""
}

// noLeaks asserts, when the test ends, that it freed every handle it made.
func noLeaks(t *testing.T) func() {
	t.Helper()
	before := alpa.LiveHandles()
	return func() {
		t.Helper()
		if after := alpa.LiveHandles(); after != before {
			t.Errorf("live handles: %d before the test, %d after", before, after)
		}
	}
}

func mustStatus(t *testing.T, err error, want *alpa.Error) *alpa.Error {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v", want.Status)
	}
	if !errors.Is(err, want) {
		t.Fatalf("error %v, want status %v", err, want.Status)
	}
	var e *alpa.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T is not *alpa.Error", err)
	}
	if e.Message == "" {
		t.Fatalf("error %v has no message", err)
	}
	return e
}

func TestVersion(t *testing.T) {
	if alpa.Version() == "" || alpa.VersionNumber()/100 != alpa.HeaderVersionNumber/100 {
		t.Fatalf("library %s (%d), header %d", alpa.Version(), alpa.VersionNumber(), alpa.HeaderVersionNumber)
	}
}

func TestSolveExample(t *testing.T) {
	defer noLeaks(t)()
	want := []int32{0, 0, 2, 1, 0}

	p, err := alpa.ReadProblemFile(examplePath(), alpa.FormatAuto)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	reports := 0
	s, err := p.Solve(&alpa.SolveOptions{Deterministic: true, Threads: 1,
		Progress: func(alpa.SolveProgress) bool { reports++; return true }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Status() != alpa.SolveOptimal || s.Objective() != 445 || !reflect.DeepEqual(s.Assignment(), want) {
		t.Fatalf("status %v objective %v assignment %v", s.Status(), s.Objective(), s.Assignment())
	}
	t.Logf("solved in %.4fs, %d progress reports", s.Seconds(), reports)
	if cost, err := p.Evaluate(s.Assignment()); err != nil || cost != 445 {
		t.Fatalf("evaluate: %v %v", cost, err)
	}
	parsed, err := alpa.ParseAssignment("[0, 0, 2, 1, 0]")
	if err != nil || !reflect.DeepEqual(parsed, want) {
		t.Fatalf("parse: %v %v", parsed, err)
	}
	_, err = alpa.ParseAssignment("[0, 0,")
	mustStatus(t, err, alpa.ErrParse)
	_, err = p.Evaluate([]int32{0, 0, 7, 1, 0})
	mustStatus(t, err, alpa.ErrInvalidArgument)

	// The same from bytes, and through the one-shot JSON call.
	data, err := os.ReadFile(examplePath())
	if err != nil {
		t.Fatal(err)
	}
	p2, err := alpa.ReadProblem(data, alpa.FormatIOPDDL)
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	s2, err := p2.Solve(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if s2.Objective() != 445 || !reflect.DeepEqual(s2.Assignment(), want) {
		t.Fatalf("from bytes: %v %v", s2.Objective(), s2.Assignment())
	}
	out, err := alpa.SolveJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Status     string
		Objective  float64
		Assignment []int32
	}
	if err := json.Unmarshal(out, &res); err != nil || res.Status != "optimal" || res.Objective != 445 || !reflect.DeepEqual(res.Assignment, want) {
		t.Fatalf("SolveJSON: %s (%v)", out, err)
	}
	js, err := s.JSON()
	if err != nil || !bytes.Contains(js, []byte(`"objective"`)) {
		t.Fatalf("solution JSON: %s %v", js, err)
	}
}

// iopddl is the IOPDDL example's JSON.
type iopddl struct {
	Problem struct {
		Nodes struct {
			Intervals [][2]int64
			Costs     [][]float64
			Usages    [][]int64
		}
		Edges struct {
			Nodes [][2]int32
			Costs [][]float64
		}
		UsageLimit int64 `json:"usage_limit"`
	}
}

// buildExample builds the IOPDDL example from Go slices, with a memory limit (0: the file's).
func buildExample(t *testing.T, limit int64) *alpa.Problem {
	t.Helper()
	data, err := os.ReadFile(examplePath())
	if err != nil {
		t.Fatal(err)
	}
	var ex iopddl
	if err := json.Unmarshal(data, &ex); err != nil {
		t.Fatal(err)
	}
	if limit == 0 {
		limit = ex.Problem.UsageLimit
	}
	p, err := alpa.NewProblem()
	if err != nil {
		t.Fatal(err)
	}
	var counts []int32
	var costs []float64
	var usages []int64
	for i, c := range ex.Problem.Nodes.Costs {
		counts = append(counts, int32(len(c)))
		costs = append(costs, c...)
		usages = append(usages, ex.Problem.Nodes.Usages[i]...)
	}
	var edgeCosts []float64
	for _, c := range ex.Problem.Edges.Costs {
		edgeCosts = append(edgeCosts, c...)
	}
	for _, err := range []error{
		p.AddNodes(counts, costs, usages),
		p.SetIntervals(ex.Problem.Nodes.Intervals),
		p.AddEdges(ex.Problem.Edges.Nodes, edgeCosts),
		p.SetMemoryLimit(limit),
		p.Finalize(),
	} {
		if err != nil {
			p.Close()
			t.Fatal(err)
		}
	}
	return p
}

func TestProblemFromSlices(t *testing.T) {
	defer noLeaks(t)()
	p := buildExample(t, 0)
	defer p.Close()
	if p.NodeCount() != 5 || p.EdgeCount() != 5 || p.StrategyCount(2) != 3 || p.StrategyCount(9) != -1 {
		t.Fatalf("counts %d %d %d", p.NodeCount(), p.EdgeCount(), p.StrategyCount(2))
	}
	s, err := p.Solve(&alpa.SolveOptions{Deterministic: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if s.Objective() != 445 || !reflect.DeepEqual(s.Assignment(), []int32{0, 0, 2, 1, 0}) {
		t.Fatalf("%v %v", s.Objective(), s.Assignment())
	}

	// A memory limit nothing meets: no answer is ErrInfeasible with the library's reason.
	tight := buildExample(t, 20)
	defer tight.Close()
	_, err = tight.Solve(nil)
	e := mustStatus(t, err, alpa.ErrInfeasible)
	t.Logf("infeasible: %s", e.Message)
	if errors.Is(err, alpa.ErrCancelled) {
		t.Fatal("ErrInfeasible matched ErrCancelled")
	}

	// Validation by the library names the element; the problem stays buildable.
	q, err := alpa.NewProblem()
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	if err := q.AddNodes([]int32{2, 0}, []float64{1, 2}, nil); err == nil {
		err = q.Finalize()
		e := mustStatus(t, err, alpa.ErrInvalidProblem)
		if !strings.Contains(e.Message, "node 1") {
			t.Fatalf("message does not name node 1: %q", e.Message)
		}
	} else {
		mustStatus(t, err, alpa.ErrInvalidProblem)
	}
	// Lengths the binding checks before the C call reads the slices.
	mustStatus(t, q.AddEdges([][2]int32{{0, 0}}, []float64{1}), alpa.ErrInvalidArgument)
	mustStatus(t, q.AddNodes([]int32{3}, []float64{1}, nil), alpa.ErrInvalidArgument)
}

func openCluster(t *testing.T, spec string) *alpa.Cluster {
	t.Helper()
	c, err := alpa.OpenCluster(spec)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type cliPlan struct {
	IterationSeconds float64 `json:"iteration_seconds"`
	Microbatches     int64
	Layers           []json.RawMessage
	Stages           []struct {
		Layers  [2]int
		Devices []int64
	}
}

func runCLIPlan(t *testing.T, model, cluster string) cliPlan {
	t.Helper()
	cmd := exec.Command(cli(t), "plan", "--model", model, "--cluster", cluster, "--json", "-q")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("alpa plan: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var p cliPlan
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &p); err != nil {
		t.Fatalf("alpa plan --json: %v", err)
	}
	return p
}

func TestPlanSmallModel(t *testing.T) {
	defer noLeaks(t)()
	cluster := openCluster(t, smallCluster)
	defer cluster.Close()
	phases := map[string]int{}
	start := time.Now()
	plan, err := alpa.PlanModel(smallModel, cluster, &alpa.PlanOptions{
		Progress: func(p alpa.PlanProgress) bool { phases[p.Phase]++; return true },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer plan.Close()
	t.Logf("planned in %v: %d stages, %d microbatches, %.6gs per iteration; progress %v",
		time.Since(start), plan.NumStages(), plan.Microbatches(), plan.IterationSeconds(), phases)
	if len(phases) == 0 {
		t.Error("no progress reports")
	}

	var summary cliPlan
	js, err := plan.JSON(alpa.PlanJSONSummary)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, &summary); err != nil {
		t.Fatal(err)
	}
	layers := len(summary.Layers)
	stages, err := plan.Stages()
	if err != nil {
		t.Fatal(err)
	}
	if len(stages) == 0 || layers == 0 {
		t.Fatalf("%d stages, %d layers", len(stages), layers)
	}
	// Stages cover the layers, in order, without gaps or overlaps.
	next := 0
	seen := map[int64]bool{}
	for _, s := range stages {
		if s.FirstLayer != next || s.LastLayer < s.FirstLayer {
			t.Fatalf("stage %d covers layers %d-%d, expected to start at %d", s.Index, s.FirstLayer, s.LastLayer, next)
		}
		next = s.LastLayer + 1
		if int64(len(s.Devices)) != s.SubmeshHosts*s.SubmeshDevicesPerHost ||
			s.DataParallel*s.TensorParallel != int64(len(s.Devices)) {
			t.Fatalf("stage %d: %d devices, submesh %dx%d, dp %d tp %d", s.Index, len(s.Devices),
				s.SubmeshHosts, s.SubmeshDevicesPerHost, s.DataParallel, s.TensorParallel)
		}
		for _, d := range s.Devices {
			if seen[d] {
				t.Fatalf("device %d in two stages", d)
			}
			seen[d] = true
		}
		sched, err := plan.StageSchedule(s.Index)
		if err != nil || int64(len(sched)) != 2*plan.Microbatches() {
			t.Fatalf("stage %d schedule: %v %v", s.Index, sched, err)
		}
	}
	if next != layers {
		t.Fatalf("stages end at layer %d of %d", next, layers)
	}
	// Device ids tile the cluster.
	for d := int64(0); d < cluster.Devices(); d++ {
		if !seen[d] {
			t.Fatalf("device %d of %d in no stage", d, cluster.Devices())
		}
	}
	if int64(len(seen)) != cluster.Devices() {
		t.Fatalf("%d device ids for %d devices", len(seen), cluster.Devices())
	}
	if summary.IterationSeconds != plan.IterationSeconds() {
		t.Fatalf("JSON %v, getter %v", summary.IterationSeconds, plan.IterationSeconds())
	}

	// The same iteration time (and stages) as the CLI.
	ref := runCLIPlan(t, smallModel, smallCluster)
	if math.Abs(ref.IterationSeconds-plan.IterationSeconds()) > 1e-12*ref.IterationSeconds ||
		ref.Microbatches != plan.Microbatches() || len(ref.Stages) != len(stages) {
		t.Fatalf("CLI: %v s, B=%d, %d stages; binding: %v s, B=%d, %d stages", ref.IterationSeconds,
			ref.Microbatches, len(ref.Stages), plan.IterationSeconds(), plan.Microbatches(), len(stages))
	}
	for i, s := range ref.Stages {
		if s.Layers != [2]int{stages[i].FirstLayer, stages[i].LastLayer} || !reflect.DeepEqual(s.Devices, stages[i].Devices) {
			t.Fatalf("stage %d: CLI %v %v, binding %d-%d %v", i, s.Layers, s.Devices, stages[i].FirstLayer, stages[i].LastLayer, stages[i].Devices)
		}
	}

	// Transfers, per-op stages and the planned graph agree.
	g, err := plan.Graph()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	opStages, err := plan.OpStages()
	if err != nil || len(opStages) != g.OpCount() {
		t.Fatalf("op stages: %d for %d ops (%v)", len(opStages), g.OpCount(), err)
	}
	transfers, err := plan.Transfers()
	if err != nil {
		t.Fatal(err)
	}
	for _, tr := range transfers {
		if tr.FromStage == tr.ToStage || tr.Bytes <= 0 || int(tr.Tensor) >= g.OpCount() {
			t.Fatalf("transfer %+v", tr)
		}
	}

	// Simulation and its timeline; the detailed JSON simulates the same iteration.
	sim, err := plan.Simulate(alpa.Schedule1F1B)
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	if sim.NumStages() != len(stages) || !(sim.IterationSeconds() > 0) ||
		math.Abs(sim.PlannerSeconds()-plan.IterationSeconds()) > 1e-9*plan.IterationSeconds() {
		t.Fatalf("simulation: %d stages, %v s, planner %v s", sim.NumStages(), sim.IterationSeconds(), sim.PlannerSeconds())
	}
	st, err := sim.Stage(0)
	if err != nil || !(st.BusySeconds > 0) {
		t.Fatalf("simulated stage 0: %+v %v", st, err)
	}
	svg, err := sim.TimelineSVG(800)
	if err != nil || !bytes.Contains(svg, []byte("<svg")) {
		t.Fatalf("timeline: %.80s %v", svg, err)
	}
	_, err = sim.TimelineSVG(5)
	mustStatus(t, err, alpa.ErrInvalidArgument)
	// The device programs' simulation: the same stages, within 15 % of the plan's here (the last
	// stage's update, twice the plan's in the programs on this tiny model, is no longer hidden
	// by the pipeline on the p3 hosts' NVLink pair; docs/planner.md).
	programs, err := plan.SimulatePrograms(alpa.Schedule1F1B)
	if err != nil {
		t.Fatal(err)
	}
	defer programs.Close()
	if programs.NumStages() != len(stages) ||
		math.Abs(programs.IterationSeconds()-sim.IterationSeconds()) > 0.15*sim.IterationSeconds() {
		t.Fatalf("programs' simulation: %d stages, %v s against %v s", programs.NumStages(),
			programs.IterationSeconds(), sim.IterationSeconds())
	}
	detailed, err := plan.JSON(alpa.PlanJSONDetailed)
	if err != nil {
		t.Fatal(err)
	}
	sim2, err := alpa.SimulatePlanJSON(detailed, alpa.Schedule1F1B)
	if err != nil {
		t.Fatal(err)
	}
	defer sim2.Close()
	if math.Abs(sim2.IterationSeconds()-sim.IterationSeconds()) > 1e-9*sim.IterationSeconds() {
		t.Fatalf("simulated from JSON %v, from the plan %v", sim2.IterationSeconds(), sim.IterationSeconds())
	}
	_, err = alpa.SimulatePlanJSON([]byte(`{"format": "alpa-plan"}`), alpa.Schedule1F1B)
	mustStatus(t, err, alpa.ErrParse)
}

// mlpOps is a one-layer MLP's forward pass and loss, as slices.
func mlpOps() []alpa.Op {
	return []alpa.Op{
		{Kind: alpa.OpParameter, DType: alpa.F32, Role: alpa.RoleInput, Shape: []int64{64, 32}, Name: "x"},
		{Kind: alpa.OpParameter, DType: alpa.F32, Role: alpa.RoleParameter, Shape: []int64{32, 128}, Name: "w1"},
		{Kind: alpa.OpParameter, DType: alpa.F32, Role: alpa.RoleParameter, Shape: []int64{128, 32}, Name: "w2"},
		// dot_general [nb, nc, lhs_contracting, rhs_contracting] = [0, 1, 1, 0]
		{Kind: alpa.OpDotGeneral, DType: alpa.DTypeInfer, Operands: []int32{0, 1}, Attrs: []int64{0, 1, 1, 0}, Name: "fc1"},
		{Kind: alpa.OpRelu, DType: alpa.DTypeInfer, Operands: []int32{3}, Name: "relu"},
		{Kind: alpa.OpDotGeneral, DType: alpa.DTypeInfer, Operands: []int32{4, 2}, Attrs: []int64{0, 1, 1, 0}, Name: "fc2"},
		{Kind: alpa.OpReduceSum, DType: alpa.DTypeInfer, Operands: []int32{5}, Attrs: []int64{0, 1}, Name: "loss"},
	}
}

func TestGraphFromSlicesAutoShard(t *testing.T) {
	defer noLeaks(t)()
	mesh, err := alpa.NewAbstractMesh([]int64{4}, []float64{1}, []float64{1})
	if err != nil {
		t.Fatal(err)
	}
	defer mesh.Close()
	alpaUnits := &alpa.SolveOptions{AlpaCostModel: true, Deterministic: true}

	// A hand-written graph.
	g, err := alpa.NewGraph()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ops := mlpOps()
	if err := g.AddOps(ops); err != nil {
		t.Fatal(err)
	}
	if err := g.SetOutputs([]int32{6}); err != nil {
		t.Fatal(err)
	}
	if err := g.Finalize(); err != nil {
		t.Fatal(err)
	}
	if g.OpCount() != len(ops) {
		t.Fatalf("%d ops", g.OpCount())
	}
	op, err := g.Op(3)
	if err != nil || op.Name != "fc1" || !reflect.DeepEqual(op.Shape, []int64{64, 128}) || op.DType != alpa.F32 {
		t.Fatalf("op 3: %+v %v", op, err)
	}
	sp, err := g.AutoShard(mesh, nil, alpaUnits)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	strategies, err := sp.OpStrategies()
	if err != nil || len(strategies) != len(ops) || sp.Status() != alpa.SolveOptimal {
		t.Fatalf("strategies %v (%v), status %v", strategies, err, sp.Status())
	}
	sum := sp.Cost(alpa.CostCompute) + sp.Cost(alpa.CostCommunication) + sp.Cost(alpa.CostResharding)
	if math.Abs(sum-sp.Objective()) > 1e-9*math.Max(1, math.Abs(sum)) {
		t.Fatalf("costs %v, objective %v", sum, sp.Objective())
	}
	spec, err := sp.OpSpec(1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("hand-written MLP on 4 devices: objective %v, w1 laid out %q", sp.Objective(), spec)

	// A zoo model's training graph copied op by op into slices and rebuilt: the same graph and
	// the same sharding.
	zoo, err := alpa.BuildModelGraph("mlp:layers=4,batch=32,hidden=256")
	if err != nil {
		t.Fatal(err)
	}
	defer zoo.Close()
	copied := make([]alpa.Op, zoo.OpCount())
	for i := range copied {
		if copied[i], err = zoo.Op(i); err != nil {
			t.Fatal(err)
		}
	}
	rebuilt, err := alpa.NewGraph()
	if err != nil {
		t.Fatal(err)
	}
	defer rebuilt.Close()
	if err := rebuilt.AddOps(copied); err != nil {
		t.Fatal(err)
	}
	for i, op := range copied {
		if op.Alias >= 0 {
			if err := rebuilt.SetAlias(int32(i), op.Alias); err != nil {
				t.Fatal(err)
			}
		}
		if op.StopGradient {
			if err := rebuilt.SetStopGradient(int32(i), true); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := rebuilt.SetOutputs(zoo.Outputs()); err != nil {
		t.Fatal(err)
	}
	if err := rebuilt.Finalize(); err != nil {
		t.Fatal(err)
	}
	a, err := zoo.JSON()
	if err != nil {
		t.Fatal(err)
	}
	b, err := rebuilt.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("the rebuilt graph's JSON differs from the zoo graph's")
	}
	p1, err := zoo.AutoShard(mesh, nil, alpaUnits)
	if err != nil {
		t.Fatal(err)
	}
	defer p1.Close()
	p2, err := rebuilt.AutoShard(mesh, nil, alpaUnits)
	if err != nil {
		t.Fatal(err)
	}
	defer p2.Close()
	c1, err1 := p1.CollectiveCounts(true)
	c2, err2 := p2.CollectiveCounts(true)
	if err1 != nil || err2 != nil || p1.Objective() != p2.Objective() || !reflect.DeepEqual(c1, c2) {
		t.Fatalf("zoo %v %v, rebuilt %v %v", p1.Objective(), c1, p2.Objective(), c2)
	}
	coll, err := p2.Collectives()
	if err != nil {
		t.Fatal(err)
	}
	perTensor, err := p2.CollectiveCounts(false)
	if err != nil {
		t.Fatal(err)
	}
	total := int64(0)
	for _, n := range perTensor {
		total += n
	}
	if total != int64(len(coll)) {
		t.Fatalf("%d collectives counted per tensor, %d listed", total, len(coll))
	}
	t.Logf("mlp from slices: objective %v, collectives by kind %v (%d listed)", p2.Objective(), c1, len(coll))

	// Auto-sharding with real units on a cluster's mesh.
	cluster := openCluster(t, "p3.16xlarge")
	defer cluster.Close()
	m2, err := alpa.NewMesh(cluster, 1, 8, []int64{2, 4})
	if err != nil {
		t.Fatal(err)
	}
	defer m2.Close()
	if !reflect.DeepEqual(m2.Shape(), []int64{2, 4}) || !(m2.Beta(alpa.MeshDimFlattened) > 0) {
		t.Fatalf("mesh %v", m2.Shape())
	}
	p3, err := rebuilt.AutoShard(m2, cluster, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p3.Close()
	if !(p3.Objective() > 0) || p3.PeakMemoryBytes() <= 0 {
		t.Fatalf("real units: %v s, %d bytes", p3.Objective(), p3.PeakMemoryBytes())
	}

	// A bad op: ErrInvalidGraph naming the op, and nothing of the batch is added.
	bad, err := alpa.NewGraph()
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	badOps := mlpOps()[:4]
	badOps[3].Operands = []int32{0, 2} // [64, 32] x [128, 32]: contracting dims 32 and 128
	err = bad.AddOps(badOps)
	e := mustStatus(t, err, alpa.ErrInvalidGraph)
	if !strings.Contains(e.Message, "fc1") || bad.OpCount() != 0 {
		t.Fatalf("message %q, %d ops added", e.Message, bad.OpCount())
	}
}

// A small GPT whose sequence (8) is longer than its head dim (4): its attention cores are what
// selective recomputation reruns.
const (
	attentionModel   = "gpt:layers=4,hidden=16,heads=4,seq=8,vocab=32,batch=8,dtype=f32,adam_eps=1e-5"
	attentionCluster = "p3.16xlarge:hosts=1,devices_per_host=2"
)

func TestManualZeroStagesAreReportedPerStage(t *testing.T) {
	defer noLeaks(t)()
	cluster := openCluster(t, attentionCluster)
	defer cluster.Close()
	// dp 2 on two devices: stage 1 shards the optimizer state, 2 the gradients too, 3 the weights.
	for zero := int32(0); zero <= 3; zero++ {
		manual := alpa.DefaultManualPlan()
		manual.DataParallel, manual.Microbatches, manual.ZeroStage = 2, 2, zero
		plan, err := alpa.PlanModelManual(attentionModel, cluster, manual, nil)
		if err != nil {
			t.Fatal(err)
		}
		stages, err := plan.Stages()
		plan.Close()
		if err != nil || len(stages) != 1 {
			t.Fatalf("zero %d: %d stages (%v)", zero, len(stages), err)
		}
		s := stages[0]
		if s.ZeRO != (zero >= 1) || s.ShardGradients != (zero == 2) || s.ShardParameters != (zero == 3) {
			t.Fatalf("zero %d: ZeRO %v, ShardGradients %v, ShardParameters %v", zero, s.ZeRO,
				s.ShardGradients, s.ShardParameters)
		}
	}
}

func TestZeroBubbleScheduleWhereAsked(t *testing.T) {
	defer noLeaks(t)()
	cluster := openCluster(t, "p3.16xlarge:hosts=1,devices_per_host=4")
	defer cluster.Close()
	// Four one-device stages and four microbatches: ZB-H1 pays; off (the default), 1F1B.
	model := "gpt:layers=4,hidden=128,heads=4,seq=8,vocab=64,batch=8,dtype=f32,adam_eps=1e-5"
	seconds := map[string]float64{}
	for _, zb := range []string{"off", "search"} {
		plan, err := alpa.PlanModel(model, cluster, &alpa.PlanOptions{
			Microbatches: 4, Set: map[string]string{"pipeline_stages": "4", "zero_bubble": zb}})
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{"off": "1f1b", "search": "zb-h1"}[zb]
		if got := plan.Schedule(); got != want {
			t.Fatalf("zero_bubble %s: schedule %q, want %q", zb, got, want)
		}
		seconds[zb] = plan.IterationSeconds()
		plan.Close()
	}
	if seconds["search"] >= seconds["off"] {
		t.Fatalf("ZB-H1 %g s, 1F1B %g s", seconds["search"], seconds["off"])
	}
}

func TestInterleavedScheduleWhereAskedRunsOnItsGroupsAndSimulatesAsPlanned(t *testing.T) {
	defer noLeaks(t)()
	cluster := openCluster(t, "p3.16xlarge:hosts=1,devices_per_host=4")
	defer cluster.Close()
	// Four one-device groups and four microbatches: interleaving shrinks 1F1B's bubble; off
	// (the default), one stage per group.
	model := "gpt:layers=8,hidden=128,heads=4,seq=8,vocab=64,batch=8,dtype=f32,adam_eps=1e-5"
	planWith := func(interleave string) *alpa.Plan {
		t.Helper()
		plan, err := alpa.PlanModel(model, cluster, &alpa.PlanOptions{Microbatches: 4, Threads: 2,
			Set: map[string]string{"pipeline_stages": "4", "interleave": interleave}})
		if err != nil {
			t.Fatal(err)
		}
		return plan
	}
	off := planWith("off")
	defer off.Close()
	if off.Schedule() != "1f1b" || off.VirtualStages() != 1 || off.NumStages() != 4 {
		t.Fatalf("interleave off: %q, %d virtual stages, %d stages", off.Schedule(), off.VirtualStages(), off.NumStages())
	}
	plan := planWith("search")
	defer plan.Close()
	v := plan.VirtualStages()
	if plan.Schedule() != "interleaved-1f1b" || plan.PipelineSchedule() != alpa.ScheduleInterleaved1F1B ||
		v < 2 || plan.NumStages() != 4*v {
		t.Fatalf("interleave search: %q, %d virtual stages, %d stages", plan.Schedule(), v, plan.NumStages())
	}
	stages, err := plan.Stages()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stages {
		if !reflect.DeepEqual(s.Devices, stages[s.Index%4].Devices) {
			t.Fatalf("stage %d on %v, stage %d on %v", s.Index, s.Devices, s.Index%4, stages[s.Index%4].Devices)
		}
	}

	// By default the simulation runs the plan's own schedule, and agrees with its prediction.
	sim, err := plan.Simulate(alpa.SchedulePlanned)
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	if sim.NumStages() != plan.NumStages() ||
		math.Abs(sim.IterationSeconds()-plan.IterationSeconds()) > 0.05*plan.IterationSeconds() {
		t.Fatalf("simulated %v s (%d stages), predicted %v s", sim.IterationSeconds(), sim.NumStages(),
			plan.IterationSeconds())
	}
	explicit, err := plan.Simulate(alpa.ScheduleInterleaved1F1B)
	if err != nil {
		t.Fatal(err)
	}
	defer explicit.Close()
	detailed, err := plan.JSON(alpa.PlanJSONDetailed)
	if err != nil {
		t.Fatal(err)
	}
	fromJSON, err := alpa.SimulatePlanJSON(detailed, alpa.SchedulePlanned)
	if err != nil {
		t.Fatal(err)
	}
	defer fromJSON.Close()
	for _, other := range []*alpa.Simulation{explicit, fromJSON} {
		if math.Abs(other.IterationSeconds()-sim.IterationSeconds()) > 1e-9*sim.IterationSeconds() {
			t.Fatalf("simulated %v s, by default %v s", other.IterationSeconds(), sim.IterationSeconds())
		}
	}
	// An interleaved plan under plain 1F1B, and a plain plan under interleaving, are refused.
	_, err = plan.Simulate(alpa.Schedule1F1B)
	mustStatus(t, err, alpa.ErrInvalidArgument)
	_, err = off.Simulate(alpa.ScheduleInterleaved1F1B)
	mustStatus(t, err, alpa.ErrInvalidArgument)

	// The executor runs it by default under its own schedule (one checked step on 4 thread
	// devices equals one device); explicitly under plain 1F1B it is refused.
	config := alpa.DefaultExecutorConfig()
	config.Check = true
	ex, err := alpa.NewExecutor(plan, &config)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	step, err := ex.RunStep()
	if err != nil || !step.Passed || ex.Devices() != 4 {
		t.Fatalf("step %+v (%v) on %d devices", step, err, ex.Devices())
	}
	config.Schedule = alpa.Schedule1F1B
	_, err = alpa.NewExecutor(plan, &config)
	mustStatus(t, err, alpa.ErrInvalidArgument)

	// A manual plan states its virtual stages, and reads them back.
	manual := alpa.DefaultManualPlan()
	if manual.VirtualStages != 1 {
		t.Fatalf("default virtual stages %d", manual.VirtualStages)
	}
	manual.PipelineParallel, manual.Microbatches, manual.VirtualStages = 4, 4, 2
	stated, err := alpa.PlanModelManual(model, cluster, manual, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stated.Close()
	if stated.Schedule() != "interleaved-1f1b" || stated.VirtualStages() != 2 || stated.NumStages() != 8 {
		t.Fatalf("manual: %q, %d virtual stages, %d stages", stated.Schedule(), stated.VirtualStages(), stated.NumStages())
	}
	if back, err := stated.ManualSpec(); err != nil || back != manual {
		t.Fatalf("manual spec read back %+v (%v), stated %+v", back, err, manual)
	}
}

func TestManualPlanWithSelectiveRecomputationReportsItPerStage(t *testing.T) {
	defer noLeaks(t)()
	cluster := openCluster(t, attentionCluster)
	defer cluster.Close()
	manual := alpa.DefaultManualPlan()
	if manual.Recompute != alpa.RematOff || manual.Remat {
		t.Fatalf("default manual plan: Recompute %v, Remat %v", manual.Recompute, manual.Remat)
	}
	manual.TensorParallel, manual.Microbatches = 2, 2
	manual.Recompute = alpa.RematSelective
	plan, err := alpa.PlanModelManual(attentionModel, cluster, manual, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer plan.Close()
	stages, err := plan.Stages()
	if err != nil || len(stages) != 1 {
		t.Fatalf("%d stages (%v)", len(stages), err)
	}
	if s := stages[0]; s.Recompute != alpa.RematSelective || !s.Remat || s.TensorParallel != 2 {
		t.Fatalf("stage 0: Recompute %v, Remat %v, tp %d", s.Recompute, s.Remat, s.TensorParallel)
	}
	spec, err := plan.ManualSpec()
	if err != nil || spec.Recompute != alpa.RematSelective || !spec.Remat {
		t.Fatalf("ManualSpec %+v (%v)", spec, err)
	}
	// The plan JSON says "selective" for the stage and in the configuration.
	js, err := plan.JSON(alpa.PlanJSONSummary)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Stages   []struct{ Remat interface{} }
		Baseline struct{ Remat interface{} }
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Stages) != 1 || doc.Stages[0].Remat != "selective" || doc.Baseline.Remat != "selective" {
		t.Fatalf("plan JSON: stages %+v, baseline remat %v", doc.Stages, doc.Baseline.Remat)
	}
	// ManualSpec's answer plans the same again.
	again, err := alpa.PlanModelManual(attentionModel, cluster, spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	if again.IterationSeconds() != plan.IterationSeconds() {
		t.Fatalf("ManualSpec planned again: %v s, first %v s", again.IterationSeconds(), plan.IterationSeconds())
	}

	// The two-way Remat still asks for full recomputation; Recompute, when set, decides.
	for _, c := range []struct {
		recompute alpa.Remat
		remat     bool
		want      alpa.Remat
	}{
		{alpa.RematSearch, true, alpa.RematOn},
		{alpa.RematSearch, false, alpa.RematOff},
		{alpa.RematOff, true, alpa.RematOff},
		{alpa.RematOn, false, alpa.RematOn},
	} {
		manual.Recompute, manual.Remat = c.recompute, c.remat
		p, err := alpa.PlanModelManual(attentionModel, cluster, manual, nil)
		if err != nil {
			t.Fatalf("Recompute %v, Remat %v: %v", c.recompute, c.remat, err)
		}
		s, err := p.Stage(0)
		p.Close()
		if err != nil || s.Recompute != c.want || s.Remat != (c.want != alpa.RematOff) {
			t.Fatalf("Recompute %v, Remat %v: stage Recompute %v, Remat %v (%v)", c.recompute, c.remat,
				s.Recompute, s.Remat, err)
		}
	}
	manual.Recompute = alpa.Remat(7)
	_, err = alpa.PlanModelManual(attentionModel, cluster, manual, nil)
	if e := mustStatus(t, err, alpa.ErrInvalidArgument); !strings.Contains(e.Message, "Recompute") {
		t.Fatalf("message %q", e.Message)
	}

	// The planner's search, fixed to selective by the option, recomputes selectively everywhere.
	searched, err := alpa.PlanModel(attentionModel, cluster, &alpa.PlanOptions{Remat: alpa.RematSelective})
	if err != nil {
		t.Fatal(err)
	}
	defer searched.Close()
	stages, err = searched.Stages()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range stages {
		if s.Recompute != alpa.RematSelective {
			t.Fatalf("searched stage %d: Recompute %v", s.Index, s.Recompute)
		}
	}
	if got := alpa.RematSelective.String() + " " + alpa.Remat(9).String(); got != "selective Remat(9)" {
		t.Fatalf("String: %q", got)
	}
}

func TestBadModelSpec(t *testing.T) {
	defer noLeaks(t)()
	cluster := openCluster(t, smallCluster)
	defer cluster.Close()
	const spec = "gpt:hidden=256,nonsense=3"
	_, err := alpa.PlanModel(spec, cluster, nil)
	e := mustStatus(t, err, alpa.ErrInvalidArgument)
	if !strings.Contains(e.Message, "nonsense") {
		t.Fatalf("message does not name the key: %q", e.Message)
	}
	_, err = alpa.BuildModelGraph(spec)
	if e2 := mustStatus(t, err, alpa.ErrInvalidArgument); e2.Message != e.Message {
		t.Fatalf("BuildModelGraph says %q, PlanModel %q", e2.Message, e.Message)
	}
	// The CLI prints the same library message.
	cmd := exec.Command(cli(t), "plan", "--model", spec, "--cluster", smallCluster, "-q")
	out, _ := cmd.CombinedOutput()
	if !strings.Contains(string(out), e.Message) {
		t.Fatalf("CLI output %q lacks the message %q", out, e.Message)
	}
	// A bad option and a bad cluster carry the library's messages too.
	_, err = alpa.PlanModel(smallModel, cluster, &alpa.PlanOptions{Set: map[string]string{"microbatches": "2.5"}})
	if e := mustStatus(t, err, alpa.ErrInvalidArgument); !strings.Contains(e.Message, "microbatches") {
		t.Fatalf("option message %q", e.Message)
	}
	_, err = alpa.OpenCluster("no-such-preset:2")
	mustStatus(t, err, alpa.ErrInvalidArgument)
	_, err = alpa.ReadClusterFile(filepath.Join(t.TempDir(), "missing.json"))
	mustStatus(t, err, alpa.ErrIO)
}

func TestCancelFromAnotherGoroutine(t *testing.T) {
	defer noLeaks(t)()
	cluster := openCluster(t, "p3.16xlarge:2")
	defer cluster.Close()
	tok, err := alpa.NewCancelToken()
	if err != nil {
		t.Fatal(err)
	}
	defer tok.Close()
	var once sync.Once
	started := make(chan struct{})
	triggeredAt := make(chan time.Time, 1)
	go func() {
		<-started
		time.Sleep(200 * time.Millisecond)
		now := time.Now()
		tok.Trigger()
		triggeredAt <- now
	}()
	start := time.Now()
	_, err = alpa.PlanModel("gpt-2.6b", cluster, &alpa.PlanOptions{
		Cancel:   tok,
		Progress: func(alpa.PlanProgress) bool { once.Do(func() { close(started) }); return true },
	})
	end := time.Now()
	mustStatus(t, err, alpa.ErrCancelled)
	triggered := <-triggeredAt
	if end.Before(triggered) {
		t.Fatal("the call returned before the token was triggered")
	}
	t.Logf("cancelled %v after the trigger (%v after the start)", end.Sub(triggered), end.Sub(start))
	if end.Sub(triggered) > 5*time.Second {
		t.Fatalf("took %v to stop after the trigger", end.Sub(triggered))
	}

	// A context with a deadline cancels through a token of its own.
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	_, err = alpa.PlanModel("gpt-2.6b", cluster, &alpa.PlanOptions{Context: ctx})
	mustStatus(t, err, alpa.ErrCancelled)

	// A progress callback returning false cancels.
	_, err = alpa.PlanModel(smallModel, cluster, &alpa.PlanOptions{
		Progress: func(alpa.PlanProgress) bool { return false }})
	mustStatus(t, err, alpa.ErrCancelled)

	// A panic in a callback does not unwind through C: the call is cancelled and the panic is
	// raised again on the calling goroutine.
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("recovered %v, want boom", r)
			}
		}()
		p, _ := alpa.PlanModel(smallModel, cluster, &alpa.PlanOptions{
			Progress: func(alpa.PlanProgress) bool { panic("boom") }})
		if p != nil {
			p.Close()
		}
		t.Fatal("no panic")
	}()
	// Trigger after Close is a no-op.
	tok.Close()
	tok.Trigger()
}

func TestConcurrentPlanners(t *testing.T) {
	defer noLeaks(t)()
	cluster := openCluster(t, smallCluster)
	defer cluster.Close()
	plan := func() (float64, []alpa.Stage, error) {
		p, err := alpa.PlanModel(smallModel, cluster, nil)
		if err != nil {
			return 0, nil, err
		}
		defer p.Close()
		stages, err := p.Stages()
		return p.IterationSeconds(), stages, err
	}
	serialTime, serialStages, err := plan()
	if err != nil {
		t.Fatal(err)
	}
	const n = 4
	times := make([]float64, n)
	stages := make([][]alpa.Stage, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			times[i], stages[i], errs[i] = plan()
		}(i)
	}
	wg.Wait()
	for i := 0; i < n; i++ {
		if errs[i] != nil {
			t.Fatalf("planner %d: %v", i, errs[i])
		}
		if times[i] != serialTime || !reflect.DeepEqual(stages[i], serialStages) {
			t.Fatalf("planner %d: %v s %+v; serial: %v s %+v", i, times[i], stages[i], serialTime, serialStages)
		}
	}
}

// makeUnclosed creates handles and drops them without Close.
func makeUnclosed(t *testing.T) int {
	t.Helper()
	p := buildExample(t, 0)
	s, err := p.Solve(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := openCluster(t, "p3.16xlarge")
	m, err := alpa.NewAbstractMesh([]int64{2, 2}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	g, err := alpa.BuildModelGraph("mlp:layers=2,hidden=16,batch=8")
	if err != nil {
		t.Fatal(err)
	}
	tok, err := alpa.NewCancelToken()
	if err != nil {
		t.Fatal(err)
	}
	_, _, _, _, _, _ = p, s, c, m, g, tok
	return 6
}

func TestNoLeakedHandles(t *testing.T) {
	base := alpa.LiveHandles()
	// Closed handles: every create is matched by a free, Close is idempotent, and a closed
	// handle answers with an error rather than crashing.
	p := buildExample(t, 0)
	if alpa.LiveHandles() != base+1 {
		t.Fatalf("live %d, want %d", alpa.LiveHandles(), base+1)
	}
	p.Close()
	p.Close()
	if alpa.LiveHandles() != base {
		t.Fatalf("live %d after Close, want %d", alpa.LiveHandles(), base)
	}
	_, err := p.Solve(nil)
	mustStatus(t, err, alpa.ErrInvalidArgument)
	if p.NodeCount() != 0 {
		t.Fatal("a closed problem has nodes")
	}

	// Unclosed handles are freed by their finalizers.
	n := makeUnclosed(t)
	if got := alpa.LiveHandles(); got != base+int64(n) {
		t.Fatalf("live %d, want %d", got, base+int64(n))
	}
	deadline := time.Now().Add(10 * time.Second)
	for alpa.LiveHandles() != base && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if got := alpa.LiveHandles(); got != base {
		t.Fatalf("live %d after GC, want %d: finalizers did not free the unclosed handles", got, base)
	}
}

// TestCgocheck2InEffect proves that the checker the tests run under would catch a violation:
// a child test process that stores a Go pointer in C memory must die with cgocheck's message.
func TestCgocheck2InEffect(t *testing.T) {
	if os.Getenv("ALPA_GO_CGOCHECK_CHILD") == "1" {
		cgocheck.StoreGoPointerInCMemory()
		return
	}
	if !strings.Contains(os.Getenv("GODEBUG"), "cgocheck=2") {
		if os.Getenv("ALPA_REQUIRE_CGOCHECK2") != "" {
			t.Fatal("GODEBUG lacks cgocheck=2")
		}
		t.Skip("GODEBUG lacks cgocheck=2")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestCgocheck2InEffect$")
	cmd.Env = append(os.Environ(), "ALPA_GO_CGOCHECK_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "Go pointer stored into non-Go memory") {
		t.Fatalf("the violation was not caught (err %v):\n%s", err, out)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 && os.Getenv("ALPA_GO_CGOCHECK_CHILD") == "" {
		for i := 0; i < 50 && alpa.LiveHandles() != 0; i++ {
			runtime.GC()
			time.Sleep(10 * time.Millisecond)
		}
		if n := alpa.LiveHandles(); n != 0 {
			os.Stderr.WriteString("handles still live after the tests\n")
			code = 1
		}
	}
	os.Exit(code)
}
