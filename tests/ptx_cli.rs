//! `kir ptx` and `kir devices` as users run them: output, exit codes and error messages.

mod cli;
use cli::kir;

#[test]
fn ptx_prints_the_module_for_the_chosen_target() {
    let (code, out, err) = kir(&["ptx", "kernels/relu_backward.kir", "--sm", "sm_90"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(".version 8.0\n.target sm_90\n.address_size 64\n"), "{out}");
    assert!(out.contains(".visible .entry relu_backward("), "{out}");
    // Source-line comments.
    assert!(out.contains("// 16: %xv = load %x[%i]"), "{out}");
    let (_, again, _) = kir(&["ptx", "kernels/relu_backward.kir", "--sm", "sm_90"]);
    assert_eq!(out, again, "output is not deterministic");
}

#[test]
fn ptx_kernel_selection_and_output_file() {
    let dir = std::env::temp_dir().join(format!("kir-ptx-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let out = dir.join("a.ptx");
    let (code, stdout, err) =
        kir(&["ptx", "kernels/activations.kir", "--kernel", "@silu_backward", "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(stdout.is_empty());
    let ptx = std::fs::read_to_string(&out).unwrap();
    assert!(ptx.contains(".entry silu_backward(") && !ptx.contains(".entry relu_forward("), "{ptx}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn ptx_errors() {
    let (code, _, err) = kir(&["ptx", "kernels/relu_backward.kir", "--sm", "sm_70"]);
    assert_eq!(code, 2);
    insta::assert_snapshot!("ptx_bad_sm", err);
    let (code, _, err) = kir(&["ptx", "kernels/activations.kir", "--kernel", "nope"]);
    assert_eq!(code, 1);
    assert!(err.contains("no kernel `@nope`"), "{err}");
    let dir = std::env::temp_dir().join(format!("kir-ptx-cli-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.kir");
    std::fs::write(&bad, "kernel @k(%n: u32) {\nentry:\n  %x = add.u32 %n, %undefined\n  ret\n}\n").unwrap();
    let (code, out, err) = kir(&["ptx", bad.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(out.is_empty(), "no PTX for an invalid module: {out}");
    assert!(err.contains("undefined"), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn devices_without_a_driver_says_so() {
    let (code, out, err) = kir(&["devices"]);
    if kir_backend_ptx::gpu::driver_present() {
        return; // a machine with a CUDA driver: nothing to check about the no-GPU path
    }
    assert_eq!(code, 1);
    assert!(out.is_empty());
    assert_eq!(
        err,
        "error: no CUDA driver found (libcuda could not be loaded)\n\
         note: KIR_CUDA_DRIVER=emu selects kir's emulated CUDA driver (see `kir devices --help`)\n"
    );
}

#[test]
fn ptx_refuses_kernels_whose_barriers_may_diverge() {
    let (code, out, err) = kir(&["ptx", "tests/filetests/barriers/bad_bounds_exit.kir"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.is_empty(), "no PTX may be printed:\n{out}");
    assert!(err.contains("barrier must be reached by all threads of the block"), "{err}");
    let (code, out, _) = kir(&["ptx", "tests/filetests/barriers/ok_uniform_early_exit.kir"]);
    assert_eq!(code, 0);
    assert!(out.contains("bar.sync"));
}
