#!/usr/bin/env python3
"""Mutation test of check.py: each hand-made change to one wrapper (or constant, struct, call)
in a copy of bindings/julia/Alpa.jl/src must make the checker fail with a message naming what
changed; the unchanged copy must pass. Exit 0 when every mutation is caught."""

import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "Alpa.jl", "src")
ROOT = os.path.dirname(os.path.dirname(HERE))

# (what, file, function whose block is edited (None: whole file), old, new, expected substrings)
MUTATIONS = [
    ("Int32 argument made Int64", "LibAlpa.jl", "alpa_status_string", "(Int32,)", "(Int64,)",
     ["alpa_status_string: argument 1 (status, C type int32_t) is Int64"]),
    ("return type Cdouble made Cfloat", "LibAlpa.jl", "alpa_plan_iteration_seconds",
     "libalpa), Cdouble,", "libalpa), Cfloat,", ["alpa_plan_iteration_seconds: returns double"]),
    ("return type size_t made UInt32", "LibAlpa.jl", "alpa_buffer_size",
     "libalpa), Csize_t,", "libalpa), UInt32,", ["alpa_buffer_size: returns size_t"]),
    ("dropped argument (type, value and parameter)", "LibAlpa.jl", "alpa_plan_stage_devices",
     None, None, ["alpa_plan_stage_devices: C takes 4 arguments",
                  "alpa_plan_stage_devices: the wrapper takes 3 arguments"]),
    ("renamed function", "LibAlpa.jl", "alpa_plan_stage_count", "alpa_plan_stage_count",
     "alpa_plan_stages_count", ["alpa_plan_stages_count: ccall of a function that neither",
                                "alpa_plan_stage_count: declared in alpa.h but LibAlpa.jl has no wrapper"]),
    ("handle pointer of the wrong type", "LibAlpa.jl", "alpa_plan_to_json",
     "Ptr{alpa_plan}", "Ptr{alpa_graph}", ["alpa_plan_to_json: argument 2 (plan, C type const alpa_plan*)"]),
    ("handle** passed as handle*", "LibAlpa.jl", "alpa_problem_create",
     "(Ptr{Ptr{alpa_problem}},", "(Ptr{alpa_problem},", ["alpa_problem_create: argument 1 (out"]),
    ("1-tuple without its comma", "LibAlpa.jl", "alpa_status_string", "(Int32,)", "(Int32)",
     ["alpa_status_string: (Int32) is not a tuple"]),
    ("arguments passed out of order", "LibAlpa.jl", "alpa_problem_evaluate",
     "}), out_cost, problem, count", "}), problem, out_cost, count",
     ["alpa_problem_evaluate: the ccall must pass the wrapper's arguments"]),
    ("wrapper deleted", "LibAlpa.jl", "alpa_mesh_beta", "DELETE", None,
     ["alpa_mesh_beta: declared in alpa.h but LibAlpa.jl has no wrapper"]),
    ("constant value changed", "LibAlpa.jl", None, "const ALPA_ERR_TIMEOUT = Cint(4)",
     "const ALPA_ERR_TIMEOUT = Cint(5)", ["ALPA_ERR_TIMEOUT: value 4 in C"]),
    ("struct field widened", "LibAlpa.jl", None, "    zero::Int32  # 1: optimizer",
     "    zero::Int64  # 1: optimizer", ["struct alpa_stage_info: field zero is int32_t in C, Int64"]),
    ("struct fields swapped", "LibAlpa.jl", None,
     "    objective::Cdouble  # best feasible objective so far, +inf if none\n    lower_bound::Cdouble  # best proven lower bound, -inf if none\n",
     "    lower_bound::Cdouble  # best proven lower bound, -inf if none\n    objective::Cdouble  # best feasible objective so far, +inf if none\n",
     ["struct alpa_progress: C fields (struct_size, version, reserved, seconds, objective, lower_bound"]),
    ("argument dropped in a call from Alpa.jl", "Alpa.jl", None,
     "alpa_plan_stage(info, sizeof(alpa_stage_info), p, Int32(i), err)",
     "alpa_plan_stage(info, sizeof(alpa_stage_info), p, err)",
     ["alpa_plan_stage: called with 4 arguments, C takes 5"]),
    ("direct ccall in Alpa.jl with a wrong return type", "Alpa.jl", None, "end # module Alpa",
     "loaded_number() = ccall((:alpa_version_number, libalpa), Int64, ())\n\nend # module Alpa",
     ["alpa_version_number: returns int32_t in C"]),
]


def block(text, fn):
    """[start, end) of `function fn(...) ... end` (with its docstring left alone)."""
    start = text.index("\nfunction %s(" % fn) + 1
    end = text.index("\nend\n", start) + len("\nend\n")
    return start, end


def apply(src_dir, m):
    what, fname, fn, old, new, _ = m
    path = os.path.join(src_dir, fname)
    with open(path) as f:
        text = f.read()
    a, b = block(text, fn) if fn else (0, len(text))
    part = text[a:b]
    if old == "DELETE":
        part = ""
    elif old is None:  # drop the last argument: parameter, type and value
        head, call = part.split("\n", 1)
        params = head[head.index("(") + 1:head.rindex(")")].split(", ")
        head = head.replace(", ".join(params), ", ".join(params[:-1]))
        tstart = call.index("), ") + 3
        tuple_end = call.index("), ", tstart)
        types = call[tstart + 1:tuple_end].split(", ")
        call = call[:tstart + 1] + ", ".join(types[:-1]) + call[tuple_end:]
        call = call.replace(", " + params[-1] + ")\n", ")\n")
        part = head + "\n" + call
    else:
        if part.count(old) != 1 and not what.startswith("renamed"):
            raise SystemExit("mutation %r: %r occurs %d times" % (what, old, part.count(old)))
        part = part.replace(old, new)
    with open(path, "w") as f:
        f.write(text[:a] + part + text[b:])


def run_check(src_dir, include):
    proc = subprocess.run([sys.executable, os.path.join(HERE, "check.py"), "--src", src_dir,
                           "--include", include, "--no-freshness"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    return proc.returncode, proc.stdout.decode()


def main():
    include = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "include")
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        control = os.path.join(tmp, "control")
        shutil.copytree(SRC, control)
        rc, out = run_check(control, include)
        if rc != 0:
            print("FAIL control: the unchanged copy does not pass:\n" + out)
            return 1
        print("ok   control: the unchanged copy passes")
        for i, m in enumerate(MUTATIONS):
            d = os.path.join(tmp, "m%d" % i)
            shutil.copytree(SRC, d)
            apply(d, m)
            rc, out = run_check(d, include)
            missing = [s for s in m[5] if s not in out]
            if rc != 1 or missing:
                failures += 1
                print("FAIL %s: exit %d, missing %r in:\n%s" % (m[0], rc, missing, out))
            else:
                first = [l for l in out.splitlines() if any(s in l for s in m[5])][0]
                print("ok   %s -> %s" % (m[0], first.split(": ", 1)[1]))
        # the freshness check: a hand edit of the generated file is reported
        d = os.path.join(tmp, "fresh")
        shutil.copytree(SRC, d)
        apply(d, MUTATIONS[0])
        proc = subprocess.run([sys.executable, os.path.join(HERE, "generate.py"), "--check",
                               "--include", include, "--output", os.path.join(d, "LibAlpa.jl")],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if proc.returncode != 1 or b"out of date" not in proc.stdout:
            failures += 1
            print("FAIL generate.py --check accepted a hand-edited LibAlpa.jl")
        else:
            print("ok   generate.py --check reports a hand-edited LibAlpa.jl as out of date")
        # the other side: a C signature changed in a copy of the headers is reported too
        inc = os.path.join(tmp, "include")
        shutil.copytree(include, inc)
        hpath = os.path.join(inc, "alpa.h")
        with open(hpath) as f:
            htext = f.read()
        old = "ALPA_API int32_t alpa_plan_stage_count(const alpa_plan* plan);"
        if htext.count(old) != 1:
            raise SystemExit("header mutation: %r not found" % old)
        with open(hpath, "w") as f:
            f.write(htext.replace(old, old.replace("int32_t", "int64_t")))
        rc, out = run_check(SRC, inc)
        want = "alpa_plan_stage_count: returns int64_t in C"
        if rc != 1 or want not in out:
            failures += 1
            print("FAIL a changed C signature was not reported:\n" + out)
        else:
            print("ok   C return type changed in a copy of alpa.h -> " + want)
    total = len(MUTATIONS) + 2
    print("%d of %d mutations caught" % (total - failures, total))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
