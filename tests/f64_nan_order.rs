//! Which NaN an f64 op returns does not depend on the order ptxas gives commutative operands
//! (docs/language.md, "NaN and signed zero"; `backend-ptx/src/nan_order.rs`).
//!
//! What it guarantees:
//! - kir's PTX for f64 `add`, `sub`, `mul`, `min`, `max` and `fma` (with rounding modifiers too),
//!   with operands read from buffers and in every constant form (a number constant, a NaN
//!   constant in each position, one value in two positions), gives the interpreter's bits in the
//!   PTX emulator both in PTX order and with the commutative operands swapped
//!   (`F64OperandOrder::Swapped`, ptxas's other choice), on every combination of eight operand
//!   values: numbers, `+0`/`inf` (for `0 * inf`), and NaNs of four payloads, both signs,
//!   signaling and quiet.
//! - The check can fail: the same ops written as plain PTX (`add.rn.f64 %fd4, %fd1, %fd2`, the
//!   form kir emitted before) agree with the interpreter in PTX order but differ between the two
//!   orders on every input whose NaNs the swap reorders, so the emulator's swapped order models
//!   something the emitter has to handle.

use kir::api::{ptx_entry_name, Module};
use kir_backend_ptx::SmVersion;
use kir_ptx_emu::{launch, Arg, F64OperandOrder, LaunchConfig, Memory, Options};

/// The operand values: every one of the `N` threads gets one triple of them.
const VALUES: [u64; 8] = [
    0x3ff8_0000_0000_0000, // 1.5
    0x0000_0000_0000_0000, // +0
    0x7ff0_0000_0000_0000, // +inf
    0xc004_0000_0000_0000, // -2.5
    0x7ff8_0000_0000_0001, // quiet NaN, payload 1
    0xfff8_0000_0000_0002, // quiet NaN, negative, payload 2
    0x7ff0_0000_0000_0003, // signaling NaN, payload 3
    0xfff0_0000_0000_0004, // signaling NaN, negative, payload 4
];
const N: usize = 512;
const BLOCK: u32 = 256;

fn is_nan(b: u64) -> bool {
    f64::from_bits(b).is_nan()
}

/// Thread i's operands: every triple of `VALUES`.
fn inputs() -> [Vec<u64>; 3] {
    let pick = |shift: usize| (0..N).map(|i| VALUES[(i >> shift) & 7]).collect::<Vec<u64>>();
    [pick(0), pick(3), pick(6)]
}

/// An operand as the kernel spells it: a loaded value or a constant.
const FORMS_A: [&str; 3] = ["%xv", "2.5", "0d7ff8000000000005"];
const FORMS_B: [&str; 5] = ["%xv", "%yv", "2.5", "0d7ff8000000000005", "0dfff0000000000006"];
const FORMS_C: [&str; 6] = ["%xv", "%yv", "%zv", "2.5", "0d7ff8000000000005", "0dfff0000000000006"];

/// A kernel `@name` computing `out[i] = inst` on the f64 bits of `x[i]`, `y[i]`, `z[i]` (as `%xv`,
/// `%yv`, `%zv`), `inst` defining nothing but the text after `%r = `.
fn kernel_text(name: &str, inst: &str) -> String {
    format!(
        "kernel @{name}(%x: ptr<global, u64>, %y: ptr<global, u64>, %z: ptr<global, u64>, %out: ptr<global, u64>) {{
entry:
  %i = global_id.x
  %xb = load %x[%i]
  %yb = load %y[%i]
  %zb = load %z[%i]
  %xv = bitcast.f64.u64 %xb
  %yv = bitcast.f64.u64 %yb
  %zv = bitcast.f64.u64 %zb
  %r = {inst}
  %rb = bitcast.u64.f64 %r
  store %out[%i], %rb
  ret
}}
"
    )
}

/// One kernel per op and operand forms: `out[i] = op(forms)` on the bits of `x[i]`, `y[i]`, `z[i]`.
fn kernels() -> (String, Vec<String>) {
    let mut src = String::new();
    let mut names = Vec::new();
    let mut add = |name: String, inst: String| {
        src.push_str(&kernel_text(&name, &inst));
        names.push(name);
    };
    let mut n = 0;
    for op in ["add.f64", "sub.f64", "mul.f64", "min.f64", "max.f64", "sub.rm.f64", "mul.rz.f64"] {
        for a in FORMS_A {
            for b in FORMS_B {
                add(format!("k{n}"), format!("{op} {a}, {b}"));
                n += 1;
            }
        }
    }
    for op in ["fma.f64", "fma.rp.f64"] {
        for a in FORMS_A {
            for b in FORMS_B.iter().filter(|b| **b != "0d7ff8000000000005") {
                for c in FORMS_C {
                    add(format!("k{n}"), format!("{op} {a}, {b}, {c}"));
                    n += 1;
                }
            }
        }
    }
    (src, names)
}

/// Runs entry `entry` of `m` on the inputs in the emulator with the given f64 operand order.
fn emulate(m: &kir_ptx_emu::Module, entry: &str, ins: &[Vec<u64>; 3], order: F64OperandOrder) -> Vec<u64> {
    let mut mem = Memory::new();
    let bytes = |v: &[u64]| v.iter().flat_map(|b| b.to_le_bytes()).collect::<Vec<u8>>();
    let mut args = Vec::new();
    for (name, v) in ["x", "y", "z"].iter().zip(ins) {
        args.push(Arg::Buffer(mem.alloc(*name, &bytes(v)).unwrap()));
    }
    let out = mem.alloc("out", &vec![0; N * 8]).unwrap();
    args.push(Arg::Buffer(out));
    let opts = Options { f64_operand_order: order, threads: Some(1), ..Options::default() };
    let cfg = LaunchConfig::linear((N as u32).div_ceil(BLOCK), BLOCK);
    launch(m, entry, &cfg, &args, &mut mem, &opts).unwrap_or_else(|e| panic!("{entry}: {e}"));
    mem.bytes(out).unwrap().chunks(8).map(|c| u64::from_le_bytes(c.try_into().unwrap())).collect()
}

/// The first element where `got` differs from `want`, rendered with its operands.
fn first_difference(ins: &[Vec<u64>; 3], want: &[u64], got: &[u64]) -> Option<String> {
    (0..N).find(|&i| want[i] != got[i]).map(|i| {
        format!(
            "x = {:#018x}, y = {:#018x}, z = {:#018x}: expected {:#018x}, got {:#018x} ({} of {N} differ)",
            ins[0][i],
            ins[1][i],
            ins[2][i],
            want[i],
            got[i],
            (0..N).filter(|&i| want[i] != got[i]).count()
        )
    })
}

/// `out` after kernel `name` of `module` ran in kir's interpreter on the inputs `ins`.
fn interpret(module: &Module, name: &str, ins: &[Vec<u64>; 3]) -> Vec<u64> {
    let out = module
        .kernel(name)
        .unwrap()
        .launch((N as u32).div_ceil(BLOCK), BLOCK)
        .arg("x", &ins[0])
        .arg("y", &ins[1])
        .arg("z", &ins[2])
        .arg("out", vec![0u64; N])
        .run()
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    out.read::<u64>("out").unwrap()
}

#[test]
fn kirs_f64_nans_are_the_interpreters_in_either_operand_order() {
    let (src, names) = kernels();
    let module = Module::parse(&src).unwrap_or_else(|e| panic!("{e}"));
    let ptx = module.ptx(SmVersion::Sm90).unwrap_or_else(|e| panic!("{e}"));
    let emu = kir_ptx_emu::Module::parse(&ptx).unwrap_or_else(|e| panic!("{e}"));
    let ins = inputs();
    let mut failures = Vec::new();
    for name in &names {
        let want = interpret(&module, name, &ins);
        for order in [F64OperandOrder::Ptx, F64OperandOrder::Swapped] {
            let got = emulate(&emu, &ptx_entry_name(name), &ins, order);
            if let Some(d) = first_difference(&ins, &want, &got) {
                let inst = src.split(&format!("@{name}(")).nth(1).and_then(|s| s.lines().find(|l| l.contains("%r =")));
                failures.push(format!("{name} `{}` in {order:?} order: {d}", inst.unwrap_or_default().trim()));
            }
        }
    }
    assert!(failures.is_empty(), "{} of {} runs differ:\n{}", failures.len(), names.len() * 2, failures.join("\n"));
    // The two-NaN cases the check is about are among the inputs.
    let two_nans = (0..N).filter(|&i| is_nan(ins[0][i]) && is_nan(ins[1][i]) && ins[0][i] != ins[1][i]).count();
    assert_eq!(two_nans, 12 * 8);
}

/// `ops` as plain PTX, one entry each (`k_add`, ...): `fd4 = op fd1, fd2[, fd3]` on the bits of
/// `x[i]`, `y[i]`, `z[i]`.
fn plain_ptx(ops: &[(&str, &str)]) -> String {
    let mut ptx = String::from(".version 8.0\n.target sm_90\n.address_size 64\n");
    for (name, inst) in ops {
        ptx.push_str(&format!(
            ".visible .entry k_{name}(.param .u64 x, .param .u64 y, .param .u64 z, .param .u64 out)
{{
    .reg .b32 %r<4>; .reg .b64 %rd<12>; .reg .f64 %fd<5>;
    mov.u32 %r1, %ctaid.x;
    mov.u32 %r2, %ntid.x;
    mov.u32 %r3, %tid.x;
    mad.lo.u32 %r1, %r1, %r2, %r3;
    mul.wide.u32 %rd1, %r1, 8;
    ld.param.u64 %rd2, [x];
    ld.param.u64 %rd3, [y];
    ld.param.u64 %rd4, [z];
    ld.param.u64 %rd5, [out];
    add.s64 %rd6, %rd2, %rd1;
    add.s64 %rd7, %rd3, %rd1;
    add.s64 %rd8, %rd4, %rd1;
    add.s64 %rd9, %rd5, %rd1;
    ld.global.f64 %fd1, [%rd6];
    ld.global.f64 %fd2, [%rd7];
    ld.global.f64 %fd3, [%rd8];
    {inst};
    st.global.f64 [%rd9], %fd4;
    ret;
}}
"
        ));
    }
    ptx
}

/// The first NaN of `ops`, quieted.
fn first_nan(ops: &[u64]) -> Option<u64> {
    ops.iter().find(|&&b| is_nan(b)).map(|b| b | 1 << 51)
}

#[test]
fn plain_ptx_two_nans_depend_on_the_operand_order() {
    let ops = [
        ("add", "add.rn.f64 %fd4, %fd1, %fd2"),
        ("sub", "sub.rn.f64 %fd4, %fd1, %fd2"),
        ("mul", "mul.rn.f64 %fd4, %fd1, %fd2"),
        ("min", "min.f64 %fd4, %fd1, %fd2"),
        ("max", "max.f64 %fd4, %fd1, %fd2"),
        ("fma", "fma.rn.f64 %fd4, %fd1, %fd2, %fd3"),
    ];
    let emu = kir_ptx_emu::Module::parse(&plain_ptx(&ops)).unwrap_or_else(|e| panic!("{e}"));
    let kir_src = |inst: &str| kernel_text("k", inst);
    let ins = inputs();
    for (name, _) in ops {
        let inst = match name {
            "fma" => "fma.f64 %xv, %yv, %zv".to_string(),
            op => format!("{op}.f64 %xv, %yv"),
        };
        let module = Module::parse(&kir_src(&inst)).unwrap();
        let want = interpret(&module, "k", &ins);
        let entry = format!("k_{name}");
        let ptx_order = emulate(&emu, &entry, &ins, F64OperandOrder::Ptx);
        let swapped = emulate(&emu, &entry, &ins, F64OperandOrder::Swapped);
        // PTX order is kir's rule.
        assert_eq!(first_difference(&ins, &want, &ptx_order), None, "{name} in PTX order");
        // Swapped, the NaN of the op's other order wins: `b`'s and `a`'s exchange places.
        let mut reordered = 0;
        for i in 0..N {
            let (a, b, c) = (ins[0][i], ins[1][i], ins[2][i]);
            let (in_ptx, in_swapped) = match name {
                "fma" => (first_nan(&[b, c, a]), first_nan(&[a, c, b])),
                "min" | "max" if is_nan(a) && is_nan(b) => (first_nan(&[b]), first_nan(&[a])),
                "min" | "max" => (None, None),
                _ => (first_nan(&[b, a]), first_nan(&[a, b])),
            };
            if in_ptx != in_swapped {
                reordered += 1;
                assert_eq!(
                    (ptx_order[i], swapped[i]),
                    (in_ptx.unwrap(), in_swapped.unwrap()),
                    "{name}: x = {a:#018x}, y = {b:#018x}, z = {c:#018x}"
                );
            } else {
                assert_eq!(ptx_order[i], swapped[i], "{name}: x = {a:#018x}, y = {b:#018x}, z = {c:#018x}");
            }
        }
        // Two of the four NaNs, different, in the places the swap exchanges: `a` and `b` (any
        // `z`: 12 * 8); for fma also `a` and `c` or `b` and `c`, the other one a number (2 * 4 * 12).
        let expected = if name == "fma" { 12 * 8 + 2 * 4 * 12 } else { 12 * 8 };
        assert_eq!(reordered, expected, "{name}: inputs whose NaN the swap changes");
    }
}
