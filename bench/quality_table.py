#!/usr/bin/env python3
"""Plan quality on every GPT, MoE and Wide-ResNet row of REFERENCE section 6: our planner against
the best Megatron-LM-style baseline, both judged by the pipeline simulator.

    python3 bench/quality_table.py [build/bin/alpa] [--rows gpt,moe,wresnet]
        [--markdown quality.md] [--svg quality.svg] [--timeout 900] [--calibration FILE]

Per row (G GPUs: one p3.16xlarge host of G devices when G <= 8, else G/8 hosts of 8):
  1. `alpa plan -o plan.json` (compile time from its JSON), then `alpa simulate plan.json`;
  2. `alpa baseline -o base.json` (the Megatron-LM grid search), then `alpa simulate base.json`;
and one table line: both simulated iteration times, the speedup (baseline / planner), TFLOP/s per
GPU of both (the plan's FLOPs per iteration over the simulated time), the planner's compile time,
the baseline's search time, and the planner's own prediction error against the simulator
((predicted - simulated) / simulated). The Markdown goes to stdout and, with --markdown, to a
file; --svg draws TFLOP/s per GPU against the GPU count, one panel per family and one line per
system (like Figure 7 of the Alpa paper). Everything is the cost model's prediction for V100
presets: no GPU runs here.
"""
import argparse
import json
import math
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from plan_table import FAMILIES, cluster_spec, preset_rows, run_json, stages_text  # noqa: E402

SYSTEMS = (("planner", "libalpa planner", "#1f77b4"),
           ("baseline", "Megatron-LM-style baseline", "#d62728"))


def run_system(alpa, command, model, cluster, workdir, timeout, calibration=""):
    """Plans (or searches the baseline) and simulates. A dict or an error string."""
    path = os.path.join(workdir, f"{command}.json")
    extra = ["--calibration", calibration] if calibration else []
    summary, error, wall = run_json([alpa, command, "--model", model, "--cluster", cluster,
                                     "-o", path, "--json", "-q"] + extra, timeout)
    if summary is None:
        return error
    sim, error, _ = run_json([alpa, "simulate", path, "--json"], timeout)
    if sim is None:
        return "simulate: " + error
    with open(path) as f:
        plan = json.load(f)
    baseline = plan.get("baseline", {})
    return {
        "simulated": sim["iteration_seconds"],
        "predicted": plan["iteration_seconds"],
        "flops": plan["flops_per_iteration"],
        "compile": plan["compile_seconds"],
        "wall": wall,
        "microbatches": plan["microbatches"],
        "stages": stages_text(plan["stages"]),
        "config": baseline.get("config", ""),
    }


def fmt(value, spec):
    return "" if value is None else format(value, spec)


def markdown_table(rows):
    lines = [
        "| family | model | GPUs | planner (s, simulated) | baseline (s, simulated) | speedup | "
        "planner TFLOP/s per GPU | baseline TFLOP/s per GPU | planner compile (s) | "
        "baseline search (s) | prediction error | planner plan | baseline plan |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|",
    ]
    for r in rows:
        p, b = r["planner"], r["baseline"]
        cells = [r["family"], r["model"], str(r["gpus"])]
        cells += [fmt(p["simulated"], ".2f") if isinstance(p, dict) else "",
                  fmt(b["simulated"], ".2f") if isinstance(b, dict) else ""]
        cells.append(fmt(r.get("speedup"), ".3f"))
        cells += [fmt(r["tflops"].get("planner"), ".2f"), fmt(r["tflops"].get("baseline"), ".2f")]
        cells += [fmt(p["compile"], ".2f") if isinstance(p, dict) else "",
                  fmt(b["compile"], ".2f") if isinstance(b, dict) else ""]
        cells.append(f"{r['error'] * 100:+.1f} %" if r.get("error") is not None else "")
        cells.append(f"B={p['microbatches']}: {p['stages']}" if isinstance(p, dict)
                     else p.replace("|", "\\|"))
        cells.append(f"{b['config']}" if isinstance(b, dict) else b.replace("|", "\\|"))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def summary_lines(rows):
    out = []
    gpt = [r for r in rows if r["family"] == "gpt" and r.get("speedup") is not None]
    if gpt:
        worst = min(gpt, key=lambda r: r["speedup"])
        out.append(f"GPT: planner no slower than the baseline on {sum(r['speedup'] >= 1 - 1e-9 for r in gpt)}"
                   f" of {len(gpt)} rows (lowest speedup {worst['speedup']:.3f}, {worst['model']})")
    big = [r for r in rows if r["family"] in ("moe", "wresnet") and r["gpus"] >= 16]
    done = [r for r in big if r.get("speedup") is not None]
    if big:
        out.append(f"MoE and Wide-ResNet at 16+ GPUs: speedup >= 1.2 on "
                   f"{sum(r['speedup'] >= 1.2 for r in done)} of {len(big)} rows; speedups "
                   + ", ".join(f"{r['model']} {r['speedup']:.3f}" for r in done))
    errors = [r for r in rows if r.get("error") is not None]
    if errors:
        worst = max(errors, key=lambda r: abs(r["error"]))
        out.append(f"prediction error: largest |error| {abs(worst['error']) * 100:.1f} % "
                   f"({worst['model']}); {sum(abs(r['error']) <= 0.10 for r in errors)} of "
                   f"{len(errors)} rows within 10 %")
    compiles = [r["planner"]["compile"] for r in rows if isinstance(r["planner"], dict)]
    if compiles:
        out.append(f"planner compile time: max {max(compiles):.2f} s")
    return out


def nice_step(top):
    """A tick step of 1, 2 or 5 times a power of ten giving 3 to 6 ticks up to `top`."""
    step = 10 ** (math.floor(math.log10(top)) - 1)
    for factor in (1, 2, 5, 10, 20, 50):
        if top / (step * factor) <= 5:
            return step * factor
    return step * 100


def svg_plot(rows, families):
    """TFLOP/s per GPU against GPUs (log2), one panel per family, one line per system."""
    panel_w, panel_h, margin = 300, 240, 50
    width = margin + len(families) * (panel_w + margin)
    height = panel_h + 2 * margin + 40
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
             f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
             f'<rect width="{width}" height="{height}" fill="white"/>']
    for i, family in enumerate(families):
        fam = [r for r in rows if r["family"] == family]
        if not fam:
            continue
        x0, y0 = margin + i * (panel_w + margin), margin
        gpus = [r["gpus"] for r in fam]
        lo, hi = math.log2(min(gpus)), math.log2(max(gpus))
        values = [v for r in fam for v in r["tflops"].values() if v is not None]
        step = nice_step(max(values) if values else 1.0)
        top = step * math.ceil((max(values) if values else 1.0) * 1.05 / step)

        def px(g):
            return x0 + (0.5 if hi == lo else (math.log2(g) - lo) / (hi - lo)) * panel_w

        def py(v):
            return y0 + panel_h - v / top * panel_h

        parts.append(f'<rect x="{x0}" y="{y0}" width="{panel_w}" height="{panel_h}" '
                     'fill="none" stroke="#444"/>')
        parts.append(f'<text x="{x0 + panel_w / 2}" y="{y0 - 10}" text-anchor="middle" '
                     f'font-size="14">{family}</text>')
        for g in sorted(set(gpus)):
            parts.append(f'<text x="{px(g):.1f}" y="{y0 + panel_h + 16}" '
                         f'text-anchor="middle">{g}</text>')
        for k in range(int(round(top / step)) + 1):
            v = step * k
            parts.append(f'<line x1="{x0}" x2="{x0 + panel_w}" y1="{py(v):.1f}" y2="{py(v):.1f}" '
                         'stroke="#ddd"/>')
            parts.append(f'<text x="{x0 - 4}" y="{py(v) + 4:.1f}" text-anchor="end">{v:.0f}</text>')
        parts.append(f'<text x="{x0 + panel_w / 2}" y="{y0 + panel_h + 34}" '
                     'text-anchor="middle">GPUs</text>')
        for key, _, color in SYSTEMS:
            points = [(px(r["gpus"]), py(r["tflops"][key])) for r in fam
                      if r["tflops"].get(key) is not None]
            if len(points) > 1:
                path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
                parts.append(f'<polyline points="{path}" fill="none" stroke="{color}" '
                             'stroke-width="2"/>')
            for x, y in points:
                parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3.5" fill="{color}"/>')
    parts.append(f'<text x="14" y="{margin + panel_h / 2}" text-anchor="middle" '
                 f'transform="rotate(-90 14 {margin + panel_h / 2})">TFLOP/s per GPU '
                 '(simulated)</text>')
    lx = margin
    for key, label, color in SYSTEMS:
        parts.append(f'<rect x="{lx}" y="{height - 22}" width="14" height="4" fill="{color}"/>')
        parts.append(f'<text x="{lx + 20}" y="{height - 16}">{label}</text>')
        lx += 260
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.dirname(here)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("alpa", nargs="?", default=os.path.join(root, "build", "bin", "alpa"))
    parser.add_argument("--rows", default=",".join(FAMILIES),
                        help="families to run, comma-separated (gpt,moe,wresnet)")
    parser.add_argument("--models", default="", help="only these presets, comma-separated")
    parser.add_argument("--markdown", default="", help="also write the Markdown here")
    parser.add_argument("--svg", default="", help="write the TFLOP/s plot (SVG) here")
    parser.add_argument("--timeout", type=float, default=900, help="seconds per alpa call")
    parser.add_argument("--calibration", default="",
                        help="calibration JSON applied to every cluster (e.g. "
                             "bench/calibration/v100-p3.json)")
    args = parser.parse_args()
    families = [f for f in args.rows.split(",") if f]
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        parser.error(f"unknown row families {','.join(unknown)} (known: {','.join(FAMILIES)})")
    only = {m for m in args.models.split(",") if m}

    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for family, model, gpus in preset_rows(args.alpa, families):
            if only and model not in only:
                continue
            cluster = cluster_spec(gpus)
            row = {"family": family, "model": model, "gpus": gpus, "tflops": {}}
            for key, _, _ in SYSTEMS:
                command = "plan" if key == "planner" else "baseline"
                row[key] = run_system(args.alpa, command, model, cluster, workdir, args.timeout,
                                      args.calibration)
                if isinstance(row[key], dict):
                    r = row[key]
                    row["tflops"][key] = r["flops"] / r["simulated"] / gpus / 1e12
            p, b = row["planner"], row["baseline"]
            if isinstance(p, dict):
                row["error"] = (p["predicted"] - p["simulated"]) / p["simulated"]
            if isinstance(p, dict) and isinstance(b, dict):
                row["speedup"] = b["simulated"] / p["simulated"]
            rows.append(row)
            print(f"# {model} on {gpus} GPUs done", file=sys.stderr, flush=True)

    text = markdown_table(rows) + "\n\n" + "\n".join(f"- {l}" for l in summary_lines(rows)) + "\n"
    print(text, end="")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text)
    if args.svg:
        with open(args.svg, "w") as f:
            f.write(svg_plot(rows, families))


if __name__ == "__main__":
    main()
