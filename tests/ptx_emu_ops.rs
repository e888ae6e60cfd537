//! Every-op differential test of the PTX emulator (`kir-ptx-emu`) against kir's interpreter.
//!
//! What it guarantees, for every op the verifier accepts with every type and modifier
//! (`kir_ir::op::all_ops`, filtered by the verifier exactly as `backend-ptx/tests/ptx_ops.rs`
//! does) and every memory access form:
//! - A kernel reads the op's operands per thread from input buffers (so one multi-block launch
//!   evaluates the op on 1024 operand tuples: edge values — ±0, ±1, min/max integers, NaNs with
//!   payloads, ±inf, subnormals, values at f16/bf16/f32/integer rounding and conversion
//!   boundaries, shift amounts around the width, divisors 0 and -1 — their exhaustive pairs for
//!   binary ops, the product of the first eight edges of each operand for ternary ops, then
//!   random bits and random "nice" values; `fma` also gets addends that cancel the product) and
//!   stores the result. A second kernel per op with two or more operands takes one operand (the
//!   position rotating from op to op) as an immediate: the backend's constant forms.
//! - The kernel runs in kir's interpreter (`kir_interp::launch`), and its PTX emitted for sm_90
//!   and for sm_80 (`kir_backend_ptx::emit_module` of the checked module holding it) runs in the emulator. Outputs must agree bit for
//!   bit (NaN vs NaN matches, any payload; data movement — loads, stores, shuffles, exchanges —
//!   must keep payloads too), except approximate ops, which must agree within the tolerance
//!   `harness/src/tolerance.rs` derives for them, or within the op's documented PTX error bound
//!   (`kir_ir::eval::within_error_bound`); for inputs outside the domain over which the PTX ISA
//!   bounds the error (`div.approx.f32` by |b| outside [2^-126, 2^126], `sin`/`cos` outside
//!   [-100π, 100π]) any result is accepted.
//! - Also: special registers over a 3-D launch; warp shuffles (every mode and type, per-lane
//!   source lanes and deltas including out-of-range ones, full and partial member masks); votes
//!   (`any`/`all`/`ballot`, full and partial masks); atomics on global and shared memory (every op
//!   and element type, the returned old values and the final memory, on distinct addresses and
//!   on contended ones — there the returned values are compared too, which relies on both engines
//!   serializing a warp's lanes in ascending order, warps in order and blocks in index order);
//!   loads, stores, `offset`, `offset.bytes` and `ptrcast` for every element
//!   type and index type (negative and wrapping `u64` indices), in global and shared (static and
//!   dynamic) memory.
//! - Vectors, vector memory, `mma`, `ldmatrix` and `cp.async` are tested against results computed
//!   independently in `tests/ptx_emu_vectors.rs`, not here.
//! - An emulator panic is a failure of that case (reported with its message), not of the run.
//! - Every disagreement is printed with the op, the target, the inputs and both results; an
//!   emulator that cannot load or run the PTX is a failure naming the PTX line. The test fails on
//!   any of them. `corrupted_ptx_is_caught` checks that the comparison itself can fail.
//!   `KIR_PTX_EMU_REPORT_DIR=DIR` writes every report and all PTX run to DIR;
//!   `KIR_PTX_EMU_SHOW=N` prints N mismatching elements per case (default 3).

use kir_backend_ptx::{PtxOptions, SmVersion};
use kir_harness::compare::{elements_match, render_element, Strictness};
use kir_harness::directives::Tolerance;
use kir_interp::Buffer;
use kir_ir::{Constant, Kernel, Op, Operand, ScalarType, Span, Type};
use std::fmt::Write as _;

use ScalarType as S;
mod verified_launch;

/// Threads per pure-op launch: 4 blocks of 256.
const N: usize = 1024;
const BLOCK: u32 = 256;
/// Detailed mismatches printed per case (`KIR_PTX_EMU_SHOW` overrides).
fn show_per_case() -> usize {
    std::env::var("KIR_PTX_EMU_SHOW").ok().and_then(|v| v.parse().ok()).unwrap_or(3)
}

// ---------------------------------------------------------------------------------------------
// Input values
// ---------------------------------------------------------------------------------------------

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        kir_ir::generate::splitmix64(&mut self.0)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn f32b(v: f32) -> u64 {
    v.to_bits() as u64
}
fn f64b(v: f64) -> u64 {
    v.to_bits()
}

/// Bits of `v` rounded to the float type `t` (nearest even).
fn float_bits(t: ScalarType, v: f64) -> u64 {
    match t {
        S::F16 => half::f16::from_f64(v).to_bits() as u64,
        S::BF16 => half::bf16::from_f64(v).to_bits() as u64,
        S::F32 => f32b(v as f32),
        _ => f64b(v),
    }
}

fn to_f64(t: ScalarType, bits: u64) -> f64 {
    Constant::from_bits(t, bits).as_f64().unwrap_or(f64::NAN)
}

/// Edge values of a type (raw bits). The first `core_len(t)` are the "core" set whose pairs a
/// binary op sees exhaustively.
fn edges(t: ScalarType) -> Vec<u64> {
    let v: Vec<u64> = match t {
        S::Pred => vec![0, 1],
        S::U8 | S::S8 => vec![0, 1, 2, 0x7f, 0x80, 0xff, 0xfe, 7, 8, 9, 0x81, 3, 0x10, 31, 32, 33, 0x40, 0xc0],
        S::U16 | S::S16 => vec![
            0, 1, 2, 0x7fff, 0x8000, 0xffff, 0xfffe, 15, 16, 17, 0xff, 0x100, 0x8001, 7, 8, 31, 32, 33, 0x7f, 0x80,
            0x1234, 0xfedc,
        ],
        S::U32 | S::S32 => vec![
            0,
            1,
            2,
            0x7fff_ffff,
            0x8000_0000,
            0xffff_ffff,
            0xffff_fffe,
            31,
            32,
            33,
            7,
            8,
            0x8000_0001,
            0xff,
            0xffff,
            0x1234_5678,
            63,
            64,
            65,
            9,
            15,
            16,
            17,
            0x80,
            0x100,
            0x7fff,
            0x8000,
            0x1_0000,
            0xdead_beef,
            3,
        ],
        S::U64 | S::S64 => vec![
            0,
            1,
            2,
            0x7fff_ffff_ffff_ffff,
            0x8000_0000_0000_0000,
            u64::MAX,
            u64::MAX - 1,
            63,
            64,
            65,
            0xffff_ffff,
            0x1_0000_0000,
            0x8000_0000_0000_0001,
            0x8000_0000,
            0x1234_5678_9abc_def0,
            31,
            32,
            33,
            0x7fff_ffff,
            (1 << 53) + 1,
            0xffff_ffff_0000_0000,
            7,
            0xff,
            3,
        ],
        S::F16 => vec![
            0x0000, 0x8000, 0x3c00, 0xbc00, 0x7c00, 0xfc00, 0x7e00, 0x0001, 0x8001, 0x03ff, 0x0400, 0x7bff, 0xfbff,
            0x3800, 0x3e00, 0x4100, 0xc100, 0x7d01, 0xfe01, 0x3c01, 0x3bff, 0x5800, 0x57ff, 0x7800, 0x7a00, 0x4200,
            0xc700, 0x2e66, 0x8400, 0xbe00, 0x5bf8, 0x4600,
        ],
        S::BF16 => vec![
            0x0000, 0x8000, 0x3f80, 0xbf80, 0x7f80, 0xff80, 0x7fc0, 0x0001, 0x8001, 0x007f, 0x0080, 0x7f7f, 0xff7f,
            0x3f00, 0x3fc0, 0x4020, 0xc020, 0x7fa1, 0xffc1, 0x3f81, 0x3f7f, 0x4f00, 0xcf00, 0x4f80, 0x5f00, 0xdf00,
            0x5f80, 0x4780, 0x477f, 0x3dcd, 0x4040, 0x8080, 0xbfc0,
        ],
        S::F32 => vec![
            f32b(0.0),
            f32b(-0.0),
            f32b(1.0),
            f32b(-1.0),
            f32b(f32::INFINITY),
            f32b(f32::NEG_INFINITY),
            0x7fc0_0000,
            1,
            0x8000_0001,
            0x007f_ffff,
            f32b(f32::MIN_POSITIVE),
            f32b(f32::MAX),
            f32b(f32::MIN),
            f32b(0.5),
            f32b(1.5),
            f32b(2.5),
            f32b(-2.5),
            0x7fa0_0001,
            0xffc0_0001,
            0x3f80_0001,
            0x3f7f_ffff,
            f32b(-0.5),
            f32b(3.0),
            f32b(-7.0),
            // conversion limits
            f32b(2147483648.0),
            f32b(-2147483648.0),
            f32b(2147483520.0),
            f32b(4294967296.0),
            f32b(4294967040.0),
            f32b(9.223372e18),
            f32b(-9.223372e18),
            f32b(1.8446744e19),
            f32b(255.5),
            f32b(256.0),
            f32b(-128.5),
            f32b(-129.0),
            f32b(65504.0),
            f32b(65520.0),
            f32b(65536.0),
            f32b(32767.5),
            f32b(-32768.5),
            // f16 / bf16 rounding boundaries (ties and just past them)
            0x3f80_1000,
            0x3f80_3000,
            0x3f80_1001,
            0x3f80_8000,
            0x3f81_8000,
            0x3f80_8001,
            0x3380_0000,
            0x3300_0000,
            0x3340_0000,
            0x3880_0000,
            0x387f_c000,
            0x0080_8000,
            // misc
            f32b(0.1),
            f32b(1e10),
            f32b(1e-10),
            f32b(-1.5),
            f32b(0.49999997),
            f32b(100.0),
            f32b(-100.0),
            f32b(1e-40),
        ],
        S::F64 => vec![
            f64b(0.0),
            f64b(-0.0),
            f64b(1.0),
            f64b(-1.0),
            f64b(f64::INFINITY),
            f64b(f64::NEG_INFINITY),
            0x7ff8_0000_0000_0000,
            1,
            0x8000_0000_0000_0001,
            0x000f_ffff_ffff_ffff,
            f64b(f64::MIN_POSITIVE),
            f64b(f64::MAX),
            f64b(f64::MIN),
            f64b(0.5),
            f64b(1.5),
            f64b(2.5),
            f64b(-2.5),
            0x7ff4_0000_0000_0001,
            0xfff8_0000_0000_0001,
            f64b(1.0 + f64::EPSILON),
            f64b(1.0 - f64::EPSILON / 2.0),
            f64b(-0.5),
            f64b(3.0),
            f64b(-7.0),
            // f32 rounding boundaries
            f64b(1.0 + 2f64.powi(-24)),
            f64b(1.0 + 3.0 * 2f64.powi(-24)),
            f64b(1.0 + 2f64.powi(-24) + 2f64.powi(-52)),
            f64b(f32::MAX as f64 * (1.0 + 2f64.powi(-25))),
            f64b(f32::MAX as f64 * (1.0 + 2f64.powi(-24))),
            f64b(2f64.powi(-150)),
            f64b(3.0 * 2f64.powi(-150)),
            f64b(2f64.powi(-149)),
            f64b(2f64.powi(-126) * (1.0 - 2f64.powi(-24))),
            f64b(1e-320),
            // f16/bf16 boundaries
            f64b(1.0 + 2f64.powi(-11)),
            f64b(1.0 + 2f64.powi(-8)),
            f64b(65520.0),
            f64b(2f64.powi(-25)),
            // conversion limits
            f64b(2147483648.0),
            f64b(-2147483648.0),
            f64b(2147483647.5),
            f64b(-2147483648.5),
            f64b(4294967295.5),
            f64b(4294967296.0),
            f64b(2f64.powi(63)),
            f64b(2f64.powi(63) - 1024.0),
            f64b(-(2f64.powi(63))),
            f64b(-(2f64.powi(63)) - 2048.0),
            f64b(1.8446744073709552e19),
            f64b(9007199254740993.0),
            f64b(255.5),
            f64b(-128.5),
            f64b(65535.5),
            f64b(0.1),
            f64b(1e300),
            f64b(-1e-300),
            f64b(0.49999999999999994),
        ],
    };
    v.into_iter().map(|b| b & t.mask()).collect()
}

/// How many leading edge values form the core set.
fn core_len(t: ScalarType) -> usize {
    match t {
        S::Pred => 2,
        S::U8 | S::S8 => 12,
        S::U16 | S::S16 => 14,
        S::U32 | S::S32 => 16,
        S::U64 | S::S64 => 16,
        S::F16 | S::BF16 => 16,
        S::F32 | S::F64 => 20,
    }
}

/// A random value of `t`: random bits, a random normal number near 1, a small half-integer, or an
/// edge value.
fn random_value(t: ScalarType, rng: &mut Rng) -> u64 {
    let e = edges(t);
    match rng.below(4) {
        0 => e[rng.below(e.len())],
        1 => rng.next() & t.mask(),
        2 if t.is_float() => {
            let k = rng.below(129) as i64 - 64;
            float_bits(t, k as f64 / 2.0)
        }
        2 => ((rng.below(129) as i64 - 64) as u64) & t.mask(),
        _ if t.is_float() => {
            let exp = rng.below(41) as i32 - 20;
            let frac = (rng.next() >> 11) as f64 / (1u64 << 53) as f64;
            let sign = if rng.next() & 1 == 0 { 1.0 } else { -1.0 };
            float_bits(t, sign * 2f64.powi(exp) * (1.0 + frac))
        }
        _ => rng.next() & t.mask() & 0xffff,
    }
}

/// Operand tuples for an op with operand types `tys`: for one and two operands the exhaustive
/// product of the core edge sets (all edges for one operand), then random values.
fn operand_tuples(tys: &[ScalarType], seed: u64) -> Vec<Vec<u64>> {
    let mut rng = Rng(seed);
    let mut out: Vec<Vec<u64>> = Vec::with_capacity(N);
    match tys {
        [a] => {
            for v in edges(*a) {
                out.push(vec![v]);
            }
        }
        [a, b] => {
            let (ea, eb) = (edges(*a), edges(*b));
            let (ca, cb) = (&ea[..core_len(*a).min(ea.len())], &eb[..core_len(*b).min(eb.len())]);
            for y in cb {
                for x in ca {
                    out.push(vec![*x, *y]);
                }
            }
            // Every edge of one operand against a random core value of the other.
            for x in &ea {
                out.push(vec![*x, cb[rng.below(cb.len())]]);
            }
            for y in &eb {
                out.push(vec![ca[rng.below(ca.len())], *y]);
            }
        }
        _ => {
            // Three operands: the product of the first 8 edges of each, then every edge of each
            // operand against random core values of the others.
            let es: Vec<Vec<u64>> = tys.iter().map(|t| edges(*t)).collect();
            let heads: Vec<&[u64]> = es.iter().map(|e| &e[..8.min(e.len())]).collect();
            for z in heads[2] {
                for y in heads[1] {
                    for x in heads[0] {
                        out.push(vec![*x, *y, *z]);
                    }
                }
            }
            for (j, e) in es.iter().enumerate() {
                for v in e {
                    let tup = (0..3)
                        .map(|l| {
                            if l == j {
                                *v
                            } else {
                                let c = &es[l][..core_len(tys[l]).min(es[l].len())];
                                c[rng.below(c.len())]
                            }
                        })
                        .collect();
                    out.push(tup);
                }
            }
        }
    }
    out.truncate(N * 3 / 4);
    while out.len() < N {
        out.push(tys.iter().map(|t| random_value(*t, &mut rng)).collect());
    }
    out
}

/// For `fma`: tuples whose addend cancels the rounded product (the exactness of the single
/// rounding shows in the result).
fn fma_cancellation(t: ScalarType, tuples: &mut [Vec<u64>], seed: u64) {
    let mut rng = Rng(seed);
    let start = N * 7 / 8;
    for tup in tuples[start..].iter_mut() {
        let a = random_value(t, &mut rng);
        let b = random_value(t, &mut rng);
        let p = to_f64(t, a) * to_f64(t, b);
        tup[0] = a;
        tup[1] = b;
        tup[2] = float_bits(t, -p) ^ if rng.next() & 3 == 0 { 1 } else { 0 };
    }
}

// ---------------------------------------------------------------------------------------------
// Cases
// ---------------------------------------------------------------------------------------------

/// How an output buffer is compared.
#[derive(Clone, Copy, Debug)]
enum Check {
    /// Bit for bit, NaN payloads included (data movement: loads, stores, shuffles, exchanges).
    Bits,
    /// Bit for bit (NaN vs NaN matches for float elements).
    Exact,
    /// An approximate op: within the derived tolerance, or within the op's documented bound for
    /// these operands.
    Approx(Op, Tolerance),
}

/// One kernel, its launch and its buffers.
struct Case {
    /// What is tested, for reports (`add.rn.f32`, `atom.add u32 global contended`, ...).
    what: String,
    kernel: Kernel,
    grid: [u32; 3],
    block: [u32; 3],
    dynamic_shared: u32,
    /// Initial contents of every buffer, one per pointer parameter, in parameter order.
    buffers: Vec<Buffer>,
    /// Buffer names (the parameter names).
    names: Vec<String>,
    /// Indices of the buffers holding per-thread operands (shown in reports).
    inputs: Vec<usize>,
    /// Buffers compared after the run, with how.
    outputs: Vec<(usize, Check)>,
    /// For a pure op: each thread's operand bits (immediates included), for error bounds.
    tuples: Vec<Vec<u64>>,
}

/// The PTX of a module holding only `k`, checked first (the emitter takes only checked modules).
/// The cases' member masks come from input buffers, which the static checks cannot read: they are
/// the test's claim (`assume_masks()`), checked at run time by the interpreter, which runs every
/// case first.
fn emit_kernel(k: &Kernel, opts: &PtxOptions) -> Result<String, Vec<kir_ir::Diagnostic>> {
    let mut k = k.clone();
    k.assume_masks = Some(kir_ir::Span::DUMMY);
    let m = kir_ir::Module { kernels: vec![k], ..kir_ir::Module::default() };
    let checked = kir_ir::verify::check(m).map_err(|d| d.into_vec())?;
    kir_backend_ptx::emit_module(&checked, opts)
}

fn parse_kernel(src: &str) -> Kernel {
    let m = kir_ir::parse(src).unwrap_or_else(|d| panic!("test kernel does not parse: {d:?}\n{src}"));
    let k = m.kernels.into_iter().next().expect("one kernel");
    let errs: Vec<_> = kir_ir::verify::verify_body(&k, None, None).0.into_iter().filter(|d| d.is_error()).collect();
    assert!(errs.is_empty(), "test kernel does not verify: {errs:?}\n{src}");
    k
}

/// Storage type of a value of type `t` in a buffer.
fn storage(t: ScalarType) -> ScalarType {
    if t == S::Pred {
        S::U8
    } else {
        t
    }
}

/// Every pure op the verifier accepts (with register operands), as `backend-ptx/tests/ptx_ops.rs`
/// enumerates them.
fn accepted_ops() -> Vec<Op> {
    let mut out = Vec::new();
    for op in kir_ir::op::all_ops() {
        let sig = op.signature();
        let mut k = Kernel::new("probe");
        let b = k.add_block("entry");
        let mut args = Vec::new();
        for (i, t) in sig.args.iter().enumerate() {
            let Some(Type::Scalar(t)) = t else { continue };
            args.push(Operand::Value(k.add_param(format!("a{i}"), Type::Scalar(*t))));
        }
        if args.len() != op.arity() {
            continue;
        }
        let result = sig.result.filter(|_| sig.has_result).map(|t| ("r".into(), t));
        k.append_inst(b, op, args, result, Span::DUMMY);
        if kir_ir::verify::verify_body(&k, None, None).0.iter().any(|d| d.is_error()) {
            continue;
        }
        out.push(op);
    }
    out
}

/// The derived tolerance of a one-op kernel (`harness/src/tolerance.rs`).
fn op_tolerance(op: Op) -> Tolerance {
    let mut k = Kernel::new("t");
    let b = k.add_block("entry");
    let sig = op.signature();
    let args: Vec<Operand> = sig
        .args
        .iter()
        .enumerate()
        .map(|(i, t)| Operand::Value(k.add_param(format!("a{i}"), t.expect("pure op"))))
        .collect();
    k.append_inst(b, op, args, sig.result.map(|t| ("r".into(), t)), Span::DUMMY);
    kir_harness::tolerance::derived_tolerance(&[], &k)
}

/// A pure-op case: operands from buffers `in0..`, or operand `const_at` as the immediate
/// `konst`; the result stored to `out`.
fn pure_case(n: usize, op: Op, const_at: Option<(usize, Constant)>) -> Case {
    let sig = op.signature();
    let tys: Vec<ScalarType> = sig.args.iter().map(|t| t.and_then(|t| t.scalar()).expect("pure op")).collect();
    let rty = sig.result.and_then(|t| t.scalar()).expect("pure op result");
    let mut params = Vec::new();
    let mut body = String::from("  %i = global_id.x : u32\n");
    let mut operands = Vec::new();
    let mut buffers = Vec::new();
    let mut names = Vec::new();
    let mut inputs = Vec::new();
    let mut tuples = operand_tuples(&tys, 0x5eed ^ (n as u64) << 8);
    if matches!(op, Op::Fma(..)) {
        fma_cancellation(tys[0], &mut tuples, n as u64);
    }
    for (j, t) in tys.iter().enumerate() {
        if let Some((at, c)) = const_at {
            if at == j {
                operands.push(kir_ir::text::printer::print_constant(c));
                continue;
            }
        }
        params.push(format!("%in{j}: ptr<global, {}>", storage(*t)));
        if *t == S::Pred {
            let _ = writeln!(body, "  %b{j} = load %in{j}[%i]\n  %x{j} = ne.u8 %b{j}, 0");
        } else {
            let _ = writeln!(body, "  %x{j} = load %in{j}[%i]");
        }
        operands.push(format!("%x{j}"));
        inputs.push(buffers.len());
        names.push(format!("in{j}"));
        buffers.push(Buffer::from_bits(storage(*t), tuples.iter().map(|tup| tup[j])));
    }
    params.push(format!("%out: ptr<global, {}>", storage(rty)));
    let _ = writeln!(body, "  %r = {} {}", op.mnemonic(), operands.join(", "));
    if rty == S::Pred {
        body.push_str("  %rb = select.u8 %r, 1, 0\n  store %out[%i], %rb\n");
    } else {
        body.push_str("  store %out[%i], %r\n");
    }
    let out = buffers.len();
    names.push("out".into());
    buffers.push(Buffer::zeros(storage(rty), N));
    let kname = format!("op{n}{}", if const_at.is_some() { "c" } else { "" });
    let src = format!("kernel @{kname}({}) {{\nentry:\n{body}  ret\n}}\n", params.join(", "));
    let check = if op.is_approx() { Check::Approx(op, op_tolerance(op)) } else { Check::Exact };
    let what = match const_at {
        Some((at, c)) => format!("{} (operand {at} = {})", op.mnemonic(), kir_ir::text::printer::print_constant(c)),
        None => op.mnemonic(),
    };
    Case {
        what,
        kernel: parse_kernel(&src),
        grid: [(N as u32) / BLOCK, 1, 1],
        block: [BLOCK, 1, 1],
        dynamic_shared: 0,
        buffers,
        names,
        inputs,
        outputs: vec![(out, check)],
        tuples: tuples
            .iter()
            .map(|t| match const_at {
                Some((at, c)) => t.iter().enumerate().map(|(j, v)| if j == at { c.bits } else { *v }).collect(),
                None => t.clone(),
            })
            .collect(),
    }
}

fn pure_cases() -> Vec<Case> {
    // The vector moves (`vec`, `extract`, `insert`) are pure but not scalar ops: they have their
    // own tests in tests/ptx_emu_vectors.rs.
    let ops: Vec<Op> = accepted_ops().into_iter().filter(|op| op.is_pure() && !op.is_vector_move()).collect();
    assert!(ops.len() > 500, "only {} pure ops verified", ops.len());
    let mut cases = Vec::new();
    for (n, op) in ops.iter().enumerate() {
        cases.push(pure_case(n, *op, None));
        // The immediate form: one operand (the position rotating with the op) a constant edge
        // value.
        let sig = op.signature();
        let tys: Vec<ScalarType> = sig.args.iter().filter_map(|t| t.and_then(|t| t.scalar())).collect();
        if tys.len() >= 2 {
            let at = n % tys.len();
            let e = edges(tys[at]);
            let c = Constant::from_bits(tys[at], e[(n / tys.len()) % e.len()]);
            cases.push(pure_case(n, *op, Some((at, c))));
        }
    }
    cases
}

/// The role of a buffer in a structured case.
enum Role {
    /// Read by the kernel; shown in reports.
    In,
    /// Compared after the run.
    Out(Check),
    /// Read and compared (atomics' memory).
    InOut(Check),
}

/// A case from kernel text; `bufs` in parameter order (every parameter a buffer).
fn text_case(
    what: String,
    src: &str,
    grid: [u32; 3],
    block: [u32; 3],
    dynamic_shared: u32,
    bufs: Vec<(&str, Buffer, Role)>,
) -> Case {
    let kernel = parse_kernel(src);
    let mut c = Case {
        what,
        kernel,
        grid,
        block,
        dynamic_shared,
        buffers: vec![],
        names: vec![],
        inputs: vec![],
        outputs: vec![],
        tuples: vec![],
    };
    for (i, (name, b, role)) in bufs.into_iter().enumerate() {
        c.names.push(name.to_string());
        c.buffers.push(b);
        match role {
            Role::In => c.inputs.push(i),
            Role::Out(k) => c.outputs.push((i, k)),
            Role::InOut(k) => {
                c.inputs.push(i);
                c.outputs.push((i, k))
            }
        }
    }
    c
}

/// A random permutation of `0..n`.
fn permutation(n: usize, rng: &mut Rng) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        v.swap(i, rng.below(i + 1));
    }
    v
}

/// Random values of `t` (edges first).
fn values(t: ScalarType, n: usize, seed: u64) -> Vec<u64> {
    let mut rng = Rng(seed);
    let e = edges(t);
    (0..n).map(|i| if i < e.len() { e[i] } else { random_value(t, &mut rng) }).collect()
}

/// Special registers over a 3-D launch with partial warps.
fn special_cases() -> Vec<Case> {
    let regs = [
        "tid.x",
        "tid.y",
        "tid.z",
        "ctaid.x",
        "ctaid.y",
        "ctaid.z",
        "ntid.x",
        "ntid.y",
        "ntid.z",
        "nctaid.x",
        "nctaid.y",
        "nctaid.z",
        "global_id.x",
        "global_id.y",
        "global_id.z",
        "laneid",
        "warpid",
    ];
    let mut body = String::from(
        "  %tx = tid.x : u32\n  %ty = tid.y : u32\n  %tz = tid.z : u32\n  %bx = ctaid.x : u32\n  %by = ctaid.y : u32\n  %bz = ctaid.z : u32\n  %nx = ntid.x : u32\n  %ny = ntid.y : u32\n  %nz = ntid.z : u32\n  %gx = nctaid.x : u32\n  %gy = nctaid.y : u32\n\
         %t1 = mad.u32 %tz, %ny, %ty\n  %t2 = mad.u32 %t1, %nx, %tx\n  %b1 = mad.u32 %bz, %gy, %by\n  %b2 = mad.u32 %b1, %gx, %bx\n  %bs1 = mul.u32 %nx, %ny\n  %bs = mul.u32 %bs1, %nz\n  %lin = mad.u32 %b2, %bs, %t2\n",
    );
    for (j, r) in regs.iter().enumerate() {
        let _ = writeln!(
            body,
            "  %s{j} = {r} : u32\n  %o{j} = mad.u32 %lin, {}, {j}\n  store %out[%o{j}], %s{j}",
            regs.len()
        );
    }
    let src = format!("kernel @special(%out: ptr<global, u32>) {{\nentry:\n{body}  ret\n}}\n");
    let mut cases = Vec::new();
    for (grid, block) in [([3, 2, 2], [7, 5, 3]), ([2, 1, 1], [64, 1, 1]), ([1, 3, 1], [1, 1, 33])] {
        let n = grid.iter().product::<u32>() as usize * block.iter().product::<u32>() as usize;
        cases.push(text_case(
            format!("special registers grid{grid:?} block{block:?}"),
            &src,
            grid,
            block,
            0,
            vec![("out", Buffer::zeros(S::U32, n * regs.len()), Role::Out(Check::Bits))],
        ));
    }
    cases
}

/// Loads a value of type `t` from `%{buf}[%i]` into `%{dst}` (pred through a u8 buffer).
fn load_line(t: ScalarType, dst: &str, buf: &str) -> String {
    if t == S::Pred {
        format!("  %{dst}.b = load %{buf}[%i]\n  %{dst} = ne.u8 %{dst}.b, 0\n")
    } else {
        format!("  %{dst} = load %{buf}[%i]\n")
    }
}

/// Stores `%{src}` of type `t` to `%{buf}[%i]`.
fn store_line(t: ScalarType, src: &str, buf: &str) -> String {
    if t == S::Pred {
        format!("  %{src}.b = select.u8 %{src}, 1, 0\n  store %{buf}[%i], %{src}.b\n")
    } else {
        format!("  store %{buf}[%i], %{src}\n")
    }
}

const SHFL_MODES: [&str; 4] = ["down", "up", "bfly", "idx"];

/// Shuffles: every mode and type; full mask (a register) with per-lane lane/delta operands over
/// the whole u32 range, and half-warp masks (immediates) inside divergent branches.
fn shfl_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let accepted = accepted_ops();
    for (mi, mode) in SHFL_MODES.iter().enumerate() {
        for t in ScalarType::ALL {
            let op = kir_ir::op::Op::Shfl(
                [kir_ir::ShflMode::Down, kir_ir::ShflMode::Up, kir_ir::ShflMode::Bfly, kir_ir::ShflMode::Idx][mi],
                t,
            );
            if !accepted.contains(&op) {
                continue;
            }
            let st = storage(t);
            let seed = (mi * 16 + t as usize) as u64;
            let n = 512;
            let mut rng = Rng(seed);
            // Full mask: per warp a different lane/delta pattern.
            let lanes: Vec<u64> = (0..n)
                .map(|i| match (i / 32) % 8 {
                    0 => rng.below(32) as u64,
                    1 => rng.below(64) as u64,
                    2 => 1,
                    3 => 16,
                    4 => 31,
                    5 => 32,
                    6 => 0xffff_ffff,
                    _ => rng.next() & 0xffff_ffff,
                })
                .collect();
            let vals = values(st, n, seed + 1000);
            let src = format!(
                "kernel @shfl_{mode}_{t}(%v: ptr<global, {st}>, %lane: ptr<global, u32>, %mask: ptr<global, u32>, %out: ptr<global, {st}>) {{\nentry:\n  %i = global_id.x : u32\n{}  %l = load %lane[%i]\n  %m = load %mask[%i]\n  %r = shfl.{mode}.{t} %x, %l, %m\n{}  ret\n}}\n",
                load_line(t, "x", "v"),
                store_line(t, "r", "out")
            );
            cases.push(text_case(
                format!("shfl.{mode}.{t} full mask"),
                &src,
                [2, 1, 1],
                [256, 1, 1],
                0,
                vec![
                    ("v", Buffer::from_bits(st, vals.iter().copied()), Role::In),
                    ("lane", Buffer::from_bits(S::U32, lanes), Role::In),
                    ("mask", Buffer::from_bits(S::U32, (0..n).map(|_| 0xffff_ffffu64)), Role::In),
                    ("out", Buffer::zeros(st, n), Role::Out(Check::Bits)),
                ],
            ));
            // Half-warp masks: lanes 0-15 with 0xffff, lanes 16-31 with 0xffff0000; every source
            // lane inside the executing half (or out of range, where the lane keeps its value).
            let lanes: Vec<u64> = (0..n)
                .map(|i| {
                    let lane = (i % 32) as i64;
                    let low = lane < 16;
                    let v: i64 = match *mode {
                        "idx" => (if low { 0 } else { 16 }) + rng.below(16) as i64 + 32 * rng.below(3) as i64,
                        "bfly" => rng.below(16) as i64,
                        "down" if low => {
                            // lane + d <= 15, or >= 32 (keeps its own value)
                            if rng.below(2) == 0 {
                                rng.below((16 - lane) as usize) as i64
                            } else {
                                32 - lane + rng.below(lane as usize + 1) as i64
                            }
                        }
                        "down" => rng.below(32) as i64,
                        "up" if low => rng.below(32) as i64,
                        _ => {
                            // lane - d >= 16, or < 0 (keeps its own value)
                            if rng.below(2) == 0 {
                                rng.below((lane - 15) as usize) as i64
                            } else {
                                lane + 1 + rng.below((31 - lane) as usize + 1) as i64
                            }
                        }
                    };
                    v as u64 & 0xffff_ffff
                })
                .collect();
            let src = format!(
                "kernel @shfl_half_{mode}_{t}(%v: ptr<global, {st}>, %lane: ptr<global, u32>, %out: ptr<global, {st}>) {{\nentry:\n  %i = global_id.x : u32\n  %ln = laneid : u32\n{}  %l = load %lane[%i]\n  %lo = lt.u32 %ln, 16\n  br %lo, low, high\nlow:\n  %r = shfl.{mode}.{t} %x, %l, 0xffff\n{}  jmp exit\nhigh:\n  %q = shfl.{mode}.{t} %x, %l, 0xffff0000\n{}  jmp exit\nexit:\n  ret\n}}\n",
                load_line(t, "x", "v"),
                store_line(t, "r", "out"),
                store_line(t, "q", "out")
            );
            cases.push(text_case(
                format!("shfl.{mode}.{t} half-warp masks"),
                &src,
                [2, 1, 1],
                [256, 1, 1],
                0,
                vec![
                    ("v", Buffer::from_bits(st, vals.iter().copied()), Role::In),
                    ("lane", Buffer::from_bits(S::U32, lanes), Role::In),
                    ("out", Buffer::zeros(st, n), Role::Out(Check::Bits)),
                ],
            ));
        }
    }
    cases
}

/// Votes: full mask, half-warp masks, and a data-dependent mask (a ballot of the branch
/// condition, in a register) inside a divergent branch.
fn vote_cases() -> Vec<Case> {
    let n = 512;
    let mut rng = Rng(77);
    let pat = |w: usize, lane: usize, rng: &mut Rng| -> u64 {
        match w % 8 {
            0 => 1,
            1 => 0,
            3 => (lane == 0) as u64,
            4 => (lane != 31) as u64,
            6 => (lane == 17) as u64,
            7 => (lane % 2) as u64,
            _ => rng.next() & 1,
        }
    };
    let p: Vec<u64> = (0..n).map(|i| pat(i / 32, i % 32, &mut rng)).collect();
    let c: Vec<u64> = (0..n).map(|i| if (i / 32) % 3 == 0 { 1 } else { pat(i / 32 + 3, i % 32, &mut rng) }).collect();
    let votes = "  %a = vote.any %q, MASK\n  %ab = select.u8 %a, 1, 0\n  store %any[%i], %ab\n  %l = vote.all %q, MASK\n  %lb = select.u8 %l, 1, 0\n  store %all[%i], %lb\n  %bb = vote.ballot %q, MASK\n  store %ballot[%i], %bb\n";
    let head = "(%p: ptr<global, u8>, %c: ptr<global, u8>, %any: ptr<global, u8>, %all: ptr<global, u8>, %ballot: ptr<global, u32>) {\nentry:\n  %i = global_id.x : u32\n  %pb = load %p[%i]\n  %q = ne.u8 %pb, 0\n  %cb = load %c[%i]\n  %cc = ne.u8 %cb, 0\n  %ln = laneid : u32\n";
    let full = format!("kernel @vote_full{head}{}  ret\n}}\n", votes.replace("MASK", "0xffffffff"));
    let half = format!(
        "kernel @vote_half{head}  %lo = lt.u32 %ln, 16\n  br %lo, low, high\nlow:\n{}  jmp exit\nhigh:\n{}  jmp exit\nexit:\n  ret\n}}\n",
        votes.replace("MASK", "0xffff"),
        votes.replace("MASK", "0xffff0000").replace("%a ", "%a2 ").replace("%a,", "%a2,").replace("%ab", "%ab2").replace("%l ", "%l2 ").replace("%l,", "%l2,").replace("%lb", "%lb2").replace("%bb", "%bb2")
    );
    let data = format!(
        "kernel @vote_ballot_mask{head}  %m = vote.ballot %cc, 0xffffffff\n  br %cc, inside, exit\ninside:\n{}  jmp exit\nexit:\n  ret\n}}\n",
        votes.replace("MASK", "%m")
    );
    let mut cases = Vec::new();
    for (what, src) in [("vote full mask", full), ("vote half-warp masks", half), ("vote ballot-of-branch mask", data)]
    {
        cases.push(text_case(
            what.to_string(),
            &src,
            [2, 1, 1],
            [256, 1, 1],
            0,
            vec![
                ("p", Buffer::from_bits(S::U8, p.iter().copied()), Role::In),
                ("c", Buffer::from_bits(S::U8, c.iter().copied()), Role::In),
                ("any", Buffer::zeros(S::U8, n), Role::Out(Check::Bits)),
                ("all", Buffer::zeros(S::U8, n), Role::Out(Check::Bits)),
                ("ballot", Buffer::zeros(S::U32, n), Role::Out(Check::Bits)),
            ],
        ));
    }
    cases
}

const ATOMICS: [(&str, kir_ir::AtomicOp); 4] = [
    ("add", kir_ir::AtomicOp::Add),
    ("min", kir_ir::AtomicOp::Min),
    ("max", kir_ir::AtomicOp::Max),
    ("exch", kir_ir::AtomicOp::Exch),
];

/// Atomics: every op and element type, global and shared memory, distinct and contended
/// addresses, with and without a used result; `atom.cas` with matching and non-matching compares.
fn atomic_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let n = 512usize;
    for t in ScalarType::ALL {
        let mut ops: Vec<&str> = ATOMICS.iter().filter(|(_, a)| a.accepts(t)).map(|(n, _)| *n).collect();
        if matches!(t, S::U32 | S::S32 | S::U64 | S::S64) {
            ops.push("cas");
        }
        for (oi, op) in ops.iter().enumerate() {
            let seed = 500 + 10 * t as u64 + oi as u64;
            let init = values(t, n, seed);
            let v = values(t, n, seed + 1);
            let mut rng = Rng(seed + 2);
            // cas: the compare equals the current value for about half the threads.
            let cmp: Vec<u64> =
                init.iter().map(|x| if rng.next() & 1 == 0 { *x } else { random_value(t, &mut rng) }).collect();
            let (extra_param, call, check) = if *op == "cas" {
                (format!("%cmp: ptr<global, {t}>, "), "atom.cas %P[%K], %y, %x".to_string(), Check::Bits)
            } else {
                let check = if *op == "add" && t.is_float() { Check::Exact } else { Check::Bits };
                (String::new(), format!("atom.{op} %P[%K], %x"), check)
            };
            let cmp_load = if *op == "cas" { "  %y = load %cmp[%i]\n" } else { "" };
            let bufs_g = || {
                let mut b = vec![("p", Buffer::from_bits(t, init.iter().copied()), Role::InOut(check))];
                b.push(("v", Buffer::from_bits(t, v.iter().copied()), Role::In));
                if *op == "cas" {
                    b.push(("cmp", Buffer::from_bits(t, cmp.iter().copied()), Role::In));
                }
                b.push(("out", Buffer::zeros(t, n), Role::Out(check)));
                b
            };
            // Global memory, distinct addresses then 4 contended addresses; result used.
            for contended in [false, true] {
                let k = if contended { "  %k = and.u32 %i, 3\n" } else { "  %k = add.u32 %i, 0\n" };
                let src = format!(
                    "kernel @atom_g(%p: ptr<global, {t}>, %v: ptr<global, {t}>, {extra_param}%out: ptr<global, {t}>) {{\nentry:\n  %i = global_id.x : u32\n{k}  %x = load %v[%i]\n{cmp_load}  %o = {}\n  store %out[%i], %o\n  ret\n}}\n",
                    call.replace("%P", "%p").replace("%K", "%k")
                );
                cases.push(text_case(
                    format!("atom.{op}.{t} global {}", if contended { "contended" } else { "distinct" }),
                    &src,
                    [2, 1, 1],
                    [256, 1, 1],
                    0,
                    bufs_g(),
                ));
            }
            // Global, contended, result unused (`red` on the GPU).
            if *op != "cas" {
                let src = format!(
                    "kernel @red_g(%p: ptr<global, {t}>, %v: ptr<global, {t}>) {{\nentry:\n  %i = global_id.x : u32\n  %k = and.u32 %i, 7\n  %x = load %v[%i]\n  atom.{op} %p[%k], %x\n  ret\n}}\n"
                );
                cases.push(text_case(
                    format!("atom.{op}.{t} global contended, no result"),
                    &src,
                    [2, 1, 1],
                    [256, 1, 1],
                    0,
                    vec![
                        ("p", Buffer::from_bits(t, init.iter().copied()), Role::InOut(check)),
                        ("v", Buffer::from_bits(t, v.iter().copied()), Role::In),
                    ],
                ));
            }
            // Shared memory: the block's slice of `p` copied in, atomics on distinct then contended
            // slots, copied back.
            for contended in [false, true] {
                let k = if contended { "  %k = and.u32 %t, 3\n" } else { "  %k = sub.u32 255, %t\n" };
                let src = format!(
                    "kernel @atom_s(%p: ptr<global, {t}>, %v: ptr<global, {t}>, {extra_param}%out: ptr<global, {t}>) {{\n  shared @tile: {t}[256]\nentry:\n  %i = global_id.x : u32\n  %t = tid.x : u32\n  %s = addr @tile\n  %a = load %p[%i]\n  store %s[%t], %a\n  barrier\n{k}  %x = load %v[%i]\n{cmp_load}  %o = {}\n  store %out[%i], %o\n  barrier\n  %f = load %s[%t]\n  store %p[%i], %f\n  ret\n}}\n",
                    call.replace("%P", "%s").replace("%K", "%k")
                );
                cases.push(text_case(
                    format!("atom.{op}.{t} shared {}", if contended { "contended" } else { "distinct" }),
                    &src,
                    [2, 1, 1],
                    [256, 1, 1],
                    0,
                    bufs_g(),
                ));
            }
        }
    }
    cases
}

/// Loads, stores, `offset`, `offset.bytes`, `ptrcast` and constant indices for every element type
/// and index type, in global memory and in static and dynamic shared memory. Signed indices are
/// negative for half the threads (off a pointer moved forward with `offset`), `u64` indices wrap.
fn memory_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let n = 128usize;
    let ints = [S::U8, S::U16, S::U32, S::U64, S::S8, S::S16, S::S32, S::S64];
    for t in ScalarType::ALL.into_iter().filter(|t| !t.is_pred()) {
        for it in ints {
            let seed = 900 + 20 * t as u64 + it as u64;
            let mut rng = Rng(seed);
            let base: i64 = if it.is_signed_int() || it == S::U64 { 64 } else { 0 };
            // Per block of 64 threads a permutation of that block's 64 slots (global: of all 128).
            let perm = permutation(n, &mut rng);
            let idx: Vec<u64> = perm.iter().map(|p| ((*p as i64 - base) as u64) & it.mask()).collect();
            let src_vals = values(t, 2 * n + 64, seed + 1);
            let global = format!(
                "kernel @mem_g(%src: ptr<global, {t}>, %idx: ptr<global, {it}>, %dst: ptr<global, {t}>, %out: ptr<global, {t}>, %outo: ptr<global, {t}>, %outc: ptr<global, {t}>, %outb: ptr<global, u8>) {{\nentry:\n  %i = global_id.x : u32\n  %cp = eq.u32 %i, 7\n  %k = load %idx[%i]\n  %base = offset %src, {base}\n  %v = load %base[%k]\n  store %out[%i], %v\n  %db = offset %dst, {base}\n  store %db[%k], %v\n  %q = offset %base, %k\n  %w = load %q[0]\n  store %outo[%i], %w\n  %b64 = offset %src, 64\n  %c = load %b64[0xfffffffffffffffd]\n  %c5 = load %b64[5]\n  %cv = select.{t} %cp, %c, %c5\n  store %outc[%i], %cv\n  %bp = ptrcast %base : ptr<global, u8>\n  %bq = offset.bytes %bp, %k\n  %byte = load %bq[0]\n  store %outb[%i], %byte\n  ret\n}}\n"
            );
            cases.push(text_case(
                format!("load/store/offset {t} global, {it} index"),
                &global,
                [2, 1, 1],
                [64, 1, 1],
                0,
                vec![
                    ("src", Buffer::from_bits(t, src_vals.iter().copied().take(n + 64)), Role::In),
                    ("idx", Buffer::from_bits(it, idx.iter().copied()), Role::In),
                    ("dst", Buffer::zeros(t, n + 64), Role::Out(Check::Bits)),
                    ("out", Buffer::zeros(t, n), Role::Out(Check::Bits)),
                    ("outo", Buffer::zeros(t, n), Role::Out(Check::Bits)),
                    ("outc", Buffer::zeros(t, n), Role::Out(Check::Bits)),
                    ("outb", Buffer::zeros(S::U8, n), Role::Out(Check::Bits)),
                ],
            ));
            // Shared: each block of 128 threads fills a static and a dynamic tile, then reads and
            // writes them through indices (a permutation of the block's 128 slots).
            let sbase: i64 = if it.is_signed_int() || it == S::U64 { 64 } else { 0 };
            let nb = 128usize;
            let sidx: Vec<u64> = (0..2)
                .flat_map(|_| permutation(nb, &mut rng))
                .map(|p| ((p as i64 - sbase) as u64) & it.mask())
                .collect();
            let shared = format!(
                "kernel @mem_s(%src: ptr<global, {t}>, %idx: ptr<global, {it}>, %out: ptr<global, {t}>, %outd: ptr<global, {t}>, %outs: ptr<global, {t}>, %outb: ptr<global, u8>) {{\n  shared @tile: {t}[128] align 16\n  shared @dyn: {t}[]\nentry:\n  %i = global_id.x : u32\n  %t = tid.x : u32\n  %s = addr @tile\n  %d = addr @dyn\n  %v = load %src[%i]\n  store %s[%t], %v\n  store %d[%t], %v\n  barrier\n  %k = load %idx[%i]\n  %base = offset %s, {sbase}\n  %x = load %base[%k]\n  store %out[%i], %x\n  %dbase = offset %d, {sbase}\n  %y = load %dbase[%k]\n  store %outd[%i], %y\n  %c = ptrcast %base : ptr<shared, u8>\n  %q = offset.bytes %c, %k\n  %byte = load %q[0]\n  store %outb[%i], %byte\n  barrier\n  store %base[%k], %v\n  barrier\n  %z = load %s[%t]\n  store %outs[%i], %z\n  ret\n}}\n"
            );
            cases.push(text_case(
                format!("load/store/offset {t} shared, {it} index"),
                &shared,
                [2, 1, 1],
                [128, 1, 1],
                128 * t.bytes(),
                vec![
                    ("src", Buffer::from_bits(t, src_vals.iter().copied().take(2 * nb)), Role::In),
                    ("idx", Buffer::from_bits(it, sidx.iter().copied()), Role::In),
                    ("out", Buffer::zeros(t, 2 * nb), Role::Out(Check::Bits)),
                    ("outd", Buffer::zeros(t, 2 * nb), Role::Out(Check::Bits)),
                    ("outs", Buffer::zeros(t, 2 * nb), Role::Out(Check::Bits)),
                    ("outb", Buffer::zeros(S::U8, 2 * nb), Role::Out(Check::Bits)),
                ],
            ));
        }
    }
    cases
}

// ---------------------------------------------------------------------------------------------
// Running and comparing
// ---------------------------------------------------------------------------------------------

thread_local! {
    /// Set while this thread runs the emulator: its panics are reported as case failures, not
    /// printed by the default hook once per case.
    static QUIET: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The emulator's result, with a panic inside it turned into an error.
fn run_emulator(case: &Case, ptx: &str) -> Result<Vec<Vec<u8>>, String> {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let prev = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !QUIET.with(|q| q.get()) {
                prev(info)
            }
        }));
    });
    QUIET.with(|q| q.set(true));
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_emulator_inner(case, ptx)));
    QUIET.with(|q| q.set(false));
    r.unwrap_or_else(|p| {
        let msg = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "?".into());
        Err(format!("emulator panicked: {msg}"))
    })
}

/// The emulator's result for one case and target, or why there is none.
fn run_emulator_inner(case: &Case, ptx: &str) -> Result<Vec<Vec<u8>>, String> {
    use kir_ptx_emu as emu;
    let module = emu::Module::parse(ptx).map_err(|e| {
        let line = ptx.lines().nth(e.line.saturating_sub(1) as usize).unwrap_or("").trim();
        format!("emulator cannot load the PTX: {e}\n      PTX line {}: `{line}`", e.line)
    })?;
    let mut mem = emu::Memory::new();
    let mut ids = Vec::new();
    for (b, name) in case.buffers.iter().zip(&case.names) {
        ids.push(mem.alloc(name.clone(), &b.bytes).map_err(|e| format!("emulator alloc: {e}"))?);
    }
    let args: Vec<emu::Arg> = ids.iter().map(|id| emu::Arg::Buffer(*id)).collect();
    let cfg = emu::LaunchConfig { grid: case.grid, block: case.block, dynamic_shared_bytes: case.dynamic_shared };
    let entry = case.kernel.name.replace('.', "$");
    emu::launch(&module, &entry, &cfg, &args, &mut mem, &emu::Options::default()).map_err(|e| {
        let text = e
            .line
            .and_then(|l| ptx.lines().nth(l.saturating_sub(1) as usize))
            .map(|l| format!("\n      PTX line {}: `{}`", e.line.unwrap_or(0), l.trim()))
            .unwrap_or_default();
        format!("emulator launch failed: {e}{text}")
    })?;
    ids.iter().map(|id| mem.bytes(*id).map(<[u8]>::to_vec).map_err(|e| format!("emulator read-back: {e}"))).collect()
}

fn run_interp(case: &Case) -> Result<Vec<Buffer>, String> {
    let mut bufs = case.buffers.clone();
    let args: Vec<kir_interp::Arg> = (0..bufs.len()).map(kir_interp::Arg::Buffer).collect();
    let cfg =
        kir_interp::LaunchConfig { grid: case.grid, block: case.block, dynamic_shared_bytes: case.dynamic_shared };
    verified_launch::launch(&case.kernel, &cfg, &args, &mut bufs, &kir_interp::Options::default())
        .map_err(|e| format!("interpreter failed: {}", e.to_diagnostic().message))?;
    Ok(bufs)
}

fn show(elem: ScalarType, bits: u64) -> String {
    let r = render_element(elem, bits);
    if elem.is_float() || elem.bits() > 8 {
        format!("{r} (0x{bits:0w$x})", w = (elem.bits() / 4) as usize)
    } else {
        r
    }
}

/// Whether the emulator's element `got` is acceptable next to the interpreter's `want`.
fn element_ok(elem: ScalarType, want: u64, got: u64, check: Check, operands: &[u64]) -> bool {
    match check {
        Check::Bits => want == got,
        Check::Exact => elements_match(elem, want, got, Strictness::Within(Tolerance::Exact)),
        Check::Approx(op, tol) => {
            elements_match(elem, want, got, Strictness::Within(tol))
                || (operands.len() == op.arity()
                    && (outside_domain(op, operands) || kir_ir::eval::within_error_bound(&op, operands, got)))
        }
    }
}

/// Whether an approximate op's input lies outside the domain over which the PTX ISA bounds its
/// error (the divisor for `div`, else the first operand): there any result is acceptable, NaN and
/// infinity included (`div.approx.f32` by a subnormal divisor computes `a * (1/b)` with `1/b`
/// overflowing to infinity).
fn outside_domain(op: Op, operands: &[u64]) -> bool {
    let Some(b) = kir_ir::eval::error_bound(&op) else { return false };
    let Some(t) = op.signature().args.first().copied().flatten().and_then(|t| t.scalar()) else { return false };
    let x = match op {
        Op::Bin(kir_ir::BinOp::Div, ..) => to_f64(t, operands[1]).abs(),
        _ => to_f64(t, operands[0]),
    };
    !x.is_nan() && (x < b.domain.0 || x > b.domain.1)
}

/// Compares one case on one target; returns the report lines of its disagreements.
fn compare_case(case: &Case, target: &str, want: &[Buffer], got: &[Vec<u8>]) -> Option<String> {
    let mut report = String::new();
    let mut count = 0usize;
    let show_n = show_per_case();
    for &(bi, check) in &case.outputs {
        let w = &want[bi];
        let g = Buffer { elem: w.elem, bytes: got[bi].clone() };
        if g.bytes.len() != w.bytes.len() {
            let _ = writeln!(report, "    buffer `{}`: {} bytes vs {}", case.names[bi], w.bytes.len(), g.bytes.len());
            count += 1;
            continue;
        }
        for i in 0..w.len() {
            let (a, b) = (w.get_bits(i), g.get_bits(i));
            let operands: &[u64] = case.tuples.get(i).map(Vec::as_slice).unwrap_or(&[]);
            if element_ok(w.elem, a, b, check, operands) {
                continue;
            }
            count += 1;
            if count <= show_n {
                let ins: Vec<String> = case
                    .inputs
                    .iter()
                    .filter(|&&ii| i < case.buffers[ii].len())
                    .map(|&ii| {
                        format!("{}={}", case.names[ii], show(case.buffers[ii].elem, case.buffers[ii].get_bits(i)))
                    })
                    .collect();
                let _ = writeln!(
                    report,
                    "    `{}`[{i}]: inputs {}: interpreter {}, emulator {}",
                    case.names[bi],
                    if ins.is_empty() { "-".to_string() } else { ins.join(", ") },
                    show(w.elem, a),
                    show(w.elem, b)
                );
            }
        }
    }
    (count > 0).then(|| {
        let more = if count > show_n { format!("    ... {} more\n", count - show_n) } else { String::new() };
        format!("{} [{target}]: {count} element(s) disagree\n{report}{more}", case.what)
    })
}

/// Runs every case in the interpreter and the emulator (sm_90 and sm_80 PTX); returns the
/// failure reports.
fn run_cases(what: &str, cases: &[Case]) -> Vec<String> {
    let dump = std::env::var("KIR_PTX_EMU_REPORT_DIR").ok();
    let mut all_ptx = [String::new(), String::new()];
    let mut failures = Vec::new();
    for case in cases {
        let want = match run_interp(case) {
            Ok(w) => w,
            Err(e) => {
                failures.push(format!("{}: {e}\n{}\n", case.what, kir_ir::print_kernel(&case.kernel)));
                continue;
            }
        };
        for (t, sm) in [SmVersion::Sm90, SmVersion::Sm80].into_iter().enumerate() {
            let opts = PtxOptions { sm, source: None, comments: false };
            let ptx = match emit_kernel(&case.kernel, &opts) {
                Ok(p) => {
                    if dump.is_some() {
                        let _ = writeln!(all_ptx[t], "// ==== {}\n{p}", case.what);
                    }
                    p
                }
                Err(d) => {
                    failures.push(format!("{} [{}]: PTX emission failed: {d:?}\n", case.what, sm.name()));
                    continue;
                }
            };
            match run_emulator(case, &ptx) {
                Ok(got) => {
                    if let Some(r) = compare_case(case, sm.name(), &want, &got) {
                        failures.push(r);
                    }
                }
                Err(e) => failures.push(format!("{} [{}]: {e}\n", case.what, sm.name())),
            }
        }
    }
    if let Some(dir) = dump {
        for (t, sm) in [SmVersion::Sm90, SmVersion::Sm80].into_iter().enumerate() {
            let _ = std::fs::write(format!("{dir}/{}_{}.ptx", what.replace(' ', "_"), sm.name()), &all_ptx[t]);
        }
    }
    failures
}

/// Prints the failures (the first 400 lines, the rest counted) and panics when there are any.
fn report(what: &str, ncases: usize, failures: &[String]) {
    eprintln!("{what}: {ncases} cases x 2 targets, {} failing case-targets", failures.len());
    let text = failures.join("");
    let lines: Vec<&str> = text.lines().collect();
    for l in lines.iter().take(400) {
        eprintln!("{l}");
    }
    if lines.len() > 400 {
        eprintln!("... {} more lines", lines.len() - 400);
    }
    if let Ok(dir) = std::env::var("KIR_PTX_EMU_REPORT_DIR") {
        let _ = std::fs::write(format!("{dir}/{}.txt", what.replace(' ', "_")), &text);
    }
    assert!(failures.is_empty(), "{what}: {} case-targets disagree (see above)", failures.len());
}

// ---------------------------------------------------------------------------------------------
// Tests
// ---------------------------------------------------------------------------------------------

#[test]
fn every_pure_op_agrees_with_the_interpreter() {
    let cases = pure_cases();
    let failures = run_cases("pure ops", &cases);
    report("pure ops", cases.len(), &failures);
}

#[test]
fn special_registers_agree() {
    let cases = special_cases();
    let failures = run_cases("special registers", &cases);
    report("special registers", cases.len(), &failures);
}

#[test]
fn warp_shuffles_agree() {
    let cases = shfl_cases();
    assert!(cases.len() == 4 * 3 * 2, "only {} shuffle cases", cases.len());
    let failures = run_cases("shuffles", &cases);
    report("shuffles", cases.len(), &failures);
}

#[test]
fn warp_votes_agree() {
    let cases = vote_cases();
    let failures = run_cases("votes", &cases);
    report("votes", cases.len(), &failures);
}

#[test]
fn atomics_agree() {
    let cases = atomic_cases();
    let failures = run_cases("atomics", &cases);
    report("atomics", cases.len(), &failures);
}

#[test]
fn memory_forms_agree() {
    let cases = memory_cases();
    assert_eq!(cases.len(), 12 * 8 * 2);
    let failures = run_cases("memory forms", &cases);
    report("memory forms", cases.len(), &failures);
}

/// The comparison can fail: PTX corrupted on purpose (an `add` turned into a `sub`, a shuffle's
/// lane operand changed) must be reported as a disagreement.
#[test]
fn corrupted_ptx_is_caught() {
    let add = Op::Bin(kir_ir::BinOp::Add, S::F32, kir_ir::FloatFlags::RN);
    let case = pure_case(0, add, None);
    let want = run_interp(&case).expect("interpreter");
    let opts = PtxOptions { sm: SmVersion::Sm90, source: None, comments: false };
    let ptx = emit_kernel(&case.kernel, &opts).expect("emission");
    assert!(ptx.contains("add.rn.f32"), "{ptx}");
    let got = run_emulator(&case, &ptx).expect("emulator runs the original");
    assert!(compare_case(&case, "sm_90", &want, &got).is_none(), "the original PTX must agree");
    let bad = ptx.replace("add.rn.f32", "sub.rn.f32");
    let got = run_emulator(&case, &bad).expect("emulator runs the corrupted PTX");
    let r = compare_case(&case, "sm_90", &want, &got).expect("a sub for an add must be caught");
    assert!(r.starts_with("add.f32 [sm_90]") && r.contains("interpreter") && r.contains("emulator"), "{r}");

    let cases = shfl_cases();
    let case = cases.iter().find(|c| c.what == "shfl.idx.f32 full mask").expect("shfl case");
    let want = run_interp(case).expect("interpreter");
    let ptx = emit_kernel(&case.kernel, &opts).expect("emission");
    let bad = ptx.replace("shfl.sync.idx.b32", "shfl.sync.bfly.b32");
    assert_ne!(bad, ptx);
    let got = run_emulator(case, &bad).expect("emulator runs the corrupted PTX");
    assert!(compare_case(case, "sm_90", &want, &got).is_some(), "idx → bfly must be caught");
}

/// A same-type float `cvt` without modifiers canonicalizes a NaN (kir's rule for conversions); its
/// bits, seen through a bitcast, must match. `kir fuzz` seeds 20952 and 21871 found the backend
/// emitting a plain `mov`, which kept the payload.
#[test]
fn same_type_conversions_canonicalize_nan_payloads() {
    let mut cases = Vec::new();
    for (t, it) in [(S::F32, S::U32), (S::F64, S::U64), (S::F16, S::U16), (S::BF16, S::U16)] {
        let src = format!(
            "kernel @k(%x: ptr<global, {t}>, %out: ptr<global, {it}>) {{\nentry:\n  %i = tid.x : u32\n  %v = load %x[%i]\n  \
             %c = cvt.{t}.{t} %v\n  %b = bitcast.{it}.{t} %c\n  store %out[%i], %b\n  ret\n}}\n"
        );
        let vals = edges(t);
        let n = vals.len();
        cases.push(text_case(
            format!("cvt.{t}.{t} then bitcast"),
            &src,
            [1, 1, 1],
            [n as u32, 1, 1],
            0,
            vec![("x", Buffer::from_bits(t, vals), Role::In), ("out", Buffer::zeros(it, n), Role::Out(Check::Bits))],
        ));
    }
    let failures = run_cases("same-type conversions", &cases);
    report("same-type conversions", cases.len(), &failures);
}
