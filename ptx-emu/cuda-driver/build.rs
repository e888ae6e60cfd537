//! Gives the shared object the SONAME `libcuda.so`: once a program has loaded it by path, a later
//! `dlopen("libcuda.so")` (the first name cudarc tries) returns this already-loaded object instead
//! of searching the file system for NVIDIA's driver.

fn main() {
    let os = std::env::var("CARGO_CFG_TARGET_OS").unwrap_or_default();
    if os == "linux" || os == "android" || os.ends_with("bsd") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcuda.so");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
