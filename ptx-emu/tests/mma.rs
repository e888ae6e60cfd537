//! `mma.sync.aligned.m16n8k{16,8}.row.col.f32.f16.f16.f32` against the fragment layouts of the PTX
//! ISA ("Matrix fragments for mma.m16n8k16 with floating point type"): the host packs A, B and C
//! into each lane's registers as the ISA lays them out (lane t, g = t / 4, q = t % 4: A register
//! j holds elements (g + 8 (j % 2), 2q + h + 8 (j / 2)), B register j elements (2q + h + 8j, g), C
//! and D element i is (g + 8 (i / 2), 2q + i % 2)), the kernel runs one `mma`, and D must be
//! C + A B exactly (small integers: every order of summation is exact). Also: part of a warp
//! executing it faults.

use kir_ptx_emu::{launch, Arg, ErrorKind, FaultKind, LaunchConfig, Memory, Module, Options};

const HEADER: &str = ".version 8.0\n.target sm_80\n.address_size 64\n";

fn f16_bits(x: f32) -> u32 {
    half::f16::from_f32(x).to_bits() as u32
}

fn kernel(k: usize, guard: bool) -> String {
    let (na, nb) = (k / 4, k / 8);
    let n = na + nb + 4;
    let loads: String = (0..n).map(|i| format!("    ld.global.u32 %v{i}, [%rd3+{}];\n", 4 * i)).collect();
    let regs = |from: usize, len: usize| (from..from + len).map(|i| format!("%v{i}")).collect::<Vec<_>>().join(", ");
    let g = if guard { "    setp.ge.u32 %p1, %r1, 16;\n    @%p1 bra DONE;\n" } else { "" };
    format!(
        r#"{HEADER}
.visible .entry k(.param .u64 frags, .param .u64 out)
{{
    .reg .pred %p<2>; .reg .b32 %r<4>; .reg .b32 %v<12>; .reg .f32 %d<4>; .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [frags];
    ld.param.u64 %rd4, [out];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd4, %rd4;
    mov.u32 %r1, %tid.x;
    mul.wide.u32 %rd2, %r1, {stride};
    add.u64 %rd3, %rd1, %rd2;
{loads}{g}    mma.sync.aligned.m16n8k{k}.row.col.f32.f16.f16.f32 {{%d0, %d1, %d2, %d3}}, {{{a}}}, {{{b}}}, {{{c}}};
    mul.wide.u32 %rd5, %r1, 16;
    add.u64 %rd6, %rd4, %rd5;
    st.global.f32 [%rd6], %d0;
    st.global.f32 [%rd6+4], %d1;
    st.global.f32 [%rd6+8], %d2;
    st.global.f32 [%rd6+12], %d3;
DONE:
    ret;
}}
"#,
        stride = 4 * n,
        a = regs(0, na),
        b = regs(na, nb),
        c = regs(na + nb, 4),
    )
}

fn a_el(r: usize, c: usize) -> f32 {
    ((r * 16 + c) % 7) as f32 - 3.0
}
fn b_el(k: usize, n: usize) -> f32 {
    ((k * 8 + n) % 5) as f32 - 2.0
}
fn c_el(r: usize, n: usize) -> f32 {
    r as f32 - 2.0 * n as f32
}

fn run(k: usize, guard: bool) -> Result<Vec<f32>, kir_ptx_emu::EmuError> {
    let (na, nb) = (k / 4, k / 8);
    let mut frags: Vec<u32> = vec![];
    for t in 0..32 {
        let (g, q) = (t / 4, t % 4);
        for j in 0..na {
            let (row, col) = (g + 8 * (j % 2), 2 * q + 8 * (j / 2));
            frags.push(f16_bits(a_el(row, col)) | f16_bits(a_el(row, col + 1)) << 16);
        }
        for j in 0..nb {
            let kk = 2 * q + 8 * j;
            frags.push(f16_bits(b_el(kk, g)) | f16_bits(b_el(kk + 1, g)) << 16);
        }
        for i in 0..4 {
            frags.push(c_el(g + 8 * (i / 2), 2 * q + i % 2).to_bits());
        }
    }
    let m = Module::parse(&kernel(k, guard)).unwrap_or_else(|e| panic!("{e}\n{}", kernel(k, guard)));
    let mut mem = Memory::new();
    let fb: Vec<u8> = frags.iter().flat_map(|x| x.to_le_bytes()).collect();
    let f = mem.alloc("frags", &fb).unwrap();
    let out = mem.alloc("out", &[0u8; 32 * 16]).unwrap();
    launch(&m, "k", &LaunchConfig::linear(1, 32), &[Arg::Buffer(f), Arg::Buffer(out)], &mut mem, &Options::default())?;
    Ok(mem.bytes(out).unwrap().chunks(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect())
}

#[test]
fn m16n8k16_and_m16n8k8_follow_the_isa_fragment_layout() {
    for k in [16, 8] {
        let d = run(k, false).unwrap_or_else(|e| panic!("{e}"));
        for t in 0..32 {
            let (g, q) = (t / 4, t % 4);
            for i in 0..4 {
                let (row, col) = (g + 8 * (i / 2), 2 * q + i % 2);
                let want: f32 = c_el(row, col) + (0..k).map(|p| a_el(row, p) * b_el(p, col)).sum::<f32>();
                assert_eq!(d[4 * t + i], want, "k={k} lane {t} D element {i} ({row}, {col})");
            }
        }
    }
}

#[test]
fn mma_by_part_of_a_warp_faults() {
    let e = run(16, true).expect_err("half a warp must fault");
    assert_eq!(e.kind, ErrorKind::Fault(FaultKind::CollectiveMask), "{e}");
    assert!(e.to_string().contains("`mma.sync` is executed by lanes"), "{e}");
}
