#!/usr/bin/env python3
"""One GPT layer's training step on one GPU against the planner's prediction (issue 16, item 4).

    python3 bench/gpu/gpt_layer_bench.py [--alpa build-cuda/bin/alpa] [--out DIR]
        [--backend cuda|cpu] [--calibration FILE] [--hidden 4096] [--seq 2048] [--batch auto]

Phases, each through the `alpa` program only:
  1. calibrate  `alpa calibrate --out DIR/h100.calibration.json --json` (skipped with
                --calibration FILE, which is used instead);
  2. plan       the model `gpt:layers=1,embed=0,...,dtype=bf16` (one pre-LN block: attention and
                GeLU MLP, MSE loss on its output, Adam with f32 master weights) on one GPU of the
                preset the calibration names, one microbatch, no rematerialisation; --batch auto
                takes the largest power of two whose planned peak memory stays within
                --memory-fraction of the device; then planned again on a cluster file carrying the
                measured calibration (the runner's own fusion when `alpa calibrate` timed its
                kernels), and once more with every op its own kernel, with chains fused
                as XLA would, and with the attention cores fused (`fuse_attention`);
  3. run        `alpa run PLAN --backend cuda --steps N --json`: the median step time after the
                warm-up steps; then the same with ALPA_CUDA_FUSION=0 (every op its own kernel)
                as the baseline of the same run (--no-unfused-baseline skips it), and with
                ALPA_CUDA_FLASH_ATTENTION=1 (the fused attention kernels) on the plan made with
                `fuse_attention` (--no-flash skips it);
  4. report     model FLOPs = 6 P T + 12 s h T per step (P the layer's parameters, T = batch x seq
                tokens, s the sequence length, h the hidden size: the matmuls of forward and
                backward, 2 FLOPs per multiply-add, the attention's QK^T and AV over the full s x s
                scores, Adam not counted: PaLM's MFU convention), achieved TFLOP/s and MFU against
                the device's bf16 peak, and predicted / measured step time; as a table on stdout
                and as DIR/gpt_layer_bench.json.

Exit status: 0 the table was printed (whatever the figures), 1 a phase failed (its message on
stderr). --backend cpu runs the same phases on the CPU runtime (a tiny model, for testing
without a GPU); with an `alpa run` that has no --backend option, cpu runs without it.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import shutil
import statistics
import subprocess
import sys
import time

MFU_THRESHOLD = 0.50  # the acceptance: at least 50 % of bf16 peak (goal 60 %)
MFU_GOAL = 0.60
PREDICTION_TOLERANCE = 0.15  # predicted within 15 % of measured


class PhaseError(Exception):
    """A phase failed; the message says which and why."""


def run_alpa(alpa: str, args: list[str], phase: str, timeout: float = 600,
             env: dict | None = None) -> str:
    """Runs alpa with args (and `env` added to the environment) and returns its stdout;
    PhaseError with its stderr on failure."""
    environment = dict(os.environ, **(env or {}))
    try:
        done = subprocess.run([alpa, *args], capture_output=True, text=True, timeout=timeout,
                              env=environment)
    except subprocess.TimeoutExpired as e:
        raise PhaseError(f"{phase}: `alpa {' '.join(args)}` ran past {timeout:.0f} s") from e
    if done.returncode != 0:
        raise PhaseError(f"{phase}: `alpa {' '.join(args)}` exited {done.returncode}:\n"
                         f"{done.stderr.strip() or done.stdout.strip()[-2000:]}")
    return done.stdout


def check_binary(alpa: str) -> None:
    """The program exists and its shared libraries resolve (CUDA's on the GPU machine)."""
    if shutil.which(alpa) is None and not os.access(alpa, os.X_OK):
        raise PhaseError(f"setup: {alpa} is not an executable (build it: cmake --build build-cuda)")
    if shutil.which("ldd") is None:
        return
    libs = subprocess.run(["ldd", shutil.which(alpa) or alpa], capture_output=True, text=True)
    missing = [line.strip() for line in libs.stdout.splitlines() if "not found" in line]
    if missing:
        raise PhaseError("setup: libraries of " + alpa + " not found:\n  " + "\n  ".join(missing))


# ---- 1. calibrate ------------------------------------------------------------------------------

def calibrate(opts, out: pathlib.Path) -> dict:
    """The calibration to plan with: measured now, or read from --calibration."""
    if opts.calibration:
        path = pathlib.Path(opts.calibration)
        try:
            calibration = json.loads(path.read_text())
        except (OSError, ValueError) as e:
            raise PhaseError(f"calibrate: cannot read {path}: {e}") from e
        return {"path": str(path), "calibration": calibration, "preset": opts.preset,
                "device": f"(calibration read from {path})", "measured": False,
                "measurements": [], "seconds": 0.0}
    path = out / "h100.calibration.json"
    args = ["calibrate", "--out", str(path), "--json"]
    if opts.quick_calibration:
        args.append("--quick")
    if opts.preset:
        args += ["--preset", opts.preset]
    start = time.monotonic()
    # With the fused attention kernels on, `alpa calibrate` times them too (efficiency.attention,
    # and fuse_attention set): the flash prediction prices the attention at their rate.
    env = None if opts.no_flash else RUN_MODES["flash"]
    answer = json.loads(run_alpa(opts.alpa, args, "calibrate", env=env))
    (out / "calibrate.json").write_text(json.dumps(answer, indent=2) + "\n")
    return {"path": str(path), "calibration": answer["calibration"], "preset": answer["preset"],
            "device": answer["device"], "measured": True,
            "measurements": answer["measurements"], "notes": answer.get("notes", []),
            "seconds": time.monotonic() - start}


# ---- 2. plan -----------------------------------------------------------------------------------

def model_spec(opts, batch: int) -> str:
    return (f"gpt:layers=1,embed=0,hidden={opts.hidden},heads={opts.heads},seq={opts.seq},"
            f"batch={batch},dtype=bf16")


def plan(opts, spec: str, cluster: str, path: pathlib.Path) -> dict:
    """Plans spec on cluster (one microbatch, no remat), writes the plan to path, returns it."""
    run_alpa(opts.alpa, ["plan", "--model", spec, "--cluster", cluster, "-B", "1", "--remat",
                         "off", "-o", str(path), "-q", "--deterministic"], "plan")
    return json.loads(path.read_text())


def one_gpu_cluster(preset: str) -> str:
    return f"{preset}:devices_per_host=1"


def choose_batch(opts, preset: str, out: pathlib.Path) -> int:
    """--batch, or the largest power of two whose planned peak fits the memory fraction."""
    if opts.batch != "auto":
        return int(opts.batch)
    best = 0
    batch = 1
    while batch <= opts.max_batch:
        p = plan(opts, model_spec(opts, batch), one_gpu_cluster(preset), out / "batch_probe.json")
        if p["peak_memory_bytes"] > opts.memory_fraction * p["cluster"]["device"]["memory_bytes"]:
            break
        best = batch
        batch *= 2
    if best == 0:
        raise PhaseError("plan: even batch 1 needs more than "
                         f"{opts.memory_fraction:.0%} of the device memory")
    return best


# The predictions beside the calibration as measured ("calibrated": with `alpa calibrate`'s
# calibration, the runner's own fusion, attention op by op): every op its own kernel (what
# ALPA_CUDA_FUSION=0 runs), and chains fused as XLA would fuse them.
PREDICTION_VARIANTS = {
    "calibrated": {"fuse_attention": False},
    "calibrated_unfused": {"fuse_elementwise": False, "fuse_attention": False},
    "calibrated_xla": {"fuse_elementwise": True, "single_reader_fusion": False,
                       "fuse_attention": False},
    # The runner with ALPA_CUDA_FLASH_ATTENTION=1: the attention cores on the fused kernels
    # (at their measured efficiency where `alpa calibrate` timed them: efficiency.attention).
    "calibrated_flash": {"fuse_attention": True},
}

# The runner's modes: the environment each run adds.
RUN_MODES = {
    "fused": None,
    "unfused": {"ALPA_CUDA_FUSION": "0"},
    "flash": {"ALPA_CUDA_FLASH_ATTENTION": "1"},
}


def calibrated_cluster(plan_json: dict, calibration: dict, overrides: dict,
                       path: pathlib.Path) -> str:
    """A cluster file: the plan's cluster with the calibration's fields in place of its own,
    then `overrides`."""
    cluster = dict(plan_json["cluster"])
    cluster.pop("device_memory_bytes", None)  # the plan's copy of the device memory; not a key
    fields = {k: v for k, v in calibration.items() if k not in ("format", "version", "comment")}
    merged = dict(cluster.get("calibration", {}))
    merged.update(fields)
    merged.update(overrides)
    cluster["calibration"] = merged
    path.write_text(json.dumps(cluster, indent=2) + "\n")
    return str(path)


# ---- 3. run ------------------------------------------------------------------------------------

def run_supports_backend(alpa: str) -> bool:
    return "--backend" in run_alpa(alpa, ["run", "--help"], "run")


def run_steps(opts, plan_path: pathlib.Path, mode: str = "fused") -> list[float]:
    """Per-step seconds of `alpa run --json` in one of RUN_MODES ("unfused":
    ALPA_CUDA_FUSION=0, every op its own kernel; "flash": the fused attention kernels)."""
    args = ["run", str(plan_path), "--steps", str(opts.steps), "--json"]
    if run_supports_backend(opts.alpa):
        args += ["--backend", opts.backend]
    elif opts.backend != "cpu":
        raise PhaseError("run: this alpa has no `alpa run --backend` (the CUDA runner is not in "
                         "this build)")
    stdout = run_alpa(opts.alpa, args, "run" if mode == "fused" else f"run ({mode})",
                      env=RUN_MODES[mode])
    seconds = []
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            seconds.append(float(json.loads(line)["seconds"]))
    if len(seconds) != opts.steps:
        raise PhaseError(f"run: expected {opts.steps} step lines, got {len(seconds)}")
    return seconds


# ---- 4. report ---------------------------------------------------------------------------------

def layer_parameters(h: int) -> int:
    """One pre-LN GPT block: qkv 3h^2 + 3h, attention out h^2 + h, MLP 8h^2 + 5h, 2 LN 4h."""
    return 12 * h * h + 13 * h


def model_flops(h: int, s: int, batch: int, layers: int = 1) -> dict:
    """6 P T + 12 L s h T: forward and backward matmuls, attention over the full s x s scores."""
    tokens = batch * s
    params = layers * layer_parameters(h)
    dense = 6 * params * tokens
    attention = 12 * layers * s * h * tokens
    # The matmuls alone (weights without biases and norms): what the graph's dot_flops counts.
    matmul_only = 6 * layers * 12 * h * h * tokens + attention
    return {"parameters": params, "tokens": tokens, "dense": dense, "attention": attention,
            "total": dense + attention, "matmul_only": matmul_only}


def graph_stats(opts, spec: str) -> dict:
    return json.loads(run_alpa(opts.alpa, ["graph", "--model", spec, "--json"], "graph"))


def median_step(opts, steps: list[float]) -> float:
    return statistics.median(steps[opts.warmup_steps:] or steps)


def summarise(opts, cal: dict, spec: str, batch: int, plans: dict, steps: list[float],
              unfused: list[float], flash: list[float], stats: dict) -> dict:
    flops = model_flops(opts.hidden, opts.seq, batch)
    measured = median_step(opts, steps)
    unfused_measured = median_step(opts, unfused) if unfused else None
    flash_measured = median_step(opts, flash) if flash else None
    peak = plans["calibrated"]["cluster"]["device"]["peak_flops"]["bf16"]
    achieved = flops["total"] / measured
    predicted = {name: p["iteration_seconds"] for name, p in plans.items()}
    # Each prediction against the run it describes: unfused against ALPA_CUDA_FUSION=0's, flash
    # against ALPA_CUDA_FLASH_ATTENTION=1's.
    described = {"calibrated_unfused": unfused_measured, "calibrated_flash": flash_measured}
    against = {name: described.get(name) or measured for name in predicted}
    return {
        "device": cal["device"], "preset": cal["preset"], "backend": opts.backend,
        "calibration_file": cal["path"], "calibration": cal["calibration"],
        "calibration_measured": cal["measured"], "calibrate_seconds": cal["seconds"],
        "model": spec, "batch": batch, "parameters": flops["parameters"],
        "graph_parameters": stats["parameters"], "tokens": flops["tokens"],
        "model_flops": flops["total"], "model_flops_formula": "6*P*T + 12*s*h*T",
        "matmul_flops_formula": flops["matmul_only"], "graph_dot_flops": stats["dot_flops"],
        "graph_flops": stats["flops"], "step_seconds": steps, "warmup_steps": opts.warmup_steps,
        "measured_step_seconds": measured, "achieved_flops_per_second": achieved,
        "peak_bf16_flops_per_second": peak, "mfu": achieved / peak,
        "planned_peak_memory_bytes": plans["calibrated"]["peak_memory_bytes"],
        "predicted_step_seconds": predicted,
        "predicted_over_measured": {name: s / against[name] for name, s in predicted.items()},
        "unfused_step_seconds": unfused, "unfused_measured_step_seconds": unfused_measured,
        "fusion_speedup": unfused_measured / measured if unfused_measured else None,
        "flash_step_seconds": flash, "flash_measured_step_seconds": flash_measured,
        "flash_mfu": flops["total"] / flash_measured / peak if flash_measured else None,
    }


def scaled(x: float, unit: str) -> str:
    """x with an SI prefix: scaled(2.1e13, "FLOP") = "21.000 TFLOP"."""
    for factor, prefix in ((1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "K")):
        if abs(x) >= factor:
            return f"{x / factor:.3f} {prefix}{unit}"
    return f"{x:.3f} {unit}"


def verdict(ok: bool) -> str:
    return "pass" if ok else "FAIL"


def print_table(r: dict) -> None:
    def row(label: str, value: str) -> None:
        print(f"| {label:<52} | {value:<66} |")

    c = r["calibration"]
    e = c.get("efficiency", {})
    print(f"\nGPT-layer benchmark: {r['device']} (preset {r['preset']}, backend {r['backend']})\n")
    print(f"| {'quantity':<52} | {'value':<66} |")
    print(f"|{'-' * 54}|{'-' * 68}|")
    source = "measured now" if r["calibration_measured"] else "read"
    row(f"calibration ({source}, {r['calibrate_seconds']:.1f} s)", r["calibration_file"])
    row("  efficiency matmul / memory / elementwise",
        f"{e.get('matmul', float('nan')):.3f} / {e.get('memory', float('nan')):.3f} / "
        f"{e.get('elementwise', float('nan')):.3f}")
    row("  op_overhead_seconds", f"{c.get('op_overhead_seconds', float('nan')) * 1e6:.2f} us")
    row("model", r["model"])
    row("parameters (12h^2 + 13h; graph)", f"{r['parameters']:,} ; {r['graph_parameters']:,}")
    row("tokens per step (batch x seq)", f"{r['tokens']:,}")
    row("model FLOPs per step (6 P T + 12 s h T)", scaled(r["model_flops"], "FLOP"))
    row("graph FLOPs per step (every op ; dot_generals)",
        scaled(r["graph_flops"], "FLOP") + " ; " + scaled(r["graph_dot_flops"], "FLOP"))
    row("planned peak memory", f"{r['planned_peak_memory_bytes'] / 2**30:.3f} GiB")
    steps = ", ".join(f"{s * 1e3:.2f}" for s in r["step_seconds"])
    row(f"step times (ms; first {r['warmup_steps']} warm-up)", steps[:66])
    row("measured step (median after warm-up)", f"{r['measured_step_seconds'] * 1e3:.3f} ms")
    if r["unfused_measured_step_seconds"]:
        row("same run, every op its own kernel (ALPA_CUDA_FUSION=0)",
            f"{r['unfused_measured_step_seconds'] * 1e3:.3f} ms; fusion "
            f"{r['fusion_speedup']:.2f}x faster")
    if r["flash_measured_step_seconds"]:
        row("same run, fused attention (ALPA_CUDA_FLASH_ATTENTION=1)",
            f"{r['flash_measured_step_seconds'] * 1e3:.3f} ms; MFU {r['flash_mfu']:.2%} "
            f"(>= {MFU_THRESHOLD:.0%}: {verdict(r['flash_mfu'] >= MFU_THRESHOLD)})")
    row("achieved (model FLOPs / step)", scaled(r["achieved_flops_per_second"], "FLOP/s"))
    mfu = r["mfu"]
    row(f"MFU vs {r['peak_bf16_flops_per_second'] / 1e12:.0f} TFLOP/s bf16 dense",
        f"{mfu:.2%}  (>= {MFU_THRESHOLD:.0%}: {verdict(mfu >= MFU_THRESHOLD)}; "
        f"goal {MFU_GOAL:.0%}: {verdict(mfu >= MFU_GOAL)})")
    labels = {"default": "predicted step, preset's default calibration",
              "calibrated": "predicted step, measured calibration",
              "calibrated_unfused": "predicted unfused step (vs ALPA_CUDA_FUSION=0's)",
              "calibrated_xla": "predicted step, measured, chains fused as XLA would",
              "calibrated_flash": "predicted step, fused attention (vs the flash run)"}
    for name, seconds in r["predicted_step_seconds"].items():
        ratio = r["predicted_over_measured"][name]
        check = ""
        if name == "calibrated" or (name == "calibrated_flash" and
                                    r["flash_measured_step_seconds"]):
            check = f"; within {PREDICTION_TOLERANCE:.0%}: " + verdict(
                abs(ratio - 1) <= PREDICTION_TOLERANCE)
        row(labels[name], f"{seconds * 1e3:.3f} ms, {ratio:.3f}x measured{check}")
    print()


# ---- driver ------------------------------------------------------------------------------------

def parse_args(argv: list[str]):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--alpa", default="build-cuda/bin/alpa")
    ap.add_argument("--out", default=os.environ.get("OUT", "bench-gpu-out"))
    ap.add_argument("--backend", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--calibration", help="use this calibration file instead of measuring")
    ap.add_argument("--preset", default="", help="cluster preset (default: the calibration's)")
    ap.add_argument("--quick-calibration", action="store_true")
    ap.add_argument("--hidden", type=int, default=4096)
    ap.add_argument("--heads", type=int, default=0, help="default hidden / 128")
    ap.add_argument("--seq", type=int, default=2048)
    ap.add_argument("--batch", default="auto", help="sequences per step, or auto")
    ap.add_argument("--max-batch", type=int, default=64)
    ap.add_argument("--memory-fraction", type=float, default=0.5,
                    help="with --batch auto: the planned peak stays within this share of the "
                         "device memory (room for the runner's own buffers)")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--warmup-steps", type=int, default=1)
    ap.add_argument("--no-unfused-baseline", action="store_true",
                    help="skip the baseline run with every op its own kernel")
    ap.add_argument("--no-flash", action="store_true",
                    help="skip the run with the fused attention kernels")
    opts = ap.parse_args(argv)
    if opts.heads == 0:
        opts.heads = max(1, opts.hidden // 128)
    if opts.calibration and not opts.preset:
        ap.error("--calibration needs --preset (the preset whose peaks it is relative to)")
    if opts.steps <= opts.warmup_steps:
        ap.error("--steps must exceed --warmup-steps")
    return opts


def main(argv: list[str]) -> int:
    opts = parse_args(argv)
    out = pathlib.Path(opts.out)
    out.mkdir(parents=True, exist_ok=True)
    try:
        check_binary(opts.alpa)
        cal = calibrate(opts, out)
        preset = cal["preset"]
        batch = choose_batch(opts, preset, out)
        spec = model_spec(opts, batch)
        plans = {"default": plan(opts, spec, one_gpu_cluster(preset), out / "plan_default.json")}
        for name, overrides in PREDICTION_VARIANTS.items():
            cluster = calibrated_cluster(plans["default"], cal["calibration"], overrides,
                                         out / f"cluster_{name}.json")
            plans[name] = plan(opts, spec, cluster, out / f"plan_{name}.json")
        steps = run_steps(opts, out / "plan_calibrated.json")
        unfused = []
        if opts.backend == "cuda" and not opts.no_unfused_baseline:
            unfused = run_steps(opts, out / "plan_calibrated.json", mode="unfused")
        flash = []
        if opts.backend == "cuda" and not opts.no_flash:
            flash = run_steps(opts, out / "plan_calibrated_flash.json", mode="flash")
        stats = graph_stats(opts, spec)
    except PhaseError as e:
        print(f"gpt_layer_bench: {e}", file=sys.stderr)
        return 1
    result = summarise(opts, cal, spec, batch, plans, steps, unfused, flash, stats)
    (out / "gpt_layer_bench.json").write_text(json.dumps(result, indent=2) + "\n")
    print_table(result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
