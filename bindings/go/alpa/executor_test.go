package alpa_test

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/libalpa/alpa/bindings/go/alpa"
)

// A 3-layer MLP planned by hand as dp 2 x tp 2 with 2 microbatches on 4 of a host's devices
// (the C ABI's executor test uses the same plan).
const executorModel = "mlp:layers=3,hidden=8,batch=8,dtype=f32"

func manualMLPPlan(t *testing.T) *alpa.Plan {
	t.Helper()
	cluster := openCluster(t, "p3.16xlarge:devices_per_host=4")
	defer cluster.Close()
	manual := alpa.DefaultManualPlan()
	manual.DataParallel, manual.TensorParallel, manual.PipelineParallel = 2, 2, 1
	manual.Microbatches = 2
	plan, err := alpa.PlanModelManual(executorModel, cluster, manual, nil)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func TestExecutorEqualsOneDevice(t *testing.T) {
	defer noLeaks(t)()
	planned := manualMLPPlan(t)
	defer planned.Close()
	// Through the executable plan JSON, as `alpa plan -o` writes it and `alpa run` reads it.
	js, err := planned.JSON(alpa.PlanJSONExecutable)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := alpa.ReadPlanJSON(js)
	if err != nil {
		t.Fatal(err)
	}
	defer plan.Close()
	if plan.NumStages() != planned.NumStages() || plan.IterationSeconds() != planned.IterationSeconds() {
		t.Fatalf("read back: %d stages, %g s; planned %d, %g s", plan.NumStages(),
			plan.IterationSeconds(), planned.NumStages(), planned.IterationSeconds())
	}

	config := alpa.DefaultExecutorConfig()
	if config.Schedule != alpa.SchedulePlanned || config.RTol != 1e-5 || config.ATol != 4e-5 {
		t.Fatalf("defaults %+v", config)
	}
	config.Check = true
	ex, err := alpa.NewExecutor(plan, &config)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	if ex.Devices() != 4 || ex.Rank() != 0 || ex.GPU(0) != -1 {
		t.Fatalf("devices %d, rank %d, gpu %d", ex.Devices(), ex.Rank(), ex.GPU(0))
	}
	text, err := ex.ProgramText(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\trun ", "\tall-reduce ", "\tfeed "} {
		if !strings.Contains(text, want) {
			t.Fatalf("device 0's program has no %q:\n%s", want, text)
		}
	}
	for i := 0; i < 3; i++ {
		r, err := ex.RunStep()
		if err != nil {
			t.Fatal(err)
		}
		if r.Step != int64(i) || !r.Passed || !(r.Loss > 0) ||
			!(math.Abs(r.Loss-r.ReferenceLoss) <= 4e-5+1e-5*math.Abs(r.ReferenceLoss)) ||
			!(r.ParameterError <= 1) ||
			r.PeakBytes <= 0 || r.PlannedBytes <= 0 {
			t.Fatalf("step %d: %+v", i, r)
		}
	}

	// Parameters round-trip by name, and a step after setting them still equals one device.
	w, err := ex.Parameter("fc0.w")
	if err != nil {
		t.Fatal(err)
	}
	if len(w) != 8*8 {
		t.Fatalf("fc0.w has %d values, want 64", len(w))
	}
	for i := range w {
		w[i] = float64(i%7) / 16
	}
	if err := ex.SetParameter("fc0.w", w); err != nil {
		t.Fatal(err)
	}
	back, err := ex.Parameter("fc0.w")
	if err != nil {
		t.Fatal(err)
	}
	for i := range w {
		if back[i] != w[i] {
			t.Fatalf("fc0.w[%d] = %g after setting %g", i, back[i], w[i])
		}
	}
	if r, err := ex.RunStep(); err != nil || !r.Passed {
		t.Fatalf("step after SetParameter: %+v, %v", r, err)
	}

	e := mustStatus(t, ex.SetParameter("no.such", w), alpa.ErrInvalidArgument)
	if !strings.Contains(e.Message, "no.such") {
		t.Fatalf("message %q does not name the tensor", e.Message)
	}
	mustStatus(t, ex.SetParameter("fc0.w", w[:3]), alpa.ErrInvalidArgument)
	mustStatus(t, ex.SetInput("no.such", w), alpa.ErrInvalidArgument)
	if _, err := ex.Parameter("no.such"); err == nil {
		t.Fatal("Parameter of an unknown name: no error")
	}

	bad := alpa.DefaultExecutorConfig()
	bad.Schedule = 7
	mustStatus(t, func() error { _, err := alpa.NewExecutor(plan, &bad); return err }(), alpa.ErrInvalidArgument)
	ex.Close()
	if _, err := ex.RunStep(); err == nil {
		t.Fatal("RunStep after Close: no error")
	}
}

func TestReadPlanErrors(t *testing.T) {
	defer noLeaks(t)()
	mustStatus(t, func() error { _, err := alpa.ReadPlanJSON([]byte(`{"format": 1`)); return err }(), alpa.ErrParse)
	e := mustStatus(t, func() error {
		_, err := alpa.ReadPlanFile(filepath.Join(t.TempDir(), "missing.json"))
		return err
	}(), alpa.ErrIO)
	if !strings.Contains(e.Message, "missing.json") {
		t.Fatalf("message %q does not name the file", e.Message)
	}
	// A summary (detail 0) is not executable.
	plan := manualMLPPlan(t)
	defer plan.Close()
	summary, err := plan.JSON(alpa.PlanJSONSummary)
	if err != nil {
		t.Fatal(err)
	}
	mustStatus(t, func() error { _, err := alpa.ReadPlanJSON(summary); return err }(), alpa.ErrParse)
}

func TestTransferMoves(t *testing.T) {
	defer noLeaks(t)()
	cluster := openCluster(t, smallCluster)
	defer cluster.Close()
	manual := alpa.DefaultManualPlan()
	manual.DataParallel, manual.TensorParallel, manual.PipelineParallel = 1, 2, 2
	manual.Microbatches = 2
	plan, err := alpa.PlanModelManual(smallModel, cluster, manual, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer plan.Close()
	transfers, err := plan.Transfers()
	if err != nil {
		t.Fatal(err)
	}
	if len(transfers) == 0 {
		t.Fatal("a two-stage plan without transfers")
	}
	stages, err := plan.Stages()
	if err != nil {
		t.Fatal(err)
	}
	for i, tr := range transfers {
		moves, err := plan.TransferMoves(i)
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, m := range moves {
			if !contains(stages[tr.FromStage].Devices, m.SrcDevice) || !contains(stages[tr.ToStage].Devices, m.DstDevice) {
				t.Fatalf("transfer %d: move %+v is not from stage %d to stage %d", i, m, tr.FromStage, tr.ToStage)
			}
			elements := int64(1)
			for _, n := range m.Sizes {
				elements *= n
			}
			// f16 activations: two bytes per element of the box.
			if len(m.Offsets) != len(m.Sizes) || len(m.Sizes) == 0 || m.Bytes != 2*elements {
				t.Fatalf("transfer %d: move %+v: %d bytes for a box of %d elements", i, m, m.Bytes, elements)
			}
			sum += m.Bytes
		}
		// Every element reaches every receiving device that holds it: at least the tensor once.
		if sum < tr.Bytes {
			t.Fatalf("transfer %d: moves carry %d bytes of a %d-byte tensor", i, sum, tr.Bytes)
		}
	}
	if _, err := plan.TransferMoves(len(transfers)); err == nil {
		t.Fatal("TransferMoves past the last transfer: no error")
	}
}

func contains(xs []int64, x int64) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func TestReadHLO(t *testing.T) {
	defer noLeaks(t)()
	path := filepath.Join(repoRoot(), "tests", "fixtures", "hlo", "adam_step.hlo")
	g, err := alpa.ReadHLOFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	text, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := alpa.ReadHLO(text)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if g.OpCount() == 0 || g.OpCount() != h.OpCount() {
		t.Fatalf("op counts %d (file) and %d (bytes)", g.OpCount(), h.OpCount())
	}
	phases := map[alpa.Phase]int{}
	sources := 0
	for i := 0; i < g.OpCount(); i++ {
		op, err := g.Op(i)
		if err != nil {
			t.Fatal(err)
		}
		phases[op.Phase]++
		if strings.HasPrefix(op.Source, "jit(") {
			sources++
		}
	}
	if phases[alpa.PhaseUpdate] == 0 {
		t.Fatalf("an Adam step without update ops: %v", phases)
	}
	if sources == 0 {
		t.Fatal("no imported op names its HLO source")
	}
	e := mustStatus(t, func() error {
		_, err := alpa.ReadHLO([]byte("HloModule m\n\nENTRY main {\n  x = f32[2] parameter(0\n}\n"))
		return err
	}(), alpa.ErrParse)
	if !strings.Contains(e.Message, "line") {
		t.Fatalf("message %q has no line", e.Message)
	}
}

func TestMakeTraining(t *testing.T) {
	defer noLeaks(t)()
	forward, err := alpa.NewGraph()
	if err != nil {
		t.Fatal(err)
	}
	defer forward.Close()
	if err := forward.AddOps(mlpOps()); err != nil {
		t.Fatal(err)
	}
	if err := forward.SetOutputs([]int32{6}); err != nil {
		t.Fatal(err)
	}
	if err := forward.Finalize(); err != nil {
		t.Fatal(err)
	}
	training, err := forward.MakeTraining("adam:lr=0.0003")
	if err != nil {
		t.Fatal(err)
	}
	defer training.Close()
	phases := map[alpa.Phase]int{}
	states := 0
	for i := 0; i < training.OpCount(); i++ {
		op, err := training.Op(i)
		if err != nil {
			t.Fatal(err)
		}
		phases[op.Phase]++
		if op.Role == alpa.RoleOptimizerState {
			states++
		}
	}
	// Two weights: their gradients, Adam's two moments each (and the step count).
	if phases[alpa.PhaseBackward] == 0 || phases[alpa.PhaseUpdate] == 0 || states < 4 {
		t.Fatalf("training graph: phases %v, %d optimizer states", phases, states)
	}
	if forward.OpCount() != len(mlpOps()) {
		t.Fatalf("the forward graph changed: %d ops", forward.OpCount())
	}
	e := mustStatus(t, func() error { _, err := forward.MakeTraining("adagrad"); return err }(), alpa.ErrInvalidArgument)
	if !strings.Contains(e.Message, "adagrad") {
		t.Fatalf("message %q does not name the optimizer", e.Message)
	}
}

func TestReadWithInputLimit(t *testing.T) {
	defer noLeaks(t)()
	small := &alpa.SolveOptions{Set: map[string]string{"max_input_bytes": "16"}}
	if _, err := alpa.ReadProblemFileWithOptions(examplePath(), alpa.FormatIOPDDL, small); err == nil {
		t.Fatal("a problem over the 16-byte input limit was read")
	}
	p, err := alpa.ReadProblemFileWithOptions(examplePath(), alpa.FormatIOPDDL, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	graphPath := filepath.Join(t.TempDir(), "mlp.json")
	g, err := alpa.NewGraph()
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if err := g.AddOps(mlpOps()); err != nil {
		t.Fatal(err)
	}
	if err := g.Finalize(); err != nil {
		t.Fatal(err)
	}
	js, err := g.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(graphPath, js, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := alpa.ReadGraphFileWithOptions(graphPath, small); err == nil {
		t.Fatal("a graph over the 16-byte input limit was read")
	}
	back, err := alpa.ReadGraphFileWithOptions(graphPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	if back.OpCount() != g.OpCount() {
		t.Fatalf("read back %d ops of %d", back.OpCount(), g.OpCount())
	}
}
