//! Finds libalpa and tells cargo how to link it, with no dependency:
//!   1. `ALPA_DIR`: an install prefix; links `$ALPA_DIR/lib/libalpa.so` (or lib64).
//!   2. otherwise `pkg-config --libs alpa` (honouring PKG_CONFIG_PATH), run as a command.
//!   3. otherwise `-lalpa` from the linker's default paths.
//! The library directory is exported to dependents as `DEP_ALPA_LIBDIR` (this crate declares
//! `links = "alpa"`), which the `alpa` crate turns into an rpath for its tests and examples;
//! this crate's own tests get it directly. `ALPA_NO_RPATH=1` turns the rpath off.
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=ALPA_DIR");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    println!("cargo:rerun-if-env-changed=ALPA_NO_RPATH");
    println!("cargo:rerun-if-changed=build.rs");

    let mut libdirs: Vec<PathBuf> = Vec::new();
    let mut libs: Vec<String> = Vec::new();
    if let Some(prefix) = env::var_os("ALPA_DIR").filter(|p| !p.is_empty()) {
        let prefix = PathBuf::from(prefix);
        let lib = ["lib", "lib64"]
            .iter()
            .map(|d| prefix.join(d))
            .find(|d| has_libalpa(d))
            .unwrap_or_else(|| {
                panic!(
                    "ALPA_DIR={}: no libalpa.so in {}/lib or lib64",
                    prefix.display(),
                    prefix.display()
                )
            });
        libdirs.push(lib);
        libs.push("alpa".to_string());
    } else if let Some(flags) = pkg_config_libs() {
        for flag in flags.split_whitespace() {
            if let Some(dir) = flag.strip_prefix("-L") {
                libdirs.push(PathBuf::from(dir));
            } else if let Some(lib) = flag.strip_prefix("-l") {
                libs.push(lib.to_string());
            }
        }
        if !libs.iter().any(|l| l == "alpa") {
            libs.push("alpa".to_string());
        }
    } else {
        println!(
            "cargo:warning=libalpa not found through ALPA_DIR or pkg-config; linking -lalpa from \
             the default paths"
        );
        libs.push("alpa".to_string());
    }

    for dir in &libdirs {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
    for lib in &libs {
        println!("cargo:rustc-link-lib=dylib={}", lib);
    }
    if let Some(dir) = libdirs.iter().find(|d| has_libalpa(d)) {
        let dir = dir.canonicalize().unwrap_or_else(|_| dir.clone());
        println!("cargo:libdir={}", dir.display());
        if env::var_os("ALPA_NO_RPATH").map_or(true, |v| v.is_empty() || v == "0") {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.display());
        }
    }
}

fn has_libalpa(dir: &Path) -> bool {
    dir.join("libalpa.so").exists() || dir.join("libalpa.dylib").exists()
}

fn pkg_config_libs() -> Option<String> {
    let pkg_config = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_string());
    let output = Command::new(pkg_config).args(["--libs", "alpa"]).output().ok()?;
    if !output.status.success() {
        return None;
    }
    String::from_utf8(output.stdout).ok()
}
