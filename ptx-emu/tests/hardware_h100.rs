//! Bit patterns an NVIDIA H100 computed (recorded by kir's hardware-truth tools at kir 2dd1779:
//! `tests/hardware/h100/`, `ops/` and `collectives/`), replayed through the emulator one PTX
//! instruction at a time. Each row names its recording as `RUN[ELEMENT]` (the kernel of the
//! recording and the index of the element), so a failure here can be checked against the data.
//! The rules these rows pin are stated in `src/float.rs`'s header (arithmetic, conversions) and at
//! `atom_apply` in `src/exec.rs` (atomics).

use kir_ptx_emu::{launch, Arg, LaunchConfig, Memory, Module, Options};

const HEADER: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

/// The register type and the load/store width of a PTX type.
fn reg(ty: &str) -> (&'static str, u32) {
    match ty {
        "f16" | "bf16" | "b16" | "u16" | "s16" => (".b16", 16),
        "f32" => (".f32", 32),
        "f64" => (".f64", 64),
        "u8" | "s8" => (".b32", 8),
        "b32" | "u32" | "s32" => (".b32", 32),
        "b64" | "u64" | "s64" => (".b64", 64),
        _ => panic!("no register type for {ty}"),
    }
}

/// Runs `OPCODE d, s0, s1, ...` on one thread per row of `inputs` (each row the operands' bits)
/// and returns the destinations' bits (the low `width(dst)` bits).
fn run(opcode: &str, dst: &str, srcs: &[&str], inputs: &[Vec<u64>]) -> Vec<u64> {
    let n = inputs.len();
    let mut decl = String::new();
    let mut body = String::new();
    let mut params = Vec::new();
    for (i, s) in srcs.iter().enumerate() {
        let (rt, w) = reg(s);
        decl += &format!("    .reg {rt} %s{i};\n");
        params.push(format!(".param .u64 in{i}"));
        body += &format!(
            "    ld.param.u64 %a, [in{i}];\n    add.s64 %a, %a, %off;\n    ld.global.b{} %s{i}, [%a];\n",
            w.max(16)
        );
        if w == 8 {
            panic!("8-bit sources are not needed here");
        }
    }
    let (rt, w) = reg(dst);
    decl += &format!("    .reg {rt} %d;\n");
    params.push(".param .u64 out".to_string());
    let operands: Vec<String> = (0..srcs.len()).map(|i| format!("%s{i}")).collect();
    body += &format!("    {opcode} %d, {};\n", operands.join(", "));
    let st = if w == 8 { "u8".to_string() } else { format!("b{w}") };
    body +=
        &format!("    ld.param.u64 %a, [out];\n    add.s64 %a, %a, %off;\n    st.global.{st} [%a], %d;\n    ret;\n");
    let text = format!(
        "{HEADER}.visible .entry k({})\n{{\n    .reg .b32 %t;\n    .reg .b64 %a;\n    .reg .b64 %off;\n{decl}    \
         mov.u32 %t, %tid.x;\n    mul.wide.u32 %off, %t, 8;\n{body}}}\n",
        params.join(", ")
    );
    let m = Module::parse(&text).unwrap_or_else(|e| panic!("parse error {e}\n{text}"));
    let mut mem = Memory::new();
    let mut args = Vec::new();
    for i in 0..srcs.len() {
        let b: Vec<u8> = inputs.iter().flat_map(|row| row[i].to_le_bytes()).collect();
        args.push(Arg::Buffer(mem.alloc(format!("in{i}"), &b).unwrap()));
    }
    let out = mem.alloc("out", &vec![0u8; 8 * n]).unwrap();
    args.push(Arg::Buffer(out));
    launch(&m, "k", &LaunchConfig::linear(1, n as u32), &args, &mut mem, &Options::default())
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let mask = if w == 64 { u64::MAX } else { (1u64 << w) - 1 };
    mem.bytes(out).unwrap().chunks(8).map(|c| u64::from_le_bytes(c.try_into().unwrap()) & mask).collect()
}

/// Checks rows `(run id, operands, GPU result)` of one instruction.
fn check(opcode: &str, dst: &str, srcs: &[&str], rows: &[(&str, &[u64], u64)]) {
    let inputs: Vec<Vec<u64>> = rows.iter().map(|r| r.1.to_vec()).collect();
    let got = run(opcode, dst, srcs, &inputs);
    let mut bad = String::new();
    for (r, g) in rows.iter().zip(&got) {
        if *g != r.2 {
            bad += &format!("  {} {opcode} {:x?}: GPU {:#x}, emulator {:#x}\n", r.0, r.1, r.2, g);
        }
    }
    assert!(bad.is_empty(), "emulator differs from the H100:\n{bad}");
}

const QNAN: u64 = 0x7ff8_0000_0000_0000;
const DEFAULT_NAN: u64 = 0xfff8_0000_0000_0000;
const INF: u64 = 0x7ff0_0000_0000_0000;

#[test]
fn f64_arithmetic_passes_nans_through_in_a_fixed_operand_order() {
    for op in ["add.rn.f64", "add.rz.f64", "sub.rm.f64", "mul.rn.f64", "mul.rp.f64"] {
        let run = op.replace('.', "_").replace("_rn", "");
        check(
            op,
            "f64",
            &["f64", "f64"],
            &[
                // b's NaN before a's, quieted, sign and payload kept (sub does not negate it).
                (&format!("{run}[52]"), &[0, QNAN], QNAN),
                (&format!("{run}[3589]"), &[QNAN, DEFAULT_NAN], DEFAULT_NAN),
            ],
        );
    }
    check(
        "add.rn.f64",
        "f64",
        &["f64", "f64"],
        &[
            ("add_f64[3731]", &[0x7ff8_0000_0000_0001, 0xfff0_0000_0000_0001], 0xfff8_0000_0000_0001),
            ("add_f64[3944]", &[0x7ff0_0000_0000_0001, 0], 0x7ff8_0000_0000_0001),
            // Invalid operations make the negative default NaN.
            ("add_f64[3451]", &[INF, INF | 1 << 63], DEFAULT_NAN),
        ],
    );
    check("mul.rn.f64", "f64", &["f64", "f64"], &[("mul_f64[50]", &[0, INF], DEFAULT_NAN)]);
    // div: a's NaN before b's.
    check(
        "div.rn.f64",
        "f64",
        &["f64", "f64"],
        &[("div_f64[0]", &[0, 0], DEFAULT_NAN), ("div_f64[3589]", &[QNAN, DEFAULT_NAN], QNAN)],
    );
    // fma: b, then c, then a; an invalid product with a NaN addend gives the addend.
    check(
        "fma.rn.f64",
        "f64",
        &["f64", "f64", "f64"],
        &[
            ("fma_f64[13]", &[0, 0, QNAN], QNAN),
            ("fma_f64[3342]", &[QNAN, 0, 0xfff0_0000_0000_0001], 0xfff8_0000_0000_0001),
            ("fma_f64[222]", &[0, QNAN, 0xfff0_0000_0000_0001], QNAN),
            ("fma_f64[181]", &[0, INF, 0x3ff0_0000_0000_0000], DEFAULT_NAN),
        ],
    );
    check(
        "sqrt.rn.f64",
        "f64",
        &["f64"],
        &[("sqrt_f64[3]", &[0x8000_0000_0000_0001], DEFAULT_NAN), ("sqrt_f64[58]", &[INF | 1], QNAN | 1)],
    );
    check("rcp.rn.f64", "f64", &["f64"], &[("rcp_f64[52]", &[QNAN], QNAN), ("rcp_f64[58]", &[INF | 1], QNAN | 1)]);
    // min/max: one NaN is ignored; of two, b's quieted.
    for op in ["min.f64", "max.f64"] {
        let run = op.replace('.', "_");
        check(
            op,
            "f64",
            &["f64", "f64"],
            &[
                (&format!("{run}[52]"), &[0, QNAN], 0),
                (&format!("{run}[3588]"), &[QNAN, QNAN], QNAN),
                (&format!("{run}[3594]"), &[QNAN, INF | 1], QNAN | 1),
            ],
        );
    }
}

#[test]
fn f32_and_16_bit_nan_results_are_canonical() {
    check(
        "add.rn.f32",
        "f32",
        &["f32", "f32"],
        &[("add_f32[3672]", &[0x7fc0_0001, 0], 0x7fff_ffff), ("add_f32[59]", &[0, 0xff80_0001], 0x7fff_ffff)],
    );
    check("min.f32", "f32", &["f32", "f32"], &[("min_f32[3588]", &[0x7fc0_0000, 0x7fc0_0000], 0x7fff_ffff)]);
    check("fma.rn.f16", "f16", &["f16", "f16", "f16"], &[("fma_f16[3328]", &[0x7e00, 0, 0], 0x7fff)]);
}

#[test]
fn ftz_flushes_results_whose_exact_value_is_subnormal() {
    // 2^-126 * 0.99999994 rounds up to 2^-126 but is below it: flushed.
    let (min, below1) = (0x0080_0000u64, 0x3f7f_ffffu64);
    check(
        "mul.rn.ftz.f32",
        "f32",
        &["f32", "f32"],
        &[("mul_ftz_f32[698]", &[min, below1], 0), ("mul_ftz_f32[694]", &[min, 0x3f80_0000], min)],
    );
    check("mul.rp.ftz.f32", "f32", &["f32", "f32"], &[("mul_rp_ftz_f32[698]", &[min, below1], 0)]);
    check("mul.rm.ftz.f32", "f32", &["f32", "f32"], &[("mul_rm_ftz_f32[699]", &[min, 0xbf7f_ffff], 0x8000_0000)]);
    check("div.rp.ftz.f32", "f32", &["f32", "f32"], &[("div_rp_ftz_f32[696]", &[min, 0x3f80_0001], 0)]);
    check("div.rm.ftz.f32", "f32", &["f32", "f32"], &[("div_rm_ftz_f32[697]", &[min, 0xbf80_0001], 0x8000_0000)]);
    // Without .ftz the rounded result stands.
    check("mul.rn.f32", "f32", &["f32", "f32"], &[("mul_f32[698]", &[min, below1], min)]);
}

/// `div.full.f32` is `div.approx`'s `a * rcp(b)` for ordinary divisors, and scales both operands
/// by 1/4 for |b| > 2^126 (where `div.approx` gives zero).
#[test]
fn div_full_is_div_approx_with_scaling_for_huge_divisors() {
    check(
        "div.full.f32",
        "f32",
        &["f32", "f32"],
        &[
            ("div_full_f32.dom[3]", &[0x2757_22a8, 0xd1bc_a063], 0x9511_fd17),
            ("div_full_f32.all[1134]", &[0x3f80_0001, 0x7f7f_ffff], 0x0020_0001),
            ("div_full_f32.all[1135]", &[0x3f80_0001, 0xff7f_ffff], 0x8020_0001),
        ],
    );
    check(
        "div.approx.f32",
        "f32",
        &["f32", "f32"],
        &[("div_approx_f32.dom[3]", &[0x2757_22a8, 0xd1bc_a063], 0x9511_fd17)],
    );
}

#[test]
fn float_to_float_conversions_of_nan() {
    check(
        "cvt.f32.bf16",
        "f32",
        &["bf16"],
        &[("cvt_f32_bf16[32641]", &[0x7f81], 0x7f81_0000), ("cvt_f32_bf16[65473]", &[0xffc1], 0xffc1_0000)],
    );
    check(
        "cvt.f32.f16",
        "f32",
        &["f16"],
        &[("cvt_f32_f16[31745]", &[0x7c01], 0x7fff_ffff), ("cvt_f32_f16[65024]", &[0xfe00], 0x7fff_ffff)],
    );
    check(
        "cvt.f64.f32",
        "f64",
        &["f32"],
        &[
            ("cvt_f64_f32[52]", &[0x7fc0_0000], QNAN),
            ("cvt_f64_f32[55]", &[0xffc0_0001], 0xfff8_0000_2000_0000),
            ("cvt_f64_f32[58]", &[0x7f80_0001], 0x7ff8_0000_2000_0000),
        ],
    );
    check("cvt.ftz.f32.f32", "f32", &["f32"], &[("cvt_ftz_f32_f32[55]", &[0xffc0_0001], 0x7fff_ffff)]);
    check("cvt.rni.f32.f32", "f32", &["f32"], &[("cvt_rni_f32_f32[58]", &[0x7f80_0001], 0x7fff_ffff)]);
    check(
        "cvt.rni.f64.f64",
        "f64",
        &["f64"],
        &[
            ("cvt_rni_f64_f64[55]", &[0xfff8_0000_0000_0001], 0xfff8_0000_0000_0001),
            ("cvt_rni_f64_f64[58]", &[INF | 1], QNAN | 1),
        ],
    );
    for op in ["cvt.rn.f32.f64", "cvt.rz.f32.f64", "cvt.rn.ftz.f32.f64"] {
        let run = op.replace('.', "_").replace("_rn", "");
        check(
            op,
            "f32",
            &["f64"],
            &[
                (&format!("{run}[52]"), &[QNAN], 0x7fc0_0000),
                (&format!("{run}[55]"), &[0xfff8_0000_0000_0001], 0xffc0_0000),
                (&format!("{run}[58]"), &[INF | 1], 0x7fc0_0000),
                (&format!("{run}[57]"), &[u64::MAX], 0xffff_ffff),
            ],
        );
    }
    check(
        "cvt.rn.f16.f64",
        "f16",
        &["f64"],
        &[
            ("cvt_f16_f64[52]", &[QNAN], 0x7e00),
            ("cvt_f16_f64[53]", &[DEFAULT_NAN], 0xfe00),
            ("cvt_f16_f64[56]", &[u64::MAX >> 1], 0x7fff),
        ],
    );
    check("cvt.rn.f16.f32", "f16", &["f32"], &[("cvt_f16_f32[53]", &[0xffc0_0000], 0x7fff)]);
    check("cvt.rn.bf16.f32", "bf16", &["f32"], &[("cvt_bf16_f32[53]", &[0xffc0_0000], 0x7fff)]);
}

#[test]
fn float_to_integer_conversions_of_nan() {
    // From f64, every width: 1 << (width - 1), with or without .sat, in every rounding.
    for (dst, want) in
        [("u8", 0x80), ("s8", 0x80), ("u16", 0x8000), ("s16", 0x8000), ("u32", 0x8000_0000), ("s64", 1 << 63)]
    {
        for (r, run) in [("rzi", ""), ("rni", "rni_"), ("rmi", "rmi_")] {
            for sat in ["", "sat."] {
                let id = format!("cvt_{run}{}{dst}_f64[52]", sat.replace('.', "_"));
                check(&format!("cvt.{r}.{sat}{dst}.f64"), dst, &["f64"], &[(&id, &[QNAN], want)]);
            }
        }
    }
    // From f32 and f16: 1 << 63 into 64 bits, 0 into narrower integers.
    check("cvt.rzi.s64.f32", "s64", &["f32"], &[("cvt_s64_f32[52]", &[0x7fc0_0000], 1 << 63)]);
    check("cvt.rzi.ftz.u64.f32", "u64", &["f32"], &[("cvt_ftz_u64_f32[52]", &[0x7fc0_0000], 1 << 63)]);
    check("cvt.rzi.u64.f16", "u64", &["f16"], &[("cvt_u64_f16[3976]", &[0x7c01], 1 << 63)]);
    check("cvt.rzi.s32.f32", "s32", &["f32"], &[("cvt_s32_f32[52]", &[0x7fc0_0000], 0)]);
    check("cvt.rzi.u8.f32", "u8", &["f32"], &[("cvt_u8_f32[53]", &[0xffc0_0000], 0)]);
}

/// One thread per element: `old[i] = atom.SPACE.add.T [a + i], b[i]`, through shared memory (copied
/// in and out) when `shared`.
fn atom_add(ty: &str, shared: bool, a: &[u64], b: &[u64]) -> Vec<u64> {
    let (rt, w) = reg(ty);
    let n = a.len();
    let mov = if shared {
        format!(
            "    mov.u64 %s, sm;\n    add.s64 %s, %s, %o;\n    ld.global.b{w} %x, [%pa];\n    st.shared.b{w} [%s], %x;\n    \
             atom.shared.add.{ty} %x, [%s], %y;\n    ld.shared.b{w} %x, [%s];\n    st.global.b{w} [%pa], %x;\n"
        )
    } else {
        format!("    atom.global.add.{ty} %x, [%pa], %y;\n")
    };
    let text = format!(
        "{HEADER}.visible .entry k(.param .u64 a, .param .u64 b)\n{{\n    .shared .align 8 .b8 sm[{}];\n    \
         .reg .b32 %t;\n    .reg .b64 %o, %pa, %pb, %s;\n    .reg {rt} %x, %y;\n    mov.u32 %t, %tid.x;\n    \
         mul.wide.u32 %o, %t, {};\n    ld.param.u64 %pa, [a];\n    add.s64 %pa, %pa, %o;\n    ld.param.u64 %pb, [b];\n    \
         add.s64 %pb, %pb, %o;\n    ld.global.b{w} %y, [%pb];\n{mov}    ret;\n}}\n",
        n * 8,
        w / 8
    );
    let m = Module::parse(&text).unwrap_or_else(|e| panic!("parse error {e}\n{text}"));
    let mut mem = Memory::new();
    let bytes = |v: &[u64]| -> Vec<u8> { v.iter().flat_map(|x| x.to_le_bytes()[..w as usize / 8].to_vec()).collect() };
    let pa = mem.alloc("a", &bytes(a)).unwrap();
    let pb = mem.alloc("b", &bytes(b)).unwrap();
    launch(
        &m,
        "k",
        &LaunchConfig::linear(1, n as u32),
        &[Arg::Buffer(pa), Arg::Buffer(pb)],
        &mut mem,
        &Options::default(),
    )
    .unwrap_or_else(|e| panic!("{e}\n{text}"));
    mem.bytes(pa)
        .unwrap()
        .chunks(w as usize / 8)
        .map(|c| c.iter().rev().fold(0u64, |acc, &x| acc << 8 | x as u64))
        .collect()
}

#[test]
fn atomic_float_adds_as_the_h100_does_them_in_global_and_shared_memory() {
    // f32, atom_add_f32_g1[14] / atom_add_f32_s1[14]: global memory flushes subnormals, shared
    // memory keeps them; NaN is canonical in both (`[3]`).
    let (a, b) = ([0x0040_0000, 0xffc0_0001, 0x3f80_0000], [0x8000_0001, 0x33c0_0000, 0x3f80_0000]);
    assert_eq!(atom_add("f32", false, &a, &b), [0, 0x7fff_ffff, 0x4000_0000]);
    assert_eq!(atom_add("f32", true, &a, &b), [0x003f_ffff, 0x7fff_ffff, 0x4000_0000]);
    // f64 in global memory (atom_add_f64_g1): NaNs stored as they are, the operand's first.
    let a = [1, 0xfff7_ffff_ffff_ffff, 0xfff8_0000_0001_2345, INF];
    let b = [0x7ff0_0000_0000_0001, 0xbfef_ffff_ffff_ffff, 0xfff7_ffff_ffff_ffff, INF | 1 << 63];
    assert_eq!(
        atom_add("f64", false, &a, &b),
        [0x7ff0_0000_0000_0001, 0xfff7_ffff_ffff_ffff, 0xfff7_ffff_ffff_ffff, DEFAULT_NAN],
        "atom_add_f64_g1[0], [3], [8]; atom_add_f64_gh.special2 (inf + -inf)"
    );
    // f64 in shared memory (atom_add_f64_s1): memory's NaN first, quieted.
    assert_eq!(
        atom_add("f64", true, &a, &b),
        [0x7ff8_0000_0000_0001, 0xffff_ffff_ffff_ffff, 0xfff8_0000_0001_2345, DEFAULT_NAN],
        "atom_add_f64_s1[0], [3], [8]"
    );
}
