#!/usr/bin/env python3
"""Training steps per second of a small GPT: one device (a one-device plan), 8 devices as threads
of one process, and 8 MPI processes (one device each), all measured in the same run with
`alpa run` (wall time of the whole command, minus the same command with one step, so that
start-up and lowering cancel out).

    bench/executor_table.py [--alpa build/bin/alpa] [--steps 8] [--mpiexec mpiexec]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

MODEL = "gpt:layers=4,hidden=64,heads=4,seq=32,vocab=128,batch=16,dtype=f32"


def run(cmd):
    start = time.monotonic()
    done = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if done.returncode != 0:
        sys.exit("failed: %s\n%s" % (" ".join(cmd), done.stdout[-2000:]))
    return time.monotonic() - start


def steps_per_second(base_cmd, steps):
    one = min(run(base_cmd + ["--steps", "1"]) for _ in range(2))
    many = min(run(base_cmd + ["--steps", str(steps)]) for _ in range(2))
    return (steps - 1) / max(many - one, 1e-9)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alpa", default="build/bin/alpa")
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--mpiexec", default=shutil.which("mpiexec") or "")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp()
    one = os.path.join(tmp, "one.json")
    eight = os.path.join(tmp, "eight.json")
    run([args.alpa, "baseline", "--model", MODEL, "--cluster", "p3.16xlarge:devices_per_host=1",
         "--dp", "1", "--tp", "1", "--pp", "1", "-B", "4", "-q", "-o", one])
    run([args.alpa, "baseline", "--model", MODEL, "--cluster", "p3.16xlarge:hosts=1", "--dp", "2",
         "--tp", "2", "--pp", "2", "-B", "4", "-q", "-o", eight])
    rows = [("1 device", steps_per_second([args.alpa, "run", one], args.steps))]
    rows.append(("8 thread devices",
                 steps_per_second([args.alpa, "run", eight], args.steps)))
    if args.mpiexec:
        flags = ["--oversubscribe"] + (["--allow-run-as-root"] if os.geteuid() == 0 else [])
        rows.append(("8 MPI processes", steps_per_second(
            [args.mpiexec] + flags + ["-np", "8", args.alpa, "run", eight, "--devices", "mpi"],
            args.steps)))
    print("%s, %d cores, dp 2 x tp 2 x pp 2, 4 microbatches" % (MODEL, os.cpu_count()))
    print("%-18s %12s %10s" % ("devices", "steps/s", "vs 1"))
    for name, rate in rows:
        print("%-18s %12.3f %9.2fx" % (name, rate, rate / rows[0][1]))
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
