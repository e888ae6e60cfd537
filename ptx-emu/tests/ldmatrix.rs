//! `ldmatrix` (PTX ISA, "Warp-level matrix load instruction: ldmatrix"), checked against the
//! fragment layout the ISA documents: lane `t` receives elements `(t / 4, 2 (t % 4))` and
//! `(t / 4, 2 (t % 4) + 1)` of each 8x8 b16 matrix (transposed with `.trans`), lanes `8i..8i+7`
//! giving the row addresses of matrix `i`; and the misuse that must fault (part of a warp).

use kir_ptx_emu::{launch, Arg, ErrorKind, FaultKind, LaunchConfig, Memory, Module, Options};

const HEADER: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

/// Shared memory holds four 8x8 matrices, element (i, r, c) = 256 i + 16 r + c, rows 16 bytes
/// apart (matrix i at byte 128 i). Lane t gives the address of row t % 8 of matrix t / 8 (rows
/// in reverse order for matrix 3, to check that addresses come from the lanes). Each lane
/// stores its `N` fragments to out[4 t + i].
fn kernel(shape: &str, n: usize) -> String {
    let dsts: Vec<String> = (0..n).map(|i| format!("%f{i}")).collect();
    let stores: String = (0..n).map(|i| format!("    st.global.u32 [%rd3+{}], %f{i};\n", 4 * i)).collect();
    format!(
        r#"{HEADER}
.visible .entry k(.param .u64 out)
{{
    .reg .pred %p<2>; .reg .b32 %r<16>; .reg .b32 %f<4>; .reg .b64 %rd<4>;
    .shared .align 16 .b16 s[256];
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, s;
    // Fill: 8 elements per lane (32 lanes x 8 = 256).
    mov.u32 %r3, 0;
FILL:
    shl.b32 %r4, %r1, 3;
    add.u32 %r4, %r4, %r3;
    shr.u32 %r5, %r4, 6;
    and.b32 %r6, %r4, 63;
    shr.u32 %r7, %r6, 3;
    and.b32 %r8, %r6, 7;
    mul.lo.u32 %r9, %r5, 256;
    mad.lo.u32 %r9, %r7, 16, %r9;
    add.u32 %r9, %r9, %r8;
    shl.b32 %r10, %r4, 1;
    add.u32 %r10, %r2, %r10;
    st.shared.u16 [%r10], %r9;
    add.u32 %r3, %r3, 1;
    setp.lt.u32 %p1, %r3, 8;
    @%p1 bra FILL;
    bar.sync 0;
    // Row address: matrix t / 8, row t % 8 (reversed for matrix 3).
    shr.u32 %r11, %r1, 3;
    and.b32 %r12, %r1, 7;
    setp.eq.u32 %p1, %r11, 3;
    sub.u32 %r13, 7, %r12;
    selp.b32 %r12, %r13, %r12, %p1;
    shl.b32 %r14, %r11, 7;
    mad.lo.u32 %r14, %r12, 16, %r14;
    add.u32 %r14, %r2, %r14;
    ldmatrix.sync.aligned.m8n8.{shape}.shared.b16 {{{}}}, [%r14];
    mul.wide.u32 %rd2, %r1, 16;
    add.u64 %rd3, %rd1, %rd2;
{stores}    ret;
}}
"#,
        dsts.join(", ")
    )
}

fn run(shape: &str, n: usize) -> Vec<u32> {
    let text = kernel(shape, n);
    let m = Module::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let mut mem = Memory::new();
    let out = mem.alloc("out", &[0u8; 32 * 16]).unwrap();
    launch(&m, "k", &LaunchConfig::linear(1, 32), &[Arg::Buffer(out)], &mut mem, &Options::default())
        .unwrap_or_else(|e| panic!("{e}"));
    mem.bytes(out).unwrap().chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// Element (r, c) of matrix i as the lanes addressed it (matrix 3's rows reversed).
fn elem(i: usize, r: usize, c: usize) -> u32 {
    let row = if i == 3 { 7 - r } else { r };
    (256 * i + 16 * row + c) as u32
}

#[test]
fn x4_gives_each_lane_two_elements_of_each_matrix() {
    let got = run("x4", 4);
    for t in 0..32 {
        for i in 0..4 {
            let want = elem(i, t / 4, 2 * (t % 4)) | elem(i, t / 4, 2 * (t % 4) + 1) << 16;
            assert_eq!(got[4 * t + i], want, "lane {t} matrix {i}");
        }
    }
}

#[test]
fn trans_transposes_each_matrix() {
    let got = run("x2.trans", 2);
    for t in 0..32 {
        for i in 0..2 {
            let want = elem(i, 2 * (t % 4), t / 4) | elem(i, 2 * (t % 4) + 1, t / 4) << 16;
            assert_eq!(got[4 * t + i], want, "lane {t} matrix {i}");
        }
    }
    let one = run("x1", 1);
    assert_eq!(one[4 * 5], elem(0, 1, 2) | elem(0, 1, 3) << 16, "lane 5: row 1, columns 2 and 3");
}

#[test]
fn part_of_a_warp_faults() {
    let text = kernel("x1", 1)
        .replace("    ldmatrix.sync", "    setp.ge.u32 %p1, %r1, 16;\n    @%p1 bra DONE;\n    ldmatrix.sync")
        .replace("    ret;\n}", "DONE:\n    ret;\n}");
    let m = Module::parse(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let mut mem = Memory::new();
    let out = mem.alloc("out", &[0u8; 32 * 16]).unwrap();
    let e = launch(&m, "k", &LaunchConfig::linear(1, 32), &[Arg::Buffer(out)], &mut mem, &Options::default())
        .expect_err("a partial warp must fault");
    assert_eq!(e.kind, ErrorKind::Fault(FaultKind::CollectiveMask), "{e}");
    assert!(e.to_string().contains("`ldmatrix` is executed by lanes 0x0000ffff of warp 0"), "{e}");
}
