#!/usr/bin/env python3
"""Measures how well `alpa solve` keeps its time limit and how fast a cancel takes effect, on the
IOPDDL benchmarks, and prints two tables.

    python3 bench/solve_deadlines.py [--alpa build/bin/alpa] [--lib build/lib/libalpa.so]
                                     [--data ../shared/data/iopddl] [--only A,G]
                                     [--limits 0.1,1,5,20] [--cancel-at 0.05,0.3,1,3]
                                     [--repeats 3] [--skip-cli] [--skip-cancel]

Time limits: the wall time of `alpa solve FILE T` (reading included, as the limit promises) for
each T, against the target T * 1.05 + 0.5 s, with the status the run ended in.

Cancel latency: through the C ABI (ctypes on libalpa; ctypes releases the GIL during the call),
the problem is read once, then each solve starts on a thread and the cancel token is triggered
at each of the --cancel-at moments (--repeats times each); the latency is the time from the
trigger until alpa_problem_solve returns, against the target of 100 ms. A table of every cancel
is followed by the minimum, median and maximum latency per problem.
"""
import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import threading
import time

PROBLEMS = {
    "A": "asplos-2025-iopddl-A.json.gz",
    "G": "asplos-2025-iopddl-G.json.gz",
    "M": "asplos-2025-iopddl-M.json.gz",
    "S": "asplos-2025-iopddl-S.json.gz",
}

ALPA_OK = 0
ALPA_ERR_CANCELLED = 5
ALPA_FORMAT_AUTO = 0
ALPA_OPT_TIME_LIMIT_SECONDS = 100
CANCEL_TARGET_SECONDS = 0.1
SOLVE_STATUS = {1: "optimal", 2: "feasible", 3: "infeasible", 4: "invalid_input",
                5: "cancelled", 6: "no_solution"}


def cli_row(alpa, path, limit):
    """Wall seconds and status of one `alpa solve PATH LIMIT --json -q`."""
    start = time.monotonic()
    proc = subprocess.run([alpa, "solve", path, str(limit), "--json", "-q"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          check=False)
    wall = time.monotonic() - start
    status = "rc=%d" % proc.returncode
    lines = proc.stdout.strip().splitlines()
    if lines:
        try:
            status = json.loads(lines[-1]).get("status", status)
        except json.JSONDecodeError:
            pass
    return wall, status


class Library:
    """The few C ABI entry points the cancel measurement needs."""

    def __init__(self, path):
        lib = ctypes.CDLL(path)
        p = ctypes.c_void_p
        pp = ctypes.POINTER(ctypes.c_void_p)
        lib.alpa_problem_read_file.argtypes = [pp, ctypes.c_char_p, ctypes.c_int32, pp]
        lib.alpa_problem_read_file.restype = ctypes.c_int32
        lib.alpa_problem_destroy.argtypes = [p]
        lib.alpa_solve_options_create.argtypes = [pp, pp]
        lib.alpa_solve_options_create.restype = ctypes.c_int32
        lib.alpa_solve_options_set_double.argtypes = [p, ctypes.c_int32, ctypes.c_double, pp]
        lib.alpa_solve_options_set_double.restype = ctypes.c_int32
        lib.alpa_solve_options_set_cancel_token.argtypes = [p, p, pp]
        lib.alpa_solve_options_set_cancel_token.restype = ctypes.c_int32
        lib.alpa_solve_options_destroy.argtypes = [p]
        lib.alpa_cancel_token_create.argtypes = [pp, pp]
        lib.alpa_cancel_token_create.restype = ctypes.c_int32
        lib.alpa_cancel_token_trigger.argtypes = [p]
        lib.alpa_cancel_token_destroy.argtypes = [p]
        lib.alpa_problem_solve.argtypes = [pp, p, p, pp]
        lib.alpa_problem_solve.restype = ctypes.c_int32
        lib.alpa_solution_status.argtypes = [p]
        lib.alpa_solution_status.restype = ctypes.c_int32
        lib.alpa_solution_destroy.argtypes = [p]
        lib.alpa_error_free.argtypes = [p]
        self.lib = lib

    def read(self, path):
        problem = ctypes.c_void_p()
        err = ctypes.c_void_p()
        rc = self.lib.alpa_problem_read_file(ctypes.byref(problem), path.encode(),
                                             ALPA_FORMAT_AUTO, ctypes.byref(err))
        if rc != ALPA_OK:
            self.lib.alpa_error_free(err)
            raise RuntimeError("cannot read %s (status %d)" % (path, rc))
        return problem

    def cancel_latency(self, problem, trigger_after, time_limit):
        """(seconds from the trigger until the solve returned, status name); the trigger may come
        after the solve has ended on its own (then the latency is negative)."""
        lib = self.lib
        options = ctypes.c_void_p()
        token = ctypes.c_void_p()
        lib.alpa_solve_options_create(ctypes.byref(options), None)
        lib.alpa_cancel_token_create(ctypes.byref(token), None)
        lib.alpa_solve_options_set_cancel_token(options, token, None)
        lib.alpa_solve_options_set_double(options, ALPA_OPT_TIME_LIMIT_SECONDS, time_limit, None)
        solution = ctypes.c_void_p()
        err = ctypes.c_void_p()
        outcome = {}

        def solve():
            outcome["rc"] = lib.alpa_problem_solve(ctypes.byref(solution), problem, options,
                                                   ctypes.byref(err))
            outcome["end"] = time.monotonic()

        worker = threading.Thread(target=solve)
        worker.start()
        time.sleep(trigger_after)
        triggered = time.monotonic()
        lib.alpa_cancel_token_trigger(token)
        worker.join()
        if outcome["rc"] == ALPA_OK:
            status = SOLVE_STATUS.get(lib.alpa_solution_status(solution), "?")
            lib.alpa_solution_destroy(solution)
        elif outcome["rc"] == ALPA_ERR_CANCELLED:
            status = "cancelled"  # before any answer was found
            lib.alpa_error_free(err)
        else:
            status = "error %d" % outcome["rc"]
            lib.alpa_error_free(err)
        lib.alpa_cancel_token_destroy(token)
        lib.alpa_solve_options_destroy(options)
        return outcome["end"] - triggered, status


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--alpa", default=os.path.join(root, "build", "bin", "alpa"))
    parser.add_argument("--lib", default=os.path.join(root, "build", "lib", "libalpa.so"))
    parser.add_argument("--data", default=os.path.join(root, "..", "shared", "data", "iopddl"))
    parser.add_argument("--only", default="")
    parser.add_argument("--limits", default="0.1,1,5,20")
    parser.add_argument("--cancel-at", default="0.05,0.3,1,3",
                        help="seconds after the start of the solve at which to cancel")
    parser.add_argument("--repeats", type=int, default=3, help="cancels per moment")
    parser.add_argument("--skip-cli", action="store_true")
    parser.add_argument("--skip-cancel", action="store_true")
    args = parser.parse_args()
    names = [n for n in PROBLEMS if not args.only or n in args.only.split(",")]
    limits = [float(x) for x in args.limits.split(",") if x]

    if not args.skip_cli:
        print("alpa solve FILE T: wall seconds (target T * 1.05 + 0.5 s)")
        print("%-4s %7s %9s %8s %4s  %s" % ("", "T", "wall", "target", "ok", "status"))
        for name in names:
            path = os.path.join(args.data, PROBLEMS[name])
            for limit in limits:
                wall, status = cli_row(args.alpa, path, limit)
                target = limit * 1.05 + 0.5
                print("%-4s %7.1f %9.3f %8.3f %4s  %s" %
                      (name, limit, wall, target, "yes" if wall <= target else "NO", status))
                sys.stdout.flush()

    if not args.skip_cancel:
        lib = Library(args.lib)
        moments = [float(x) for x in args.cancel_at.split(",") if x]
        print("\ncancel latency through the C ABI (target %.0f ms)" % (1000 * CANCEL_TARGET_SECONDS))
        print("%-4s %10s %12s %4s  %s" % ("", "cancel at", "latency ms", "ok", "status"))
        latencies = {}
        for name in names:
            problem = lib.read(os.path.join(args.data, PROBLEMS[name]))
            latencies[name] = []
            for at in moments:
                for _ in range(args.repeats):
                    latency, status = lib.cancel_latency(problem, at, 60.0)
                    if latency < 0:
                        print("%-4s %9.3fs %12s %4s  %s (ended before the cancel)" %
                              (name, at, "-", "-", status))
                    else:
                        latencies[name].append(latency)
                        ok = latency <= CANCEL_TARGET_SECONDS and status == "cancelled"
                        print("%-4s %9.3fs %12.1f %4s  %s" %
                              (name, at, 1000 * latency, "yes" if ok else "NO", status))
                    sys.stdout.flush()
            lib.lib.alpa_problem_destroy(problem)
        print("\ncancel latency per problem, ms (target %.0f ms)" % (1000 * CANCEL_TARGET_SECONDS))
        print("%-4s %7s %8s %8s %8s %4s" % ("", "cancels", "min", "median", "max", "ok"))
        for name in names:
            values = latencies[name]
            if not values:
                print("%-4s %7d %8s %8s %8s %4s" % (name, 0, "-", "-", "-", "-"))
                continue
            ok = max(values) <= CANCEL_TARGET_SECONDS
            print("%-4s %7d %8.1f %8.1f %8.1f %4s" %
                  (name, len(values), 1000 * min(values), 1000 * statistics.median(values),
                   1000 * max(values), "yes" if ok else "NO"))

if __name__ == "__main__":
    main()
