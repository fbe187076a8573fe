#!/usr/bin/env python3
"""Plans GPT-2.6B on two p3.16xlarge hosts (16 V100s) and prints the stage table.

    python examples/plan_gpt.py [MODEL] [CLUSTER]
"""
import sys

import alpa


def main() -> None:
    model = sys.argv[1] if len(sys.argv) > 1 else "gpt-2.6b"
    cluster = sys.argv[2] if len(sys.argv) > 2 else "p3.16xlarge:2"
    with alpa.plan(model=model, cluster=cluster, progress=sys.stderr.isatty()) as plan:
        print(plan.summary())
        print()
        for stage in plan.stages:
            print(f"stage {stage.index}: layers {stage.first_layer}-{stage.last_layer} on devices "
                  f"{list(stage.devices)} as a {'x'.join(map(str, stage.logical_mesh))} mesh")
        with plan.simulate() as sim:
            print(f"simulated iteration: {sim.iteration_seconds * 1e3:.2f} ms "
                  f"(predicted {plan.iteration_seconds * 1e3:.2f} ms)")


if __name__ == "__main__":
    main()
