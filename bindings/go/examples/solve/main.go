// Solves a sharding problem (by default the IOPDDL example, optimum 445) and prints the
// assignment and its cost.
//
//	go run ./examples/solve [-time-limit 10] [problem.json]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/libalpa/alpa/bindings/go/alpa"
)

func main() {
	timeLimit := flag.Float64("time-limit", 0, "seconds (0: none)")
	flag.Parse()
	path := filepath.Join("..", "..", "tests", "golden", "iopddl_example.json")
	if flag.NArg() > 0 {
		path = flag.Arg(0)
	}
	if err := run(path, *timeLimit); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

func run(path string, timeLimit float64) error {
	problem, err := alpa.ReadProblemFile(path, alpa.FormatAuto)
	if err != nil {
		return err
	}
	defer problem.Close()
	solution, err := problem.Solve(&alpa.SolveOptions{TimeLimitSeconds: timeLimit, Deterministic: true})
	if err != nil {
		return err // ErrInfeasible, ErrTimeout, ... with the library's message
	}
	defer solution.Close()
	assignment := solution.Assignment()
	cost, err := problem.Evaluate(assignment)
	if err != nil {
		return err
	}
	fmt.Printf("%s: %d nodes, %d edges\n", path, problem.NodeCount(), problem.EdgeCount())
	fmt.Printf("status      %v\n", solution.Status())
	fmt.Printf("objective   %g (evaluated %g)\n", solution.Objective(), cost)
	fmt.Printf("assignment  %v\n", assignment)
	fmt.Printf("time        %.4f s\n", solution.Seconds())
	return nil
}
