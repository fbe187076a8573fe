// Plans a model of the zoo on a cluster and prints the stage table (by default gpt-2.6b on two
// p3.16xlarge hosts, the CLI's default job).
//
//	go run ./examples/plan [-model gpt-2.6b] [-cluster p3.16xlarge:2] [-svg timeline.svg]
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/libalpa/alpa/bindings/go/alpa"
)

func main() {
	model := flag.String("model", "gpt-2.6b", "model-zoo spec or preset")
	clusterSpec := flag.String("cluster", "p3.16xlarge:2", "PRESET:HOSTS, a preset spec or a cluster JSON file")
	svg := flag.String("svg", "", "write the simulated iteration's timeline (SVG) to this file")
	flag.Parse()
	if err := run(*model, *clusterSpec, *svg); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(model, clusterSpec, svg string) error {
	cluster, err := alpa.OpenCluster(clusterSpec)
	if err != nil {
		return err
	}
	defer cluster.Close()
	fmt.Printf("planning %s on %s (%d hosts x %d devices), libalpa %s\n", model, cluster.Name(),
		cluster.Hosts(), cluster.DevicesPerHost(), alpa.Version())
	plan, err := alpa.PlanModel(model, cluster, nil)
	if err != nil {
		return err
	}
	defer plan.Close()
	stages, err := plan.Stages()
	if err != nil {
		return err
	}
	fmt.Printf("\n%d pipeline stages, %d microbatches, %s schedule\n", len(stages), plan.Microbatches(),
		strings.ToUpper(plan.Schedule()))
	fmt.Printf("%-5s %-7s %-8s %-9s %-12s %-8s %-5s %-5s %-12s %s\n", "stage", "layers", "submesh",
		"mesh", "devices", "dp x tp", "zero", "remat", "latency/mb", "memory/device")
	for _, s := range stages {
		mesh := make([]string, len(s.LogicalMesh))
		for i, d := range s.LogicalMesh {
			mesh[i] = fmt.Sprint(d)
		}
		fmt.Printf("%-5d %-7s %-8s %-9s %-12s %-8s %-5s %-5s %-12s %.2f GiB\n", s.Index,
			fmt.Sprintf("%d-%d", s.FirstLayer, s.LastLayer),
			fmt.Sprintf("(%d,%d)", s.SubmeshHosts, s.SubmeshDevicesPerHost),
			"("+strings.Join(mesh, ",")+")",
			fmt.Sprintf("%d-%d", s.Devices[0], s.Devices[len(s.Devices)-1]),
			fmt.Sprintf("%d x %d", s.DataParallel, s.TensorParallel), yes(s.ZeRO), recompute(s.Recompute),
			fmt.Sprintf("%.2f ms", s.LatencySeconds*1e3), float64(s.MemoryBytes)/(1<<30))
	}
	fmt.Printf("\npredicted iteration time  %.2f ms\n", plan.IterationSeconds()*1e3)
	fmt.Printf("throughput                %.1f TFLOP/s per device\n", plan.TFLOPSPerDevice())
	fmt.Printf("peak memory per device    %.2f GiB of %.2f GiB\n", float64(plan.PeakMemoryBytes())/(1<<30),
		float64(cluster.DeviceMemoryBytes())/(1<<30))
	fmt.Printf("compile time              %.2f s\n", plan.CompileSeconds())

	sim, err := plan.Simulate(alpa.SchedulePlanned)
	if err != nil {
		return err
	}
	defer sim.Close()
	fmt.Printf("simulated iteration time  %.2f ms\n", sim.IterationSeconds()*1e3)
	if svg != "" {
		picture, err := sim.TimelineSVG(0)
		if err != nil {
			return err
		}
		if err := os.WriteFile(svg, picture, 0o644); err != nil {
			return err
		}
		fmt.Println("wrote", svg)
	}
	return nil
}

// recompute is the remat column as the alpa CLI prints it: no, full or sel.
func recompute(r alpa.Remat) string {
	switch r {
	case alpa.RematOn:
		return "full"
	case alpa.RematSelective:
		return "sel"
	}
	return "no"
}

func yes(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
