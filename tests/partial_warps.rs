//! Whole warps, end to end (issue 31, item 2): a kernel with a full-mask warp collective (its own
//! or in a function it calls) has the launch precondition that the block's thread count is a
//! multiple of 32. The interpreter refuses any other block as an invalid launch naming the
//! collective; `kir run` and `kir test` say so before anything runs (no PTX-emulator or GPU row);
//! `kir check` rejects a `reqntid` that makes a partial warp. Kernels without full-mask
//! collectives keep running in partial warps.

use kir_interp::{Arg, Buffer, ErrorKind, LaunchConfig, Options};
use kir_ir::ScalarType;
use std::process::Command;
mod verified_launch;
use verified_launch::launch_in;

/// A full-mask shuffle in the kernel, and one in a function the second kernel calls.
const SRC: &str = "\
kernel @neighbour(%x: ptr<global, f32>, %out: ptr<global, f32>) {
entry:
  %t = tid.x
  %v = load %x[%t]
  %s = shfl.down.f32 %v, 1, 0xffffffff
  store %out[%t], %s
  ret
}

func @warp_any(%p: pred) -> pred {
entry:
  %a = vote.any %p, 0xffffffff
  ret %a
}

kernel @any_positive(%x: ptr<global, f32>, %out: ptr<global, f32>) {
entry:
  %t = tid.x
  %v = load %x[%t]
  %p = gt.f32 %v, 2.0
  %a = call @warp_any(%p)
  %r = select.f32 %a, 1.0, 0.0
  store %out[%t], %r
  ret
}

kernel @copy(%x: ptr<global, f32>, %out: ptr<global, f32>) {
entry:
  %t = tid.x
  %v = load %x[%t]
  store %out[%t], %v
  ret
}
";

fn launch(kernel: &str, block: [u32; 3]) -> Result<Vec<f32>, kir_interp::InterpError> {
    let m = kir_ir::parse(SRC).unwrap();
    let diags = kir_ir::verify::verify_module(&m);
    assert!(diags.is_empty(), "{diags:?}");
    let k = m.kernel(kernel).unwrap();
    let n = (block[0] * block[1] * block[2]) as usize;
    let xs: Vec<u64> = (0..n).map(|i| (i as f32).to_bits() as u64).collect();
    let mut buffers = vec![Buffer::from_bits(ScalarType::F32, xs), Buffer::zeros(ScalarType::F32, n)];
    let cfg = LaunchConfig { grid: [1, 1, 1], block, dynamic_shared_bytes: 0 };
    launch_in(&m.funcs, k, &cfg, &[Arg::Buffer(0), Arg::Buffer(1)], &mut buffers, &Options::default())?;
    Ok((0..n).map(|i| f32::from_bits(buffers[1].get_bits(i) as u32)).collect())
}

#[test]
fn the_interpreter_refuses_a_partial_warp_for_a_full_mask_collective() {
    let out = launch("neighbour", [64, 1, 1]).unwrap();
    assert_eq!(out[0], 1.0);
    assert_eq!(out[31], 31.0, "lane 31 reads itself");
    for block in [[48, 1, 1], [16, 3, 1], [7, 5, 3]] {
        let e = launch("neighbour", block).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidLaunch, "{e}");
        let text = e.to_string();
        let threads = block[0] * block[1] * block[2];
        assert!(
            text.contains(&format!(
                "kernel @neighbour needs whole warps: its `shfl.down.f32` with member mask 0xffffffff names all 32 lanes \
                 of a warp, but block ({}, {}, {}) has {threads} threads, so warp {} has only {} lane",
                block[0],
                block[1],
                block[2],
                threads / 32,
                threads % 32
            )),
            "{text}"
        );
    }
    // Two dimensions that make whole warps together.
    assert!(launch("neighbour", [16, 2, 1]).is_ok());
}

#[test]
fn a_collective_in_a_called_function_needs_whole_warps_too() {
    let out = launch("any_positive", [32, 1, 1]).unwrap();
    assert!(out.iter().all(|&v| v == 1.0));
    let e = launch("any_positive", [40, 1, 1]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::InvalidLaunch, "{e}");
    assert!(e.to_string().contains("its `vote.any` (in function @warp_any) with member mask 0xffffffff"), "{e}");
}

#[test]
fn kernels_without_full_mask_collectives_run_in_partial_warps() {
    let out = launch("copy", [48, 1, 1]).unwrap();
    assert_eq!(out[47], 47.0);
}

fn scratch(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("kir-partial-warps-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(format!("{name}.kir"));
    std::fs::write(&file, text).unwrap();
    file
}

fn kir(args: &[&str]) -> (Option<i32>, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kir")).args(args).output().unwrap();
    (out.status.code(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

#[test]
fn kir_test_refuses_the_launch_before_any_engine_runs() {
    let text = format!(
        "{SRC}\n; run: @neighbour grid(2) block(48) x=range:f32:96 out=zeros:f32:96\n\
         ; run: @copy grid(1) block(48) x=range:f32:48 out=zeros:f32:48\n; expect: @copy out[0..4] == [0.0, 1.0, 2.0, 3.0]\n"
    );
    let file = scratch("test", &text);
    let (code, out) = kir(&["test", file.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{out}");
    assert!(out.contains("@neighbour grid(2) block(48) interp"), "{out}");
    assert!(out.contains("invalid launch: kernel @neighbour needs whole warps"), "{out}");
    assert!(out.contains("needs all 32 lanes of its warp"), "{out}");
    assert!(out.contains("launch a block whose thread count is a multiple of 32"), "{out}");
    // Refused before the PTX emulator (or a GPU) could run it.
    assert!(!out.contains("@neighbour grid(2) block(48) ptx-emu"), "{out}");
    assert!(out.contains("ok    ") && out.contains("@copy grid(1) block(48) ptx-emu"), "{out}");
}

#[test]
fn kir_run_refuses_and_kir_check_rejects_a_partial_warp_reqntid() {
    let file = scratch("run", SRC);
    let f = file.to_str().unwrap();
    let (code, out) = kir(&[
        "run",
        f,
        "--kernel",
        "neighbour",
        "--grid",
        "1",
        "--block",
        "100",
        "--arg",
        "x=range:f32:100",
        "--arg",
        "out=zeros:f32:100",
    ]);
    assert_ne!(code, Some(0), "{out}");
    assert!(out.contains("block (100, 1, 1) has 100 threads, so warp 3 has only 4 lanes"), "{out}");

    let shaped = SRC.replace(
        "kernel @neighbour(%x: ptr<global, f32>, %out: ptr<global, f32>) {",
        "kernel @neighbour(%x: ptr<global, f32>, %out: ptr<global, f32>) reqntid(48) {",
    );
    let file = scratch("check", &shaped);
    let (code, out) = kir(&["check", file.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains(
            "`reqntid(48)` gives kernel `@neighbour` a partial warp (48 threads: warp 1 has 16 lanes), but its \
             `shfl.down.f32` with member mask 0xffffffff needs all 32 lanes of every warp"
        ),
        "{out}"
    );
    let whole = SRC.replace(
        "kernel @neighbour(%x: ptr<global, f32>, %out: ptr<global, f32>) {",
        "kernel @neighbour(%x: ptr<global, f32>, %out: ptr<global, f32>) reqntid(16, 4) {",
    );
    let file = scratch("check-whole", &whole);
    let (code, out) = kir(&["check", file.to_str().unwrap()]);
    assert_eq!(code, Some(0), "{out}");
}
