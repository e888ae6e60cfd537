//! kir's GPU path, end to end, on any machine: the unchanged GPU runner (cudarc, the CUDA driver
//! API) against kir's emulated CUDA driver (`KIR_CUDA_DRIVER=emu`, the `kir-cuda-emu` cdylib over
//! the PTX emulator). Through the real `kir` binary: `kir devices`, `kir diff --against gpu` (f16,
//! u8 and u16 scalars, dynamic shared memory, a graph with a temporary and a buffer passed twice,
//! `--time`), `kir test --require-gpu kernels/`, `kir test` of f64 ops on two NaNs in both f64
//! operand orders (`KIR_CUDA_EMU_F64_OPERAND_ORDER`), `kir fuzz --require-gpu`, and a driver
//! selection that cannot be honoured.
//! Through the runner's API (one process, as the driver's faults are sticky for a process): a module
//! the driver rejects (its JIT log), a launch with too many threads per block, an out-of-bounds
//! kernel (a launch failure that names the buffer, not a hang).

mod cli;
use kir_backend_ptx::gpu::{GpuError, GpuRunner, Launch, Param};

/// `kir ARGS` with `KIR_CUDA_DRIVER=driver` (and the driver's own failure log off).
fn kir_with_driver(driver: &str, args: &[&str]) -> (i32, String, String) {
    cli::kir_with_env(args, &[("KIR_CUDA_DRIVER", driver), ("KIR_CUDA_EMU_LOG", "")])
}

fn kir(args: &[&str]) -> (i32, String, String) {
    kir_with_driver("emu", args)
}

#[test]
fn devices_lists_the_emulated_device_and_help_says_how_to_select_it() {
    let (code, out, err) = kir(&["devices"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.starts_with("0: kir-ptx-emu (sm_90, CPU) (sm_90), "), "{out}");
    assert!(out.contains(", driver 12.8 — emulated by kir's PTX emulator, not hardware\n"), "{out}");
    assert_eq!(out.lines().count(), 1, "one device: {out}");
    let (code, help, _) = kir(&["devices", "--help"]);
    assert_eq!(code, 0);
    assert!(help.contains("KIR_CUDA_DRIVER=emu") && help.contains("KIR_CUDA_DRIVER=PATH"), "{help}");
}

#[test]
fn a_driver_selection_that_cannot_be_honoured_is_an_error_never_a_fallback() {
    let (code, _, err) = kir_with_driver("/nonexistent/libcuda.so", &["devices"]);
    assert_eq!(code, 1);
    assert!(err.contains("error: KIR_CUDA_DRIVER=/nonexistent/libcuda.so: no such file"), "{err}");
    // `kir test` fails every GPU row (instead of skipping them as "no GPU").
    let (code, out, err) = kir_with_driver("/nonexistent/libcuda.so", &["test", "kernels/relu_backward.kir"]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(err.contains("error: KIR_CUDA_DRIVER=/nonexistent/libcuda.so: no such file"), "{err}");
    assert!(out.contains("FAIL  kernels/relu_backward.kir:") && out.contains(" gpu\n"), "{out}");
    assert!(out.ends_with("5 passed, 2 failed, 0 skipped\n"), "{out}");
    // A file that is no driver library.
    let dir = std::env::temp_dir().join(format!("kir-cuda-emu-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fake = dir.join("libcuda.so");
    std::fs::write(&fake, "not a library").unwrap();
    let (code, _, err) = kir_with_driver(fake.to_str().unwrap(), &["devices"]);
    assert_eq!(code, 1);
    assert!(err.contains("cannot load it"), "{err}");
    std::fs::remove_dir_all(&dir).unwrap();
}

fn diff(args: &[&str]) -> String {
    let mut all = vec!["diff"];
    all.extend_from_slice(args);
    all.extend(["--against", "gpu", "--require-gpu"]);
    let (code, out, err) = kir(&all);
    assert_eq!(code, 0, "kir {}\n{out}\n{err}", all.join(" "));
    assert!(out.contains("GPU (sm_90, device 0: kir-ptx-emu (sm_90, CPU), emulated):\n"), "{out}");
    out
}

#[test]
fn diff_against_the_emulated_gpu_f16_u8_u16_scalars_and_dynamic_shared_memory() {
    // u8 and f16 scalars (and an f16 buffer).
    let out = diff(&[
        "kernels/quantize.kir",
        "--kernel",
        "dequant_u8",
        "--grid",
        "4",
        "--block",
        "256",
        "--arg",
        "q=rand:u8:1000:5",
        "--arg",
        "out=zeros:f16:1000",
        "--arg",
        "scale=0.0125",
        "--arg",
        "zero=128",
        "--arg",
        "n=1000",
    ]);
    assert!(out.contains("  %out: match (1000 f16 elements, max 0 ulp)\n"), "{out}");
    assert!(out.ends_with("diff: 2 buffers compared, all match (tolerance exact)\n"), "{out}");
    // A u16 scalar and dynamic shared memory.
    let out = diff(&[
        "kernels/quantize.kir",
        "--kernel",
        "row_absmax",
        "--grid",
        "6",
        "--block",
        "64",
        "--shared",
        "256",
        "--arg",
        "x=rand:f32:1200:6",
        "--arg",
        "absmax=zeros:f32:6",
        "--arg",
        "cols=200",
    ]);
    assert!(out.contains("  %absmax: match (6 f32 elements, max 0 ulp)\n"), "{out}");
    // Too little dynamic shared memory: the emulated device faults where the GPU would, and kir
    // says which PTX line and thread (the interpreter faults first, so go through the emulator's
    // message by asking the runner directly: see the runner tests below).
}

#[test]
fn diff_against_the_emulated_gpu_graphs_with_temporaries_and_a_buffer_passed_twice() {
    // @act_chain passes its temporary %d to two parameters of @mul (read and written in place).
    let out = diff(&[
        "kernels/graph_act_chain.kir",
        "--graph",
        "act_chain",
        "--arg",
        "x=rand:f32:1000:7",
        "--arg",
        "dy=rand:f32:1000:8",
        "--arg",
        "dx=zeros:f32:1000",
        "--arg",
        "n=1000",
        "--arg",
        "s=0.5",
    ]);
    assert!(out.contains("  %dx: match (1000 f32 elements, max 0 ulp)\n"), "{out}");
    let out = diff(&[
        "kernels/graph_grad_clip.kir",
        "--graph",
        "clip_pipeline",
        "--arg",
        "g=rand:f32:5000:3",
        "--arg",
        "n=5000",
        "--arg",
        "max_norm=0.5",
        "--arg",
        "out=zeros:f32:2",
    ]);
    assert!(out.contains("diff: ") && out.contains("all match"), "{out}");
}

#[test]
fn diff_time_on_the_emulated_device_is_labelled_cpu_wall_time() {
    let (code, out, err) = kir(&[
        "diff",
        "kernels/relu_backward.kir",
        "--grid",
        "4",
        "--block",
        "256",
        "--arg",
        "x=rand:f32:1000:3",
        "--arg",
        "dy=rand:f32:1000:4",
        "--arg",
        "dx=zeros:f32:1000",
        "--arg",
        "n=1000",
        "--time",
        "--reps",
        "3",
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains(
            " ms of 3 launches (CUDA events of the emulated device: CPU wall time of the PTX emulator, not GPU time); "
        ),
        "{out}"
    );
    assert!(!out.contains("GB/s"), "no bandwidth claim for an emulated device: {out}");
}

#[test]
fn kir_test_require_gpu_passes_every_kernel_on_the_emulated_gpu() {
    let (code, out, err) = kir(&["test", "--require-gpu", "kernels/"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(err.contains("note: the GPU rows run on `kir-ptx-emu (sm_90, CPU)`, kir's emulated CUDA driver"), "{err}");
    let gpu_rows = out.lines().filter(|l| l.ends_with(" gpu")).count();
    let interp_rows = out.lines().filter(|l| l.ends_with(" interp")).count();
    assert!(gpu_rows >= 50, "{out}");
    assert_eq!(gpu_rows, interp_rows, "every directive has its GPU row: {out}");
    assert!(out.lines().filter(|l| l.ends_with(" gpu")).all(|l| l.contains("] ok    ")), "{out}");
    let summary = out.lines().last().unwrap();
    assert!(summary.ends_with(", 0 failed, 0 skipped"), "{summary}");
}

/// f64 ops on two NaNs of different payloads give kir's rule on the emulated GPU whatever order
/// ptxas would give their commutative operands: `kir test` of such a kernel passes with the
/// emulated driver running them in PTX order and swapped (`KIR_CUDA_EMU_F64_OPERAND_ORDER`; PTX
/// that leaves the order to ptxas fails swapped: tests/f64_nan_order.rs and the driver's
/// `launches_run_in_the_drivers_f64_operand_order`). An unknown order makes `cuInit` fail.
#[test]
fn kir_test_of_two_nan_f64_ops_passes_in_either_f64_operand_order() {
    let file = "tests/kir_test_cases/f64_two_nans.kir";
    let with_order = |order: &str| {
        cli::kir_with_env(
            &["test", "--require-gpu", file],
            &[("KIR_CUDA_DRIVER", "emu"), ("KIR_CUDA_EMU_LOG", ""), ("KIR_CUDA_EMU_F64_OPERAND_ORDER", order)],
        )
    };
    for order in ["ptx", "swapped"] {
        let (code, out, err) = with_order(order);
        assert_eq!(code, 0, "{order}:\n{out}\n{err}");
        assert!(out.lines().any(|l| l.contains("] ok    ") && l.ends_with(" gpu")), "{order}:\n{out}");
        assert!(out.ends_with("4 passed, 0 failed, 0 skipped\n"), "{order}:\n{out}");
    }
    let (code, out, err) = with_order("reversed");
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains("KIR_CUDA_EMU_F64_OPERAND_ORDER=reversed is neither `ptx` nor `swapped`"), "{out}\n{err}");
}

#[test]
fn fuzz_runs_its_gpu_column_on_the_emulated_gpu() {
    let (code, out, err) = kir(&["fuzz", "--cases", "40", "--require-gpu", "--no-ptxas"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("note: the GPU column runs on `kir-ptx-emu (sm_90, CPU)`"), "{out}");
    assert!(out.contains("fuzz: 40 cases, 40 passed, 0 failed;") && out.contains(", GPU on 40;"), "{out}");
}

const STORE_TID: &str = "
.version 8.0
.target sm_90
.address_size 64
.visible .entry store_tid(.param .u64 out, .param .u16 base)
{
    .reg .b16 %h<2>; .reg .b32 %r<4>; .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    ld.param.u16 %h1, [base];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    cvt.u32.u16 %r2, %h1;
    add.s32 %r3, %r1, %r2;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r3;
    ret;
}
";

fn launch(block: u32) -> Launch {
    Launch { grid: (1, 1, 1), block: (block, 1, 1), dynamic_shared_bytes: 0 }
}

/// The runner's error paths, in order (a kernel fault is sticky for the process, so it comes last).
#[test]
fn the_runner_reports_the_emulated_drivers_errors() {
    std::env::set_var("KIR_CUDA_DRIVER", "emu");
    let mut r = GpuRunner::new(0).expect("the emulated driver loads from target/*/deps");
    assert!(r.is_emulated());
    assert_eq!(r.compute_capability().unwrap(), (9, 0));

    // It runs: a u16 scalar, one buffer passed to two launches of a sequence.
    let out = r.run(STORE_TID, "store_tid", launch(4), &[vec![0; 16]], &[Param::Buffer(0), Param::Scalar(vec![10, 0])]);
    let words: Vec<u32> = out.unwrap()[0].chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(words, [10, 11, 12, 13]);

    // A module with an instruction the emulator does not know: rejected, with the JIT log.
    let bad = STORE_TID.replace("add.s32 %r3", "addd.s32 %r3");
    match r.run(&bad, "store_tid", launch(4), &[vec![0; 16]], &[Param::Buffer(0), Param::Scalar(vec![0, 0])]) {
        Err(GpuError::ModuleRejected { error, log }) => {
            assert!(error.contains("CUDA_ERROR_INVALID_PTX"), "{error}");
            assert!(log.contains("line 13") && log.contains("addd"), "{log}");
        }
        other => panic!("expected a rejected module, got {other:?}"),
    }
    let shown = GpuError::ModuleRejected { error: "E".into(), log: "L".into() }.to_string();
    assert_eq!(shown, "the driver rejected the PTX module (E):\nL");

    // Too many threads per block: the driver's code, and its reason, in kir's message.
    let e =
        r.run(STORE_TID, "store_tid", launch(2048), &[vec![0; 8192]], &[Param::Buffer(0), Param::Scalar(vec![0, 0])]);
    let msg = e.unwrap_err().to_string();
    assert!(msg.contains("CUDA_ERROR_INVALID_VALUE"), "{msg}");
    assert!(msg.contains("at most 1024 per block"), "{msg}");

    // The runner still works after a refused launch.
    let out = r.run(STORE_TID, "store_tid", launch(2), &[vec![0; 8]], &[Param::Buffer(0), Param::Scalar(vec![1, 0])]);
    assert_eq!(out.unwrap()[0], [1, 0, 0, 0, 2, 0, 0, 0]);

    // Out of bounds: 8 threads store into a 4-word buffer. A launch failure naming the
    // parameter, the thread and the PTX line; no hang.
    let e = r.run(STORE_TID, "store_tid", launch(8), &[vec![0; 16]], &[Param::Buffer(0), Param::Scalar(vec![0, 0])]);
    let msg = e.unwrap_err().to_string();
    assert!(msg.contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{msg}");
    assert!(msg.contains("`out`") && msg.contains("thread (4, 0, 0)"), "{msg}");
}
