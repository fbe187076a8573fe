//! Gives this crate's tests, examples and binaries an rpath to the libalpa that alpa-sys found
//! (alpa-sys exports its directory as DEP_ALPA_LIBDIR), so they run without LD_LIBRARY_PATH.
//! `ALPA_NO_RPATH=1` turns it off.
fn main() {
    println!("cargo:rerun-if-env-changed=ALPA_NO_RPATH");
    println!("cargo:rerun-if-env-changed=DEP_ALPA_LIBDIR");
    let off = std::env::var_os("ALPA_NO_RPATH").map_or(false, |v| !v.is_empty() && v != "0");
    if let (false, Some(dir)) = (off, std::env::var_os("DEP_ALPA_LIBDIR")) {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", dir.to_string_lossy());
    }
}
