//! Plans a model on a cluster and prints the stage table.
//!
//!   cargo run --example plan                      # gpt-2.6b on p3.16xlarge:2
//!   cargo run --release --example plan -- --model gpt-39b --cluster p3.16xlarge:8 --json
//!
//! --model M    a model-zoo spec or preset (default gpt-2.6b)
//! --cluster C  PRESET:HOSTS, a preset spec or a cluster JSON file (default p3.16xlarge:2)
//! --json       print only {"iteration_seconds": ..., "compile_seconds": ...}
//!              (for bench/binding_call_cost.py; -q is accepted and ignored)
//! --svg FILE   also write the simulated iteration's timeline
use std::process::ExitCode;

fn usage() -> ExitCode {
    eprintln!("usage: plan [--model M] [--cluster C] [--json] [-q] [--svg FILE]");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let mut model = "gpt-2.6b".to_string();
    let mut cluster = "p3.16xlarge:2".to_string();
    let mut json = false;
    let mut svg: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--model" => match args.next() {
                Some(v) => model = v,
                None => return usage(),
            },
            "--cluster" => match args.next() {
                Some(v) => cluster = v,
                None => return usage(),
            },
            "--svg" => match args.next() {
                Some(v) => svg = Some(v),
                None => return usage(),
            },
            "--json" => json = true,
            // The CLI's quiet flag: this example prints no progress anyway.
            "-q" => {}
            _ => return usage(),
        }
    }
    match run(&model, &cluster, json, svg.as_deref()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("plan: {}", e);
            ExitCode::FAILURE
        }
    }
}

fn run(model: &str, cluster: &str, json: bool, svg: Option<&str>) -> alpa::Result<()> {
    let cluster = alpa::Cluster::from_spec(cluster)?;
    let plan = alpa::Plan::model(model, &cluster, None)?;
    if json {
        println!(
            "{{\"iteration_seconds\": {:?}, \"compile_seconds\": {:?}}}",
            plan.iteration_seconds(),
            plan.compile_seconds()
        );
        return Ok(());
    }
    println!(
        "{} on {} ({} hosts x {} devices): {} stages, {} microbatches",
        model,
        cluster.name(),
        cluster.hosts(),
        cluster.devices_per_host(),
        plan.stage_count(),
        plan.microbatches()
    );
    println!(
        "{:>5}  {:>7}  {:>7}  {:>7}  {:>9}  {:>5}  {:>5}  {:>10}  {:>10}",
        "stage", "layers", "submesh", "mesh", "dp x tp", "zero", "remat", "latency ms", "memory GiB"
    );
    for s in plan.stages() {
        let (hosts, per_host) = s.submesh();
        let mesh: Vec<String> = s.logical_mesh().iter().map(|d| d.to_string()).collect();
        println!(
            "{:>5}  {:>7}  {:>7}  {:>7}  {:>9}  {:>5}  {:>5}  {:>10.3}  {:>10.2}   devices {:?}",
            s.index(),
            format!("{}-{}", s.layers().start(), s.layers().end()),
            format!("{}x{}", hosts, per_host),
            mesh.join("x"),
            format!("{} x {}", s.data_parallel(), s.tensor_parallel()),
            if s.zero() { "yes" } else { "no" },
            match s.recompute() {
                alpa::Remat::On => "full",
                alpa::Remat::Selective => "sel",
                _ => "no",
            },
            s.latency_seconds() * 1e3,
            s.memory_bytes() as f64 / (1u64 << 30) as f64,
            s.devices()
        );
    }
    println!(
        "iteration {:.4} s, {:.1} TFLOP/s per device, peak memory {:.2} GiB, planned in {:.2} s",
        plan.iteration_seconds(),
        plan.tflops_per_device(),
        plan.peak_memory_bytes() as f64 / (1u64 << 30) as f64,
        plan.compile_seconds()
    );
    if let Some(path) = svg {
        std::fs::write(path, plan.timeline_svg(0)?)
            .map_err(|e| alpa::Error::new(alpa::ErrorKind::Io, format!("{}: {}", path, e)))?;
        println!("timeline written to {}", path);
    }
    Ok(())
}
