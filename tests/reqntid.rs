//! `reqntid(x[, y[, z]])` end to end: the interpreter refuses launches with another block shape
//! (InvalidLaunch, naming both shapes), `kir test` reports such a directive as a clear failure, the
//! PTX backend emits `.reqntid x, y, z` (which ptxas accepts), and the PTX emulator enforces it too.

use kir_interp::{Arg, Buffer, ErrorKind, LaunchConfig, Options};
use kir_ir::{Constant, ScalarType};
use std::process::Command;
mod verified_launch;
use verified_launch::launch;

const WARP_SUMS: &str = include_str!("filetests/barriers/ok_warp_index_shuffles_reqntid.kir");

fn kernel() -> kir_ir::Module {
    let m = kir_ir::parse(WARP_SUMS).unwrap();
    assert!(kir_ir::verify::verify_module(&m).is_empty());
    m
}

fn run(block: [u32; 3]) -> Result<Vec<f32>, kir_interp::InterpError> {
    let m = kernel();
    let n = 256;
    let xs: Vec<u64> = (0..n).map(|i| (i as f32).to_bits() as u64).collect();
    let mut buffers = vec![Buffer::from_bits(ScalarType::F32, xs), Buffer::zeros(ScalarType::F32, n)];
    let args = [Arg::Buffer(0), Arg::Buffer(1), Arg::Scalar(Constant::u32(8))];
    let cfg = LaunchConfig { grid: [1, 1, 1], block, dynamic_shared_bytes: 0 };
    launch(&m.kernels[0], &cfg, &args, &mut buffers, &Options::default())?;
    Ok((0..buffers[1].len()).map(|i| f32::from_bits(buffers[1].get_bits(i) as u32)).collect())
}

#[test]
fn the_interpreter_launches_only_the_declared_block_shape() {
    let out = run([256, 1, 1]).unwrap();
    // Lane 0 of warp w holds the sum of the warp's 32 inputs, 32w .. 32w + 31.
    for w in 0..8 {
        let expect: f32 = (32 * w..32 * w + 32).map(|i| i as f32).sum();
        assert_eq!(out[32 * w], expect, "warp {w}");
    }
    for block in [[128, 1, 1], [128, 2, 1], [255, 1, 1]] {
        let e = run(block).unwrap_err();
        assert_eq!(e.kind, ErrorKind::InvalidLaunch, "{e}");
        let text = e.to_string();
        assert!(text.contains("declares `reqntid(256)`"), "{text}");
        assert!(text.contains(&format!("launched with block ({}, {}, {})", block[0], block[1], block[2])), "{text}");
    }
}

#[test]
fn kir_test_reports_a_directive_with_another_block_shape() {
    let dir = std::env::temp_dir().join(format!("kir-reqntid-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("shape.kir");
    let body = WARP_SUMS.replace(
        "kernel @warp_index_shuffles",
        "; run: @warp_index_shuffles grid(1) block(128) x=rand:f32:256:1 out=zeros:f32:256 nwarps=4\nkernel @warp_index_shuffles",
    );
    std::fs::write(&file, body).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_kir")).arg("test").arg(&file).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(text.contains("invalid launch"), "{text}");
    assert!(
        text.contains("declares `reqntid(256)` (block (256, 1, 1)) but is launched with block (128, 1, 1)"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_backend_emits_reqntid_and_ptxas_accepts_it() {
    let m = kernel();
    let ptx = kir_backend_ptx::emit_module(
        &kir_ir::verify::check(m.clone()).unwrap(),
        &kir_backend_ptx::PtxOptions::default(),
    )
    .unwrap();
    assert!(ptx.contains(")\n.reqntid 256, 1, 1\n{"), "{ptx}");
    let two_d = kir_ir::parse("kernel @t(%n: u32) reqntid(32, 8) {\nentry:\n  ret\n}\n").unwrap();
    let ptx2 = kir_backend_ptx::emit_module(
        &kir_ir::verify::check(two_d.clone()).unwrap(),
        &kir_backend_ptx::PtxOptions::default(),
    )
    .unwrap();
    assert!(ptx2.contains(".reqntid 32, 8, 1"), "{ptx2}");
    if kir_backend_ptx::tools::require_tool_or_skip("ptxas").is_some() {
        for p in [&ptx, &ptx2] {
            kir_backend_ptx::tools::run_ptxas(p, kir_backend_ptx::SmVersion::Sm80)
                .unwrap_or_else(|e| panic!("{e}\n{p}"));
        }
    }
}

#[test]
fn the_ptx_emulator_enforces_reqntid() {
    use kir_ptx_emu as emu;
    let ptx = kir_backend_ptx::emit_module(
        &kir_ir::verify::check(kernel()).unwrap(),
        &kir_backend_ptx::PtxOptions::default(),
    )
    .unwrap();
    let module = emu::Module::parse(&ptx).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(module.entries()[0].reqntid, Some([256, 1, 1]));
    let mut mem = emu::Memory::new();
    let xs: Vec<u8> = (0..256).flat_map(|i| (i as f32).to_le_bytes()).collect();
    let x = mem.alloc("x", &xs).unwrap();
    let out = mem.alloc_zeroed("out", 256 * 4).unwrap();
    let args = [emu::Arg::Buffer(x), emu::Arg::Buffer(out), emu::Arg::Scalar(8)];
    let name = &module.entries()[0].name.clone();
    let ok = emu::LaunchConfig { grid: [1, 1, 1], block: [256, 1, 1], dynamic_shared_bytes: 0 };
    emu::launch(&module, name, &ok, &args, &mut mem, &emu::Options::default()).unwrap();
    let bad = emu::LaunchConfig { grid: [1, 1, 1], block: [128, 2, 1], dynamic_shared_bytes: 0 };
    let e = emu::launch(&module, name, &bad, &args, &mut mem, &emu::Options::default()).unwrap_err();
    assert_eq!(e.kind, emu::ErrorKind::InvalidLaunch, "{e}");
    assert!(e.to_string().contains(".reqntid 256, 1, 1"), "{e}");
    // PTX written by hand: omitted dimensions are 1, and a bad directive is a located parse error.
    let hand =
        |d: &str| format!(".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{d}\n{{\nret;\n}}\n");
    let m = emu::Module::parse(&hand(".reqntid 64, 2")).unwrap();
    assert_eq!(m.entries()[0].reqntid, Some([64, 2, 1]));
    assert!(emu::Module::parse(&hand(".reqntid 0")).is_err());
    assert!(emu::Module::parse(&hand(".maxntid 64")).unwrap().entries()[0].reqntid.is_none());
}
