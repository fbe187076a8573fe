//! Shared helpers of the integration tests.
#![allow(dead_code)]
use std::path::PathBuf;
use std::process::Command;

/// A small GPT that plans in about a second (docs/models.md).
pub const SMALL_GPT: &str = "gpt:hidden=256,layers=4,heads=4,seq=128,vocab=1000,batch=16";

/// The repository's tests/golden directory.
pub fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../tests/golden").join(name)
}

/// The `alpa` CLI of the libalpa install the crate links: $ALPA_CLI, $ALPA_DIR/bin/alpa, or
/// pkg-config's prefix/bin/alpa.
pub fn cli() -> PathBuf {
    if let Some(p) = std::env::var_os("ALPA_CLI") {
        return PathBuf::from(p);
    }
    if let Some(dir) = std::env::var_os("ALPA_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(dir).join("bin/alpa");
    }
    let out = Command::new("pkg-config")
        .args(["--variable=prefix", "alpa"])
        .output()
        .expect("pkg-config (set ALPA_DIR or ALPA_CLI to find the alpa CLI)");
    assert!(out.status.success(), "pkg-config --variable=prefix alpa failed");
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim()).join("bin/alpa")
}

/// A number field of a flat JSON object's top level (`"key":value`), enough for the CLI's
/// summary without a JSON crate.
pub fn json_number(json: &str, key: &str) -> f64 {
    let needle = format!("\"{}\":", key);
    let mut depth = 0i32;
    let bytes = json.as_bytes();
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if in_string {
            if c == b'\\' {
                i += 2;
                continue;
            }
            if c == b'"' {
                in_string = false;
            }
        } else if c == b'"' {
            if depth == 1 && json[i..].starts_with(&needle) {
                let rest = json[i + needle.len()..].trim_start();
                let end = rest.find(|ch: char| ch == ',' || ch == '}').unwrap();
                return rest[..end].trim().parse().unwrap();
            }
            in_string = true;
        } else if c == b'{' || c == b'[' {
            depth += 1;
        } else if c == b'}' || c == b']' {
            depth -= 1;
        }
        i += 1;
    }
    panic!("no top-level {:?} in {}", key, json);
}

/// Runs `alpa plan --model MODEL --cluster CLUSTER --json -q` and returns the summary line.
pub fn cli_plan_json(model: &str, cluster: &str) -> String {
    let cli = cli();
    // The installed CLI finds libalpa.so next to it (PREFIX/lib) when the loader does not.
    let libdir = cli.parent().and_then(|b| b.parent()).map(|p| p.join("lib")).unwrap();
    let mut path = std::ffi::OsString::from(libdir);
    if let Some(old) = std::env::var_os("LD_LIBRARY_PATH") {
        path.push(":");
        path.push(old);
    }
    let out = Command::new(&cli)
        .args(["plan", "--model", model, "--cluster", cluster, "--json", "-q"])
        .env("LD_LIBRARY_PATH", path)
        .output()
        .unwrap_or_else(|e| panic!("{}: {}", cli.display(), e));
    assert!(out.status.success(), "alpa plan failed: {}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    stdout.lines().last().unwrap().to_string()
}
