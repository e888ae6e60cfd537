//! The text format round-trips: `parse(print(m)) == m` for generated modules, and every op's
//! mnemonic parses back to the same op.
//!
//! The generator here is syntactic, not semantic: it covers every op and modifier, every scalar type,
//! constants with arbitrary bit patterns (NaN payloads, -0.0, subnormals, f16/bf16), block
//! parameters and every terminator form, so that the printer and parser are exercised on everything
//! they can meet, including kernels the verifier would reject.

use kir_ir::op::{all_ops, Op};
use kir_ir::text::parse::parse_mnemonic;
use kir_ir::*;
use proptest::prelude::*;

#[test]
fn every_mnemonic_parses_back_to_its_op() {
    let ops = all_ops();
    assert!(ops.len() > 1000, "the op enumeration should be exhaustive, got {}", ops.len());
    for op in ops {
        let annot = match &op {
            Op::PtrCast(t) => Some(*t),
            _ => None,
        };
        let parsed = parse_mnemonic(&op.mnemonic(), annot);
        assert_eq!(parsed.as_ref(), Ok(&op), "mnemonic `{}`", op.mnemonic());
    }
}

#[test]
fn unknown_mnemonics_are_rejected_with_a_reason() {
    for (m, want) in [
        ("frob.u32", "unknown op `frob.u32`"),
        ("add", "needs a type suffix"),
        ("add.q32", "unknown type `q32`"),
        ("add.approx.u32", "unexpected modifier `.approx`"),
        ("tid.w", "dimension must be"),
        ("shfl.sideways.f32", "unknown shuffle mode"),
        ("cvt.f32", "needs a destination and a source type"),
        ("ptrcast", "needs the target pointer type"),
    ] {
        let err = parse_mnemonic(m, None).unwrap_err();
        assert!(err.contains(want), "`{m}`: got `{err}`, want it to mention `{want}`");
    }
}

/// A generated value: its id and type.
#[derive(Clone, Copy, Debug)]
struct Val {
    id: ValueId,
    ty: Type,
}

/// Deterministic choices driven by proptest-provided entropy.
struct Chooser {
    bytes: Vec<u64>,
    pos: usize,
}

impl Chooser {
    fn next(&mut self) -> u64 {
        let v = self.bytes[self.pos % self.bytes.len()];
        self.pos += 1;
        // Mix in the position so a short entropy vector still gives varied choices.
        v ^ (self.pos as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn coin(&mut self) -> bool {
        self.next() & 1 == 1
    }
}

fn random_constant(c: &mut Chooser, ty: ScalarType) -> Constant {
    let special: &[u64] = match ty {
        ScalarType::F32 => &[0x8000_0000, 0x7f80_0000, 0xff80_0000, 0x7fc0_0001, 0x0000_0001, 0x7fff_ffff, 0x3f80_0000],
        ScalarType::F64 => {
            &[0x8000_0000_0000_0000, 0x7ff0_0000_0000_0000, 0x7ff8_0000_0000_0001, 1, 0x3ff0_0000_0000_0000]
        }
        ScalarType::F16 | ScalarType::BF16 => &[0x8000, 0x7c00, 0x7e01, 0x0001, 0x7f80, 0x3c00],
        _ => &[0, 1, u64::MAX],
    };
    let bits = if c.coin() { special[c.below(special.len())] } else { c.next() };
    Constant::from_bits(ty, bits)
}

/// A value of vector type `t` from the pool, or a new `vec` of constants appended to block `b`.
fn vector_operand(
    c: &mut Chooser,
    k: &mut Kernel,
    b: BlockId,
    t: Type,
    pool: &mut Vec<Val>,
    counter: &mut usize,
) -> Operand {
    let cands: Vec<&Val> = pool.iter().filter(|v| v.ty == t).collect();
    if !cands.is_empty() && c.coin() {
        return Operand::Value(cands[c.below(cands.len())].id);
    }
    let (w, e) = t.vector().expect("a vector type");
    let elems: Vec<Operand> = (0..w.len()).map(|_| Operand::Const(random_constant(c, e))).collect();
    *counter += 1;
    let id = k.append_inst(b, Op::VecBuild(w, e), elems, Some((format!("v{counter}").into(), t)), Span::DUMMY);
    let r = k.inst(id).result.expect("a result");
    pool.push(Val { id: r, ty: t });
    Operand::Value(r)
}

/// Builds a kernel that exercises every op kind, in a shape the parser accepts (names unique,
/// every operand typed by its position).
fn generate(c: &mut Chooser, kernel_name: &str) -> Kernel {
    let mut k = Kernel::new(kernel_name);
    let gptr = k.add_param("gp", Type::Ptr(AddrSpace::Global, ScalarType::F32));
    let sptr_ty = Type::Ptr(AddrSpace::Shared, ScalarType::U32);
    let mut pool: Vec<Val> = vec![Val { id: gptr, ty: k.value_type(gptr) }];
    for (i, t) in ScalarType::ALL.iter().enumerate() {
        if c.coin() {
            let v = k.add_param(format!("p{i}"), Type::Scalar(*t));
            pool.push(Val { id: v, ty: Type::Scalar(*t) });
        }
    }
    k.shared.push(SharedDecl {
        name: "tile".into(),
        elem: ScalarType::U32,
        len: Some(64),
        align: if c.coin() { 4 } else { 16 },
        span: Span::DUMMY,
    });
    if c.coin() {
        k.shared.push(SharedDecl { name: "dyn".into(), elem: ScalarType::F32, len: None, align: 4, span: Span::DUMMY });
    }
    let nblocks = 1 + c.below(4);
    let blocks: Vec<BlockId> =
        (0..nblocks).map(|i| k.add_block(if i == 0 { "entry".to_string() } else { format!("b{i}") })).collect();
    for (bi, &b) in blocks.iter().enumerate().skip(1) {
        for p in 0..c.below(3) {
            let t = ScalarType::ALL[c.below(ScalarType::ALL.len())];
            let v = k.add_block_param(b, format!("bp{bi}_{p}"), Type::Scalar(t));
            pool.push(Val { id: v, ty: Type::Scalar(t) });
        }
        // Pointer-typed block parameters spell both address spaces (`shared` is also a keyword).
        if c.coin() {
            let space = if c.coin() { AddrSpace::Shared } else { AddrSpace::Global };
            let elem = ScalarType::ALL[1 + c.below(ScalarType::ALL.len() - 1)];
            k.add_block_param(b, format!("bptr{bi}"), Type::Ptr(space, elem));
        }
    }
    let ops = all_ops();
    let mut counter = 0;
    for &b in &blocks {
        for _ in 0..c.below(12) {
            let op = ops[c.below(ops.len())];
            let sig = op.signature();
            let mut args = Vec::new();
            let operand = |c: &mut Chooser, want: ScalarType, pool: &[Val]| -> Operand {
                let cands: Vec<&Val> = pool.iter().filter(|v| v.ty == Type::Scalar(want)).collect();
                if !cands.is_empty() && c.coin() {
                    Operand::Value(cands[c.below(cands.len())].id)
                } else {
                    Operand::Const(random_constant(c, want))
                }
            };
            let result_ty: Option<Type> = match &op {
                Op::Load | Op::Store | Op::Atomic(_) | Op::AtomicCas => {
                    args.push(Operand::Value(gptr));
                    // An index may be a value of any integer type; a literal index is always u64.
                    let u32s: Vec<&Val> = pool.iter().filter(|v| v.ty == Type::U32).collect();
                    if !u32s.is_empty() && c.coin() {
                        args.push(Operand::Value(u32s[c.below(u32s.len())].id));
                    } else {
                        args.push(operand(c, ScalarType::U64, &pool));
                    }
                    for _ in 2..op.arity() {
                        args.push(operand(c, ScalarType::F32, &pool));
                    }
                    (!matches!(op, Op::Store)).then_some(Type::F32)
                }
                Op::PtrOffset | Op::PtrOffsetBytes => {
                    args.push(Operand::Value(gptr));
                    args.push(operand(c, ScalarType::U64, &pool));
                    Some(k.value_type(gptr))
                }
                Op::PtrCast(t) => {
                    args.push(Operand::Value(gptr));
                    Some(*t)
                }
                Op::SharedAddr(_) => Some(sptr_ty),
                Op::LoadVec(_) | Op::StoreVec(_) | Op::Ldmatrix(..) | Op::CpAsync(_) => {
                    // Syntactic only: every address is the global pointer.
                    for _ in op.address_operands() {
                        args.push(Operand::Value(gptr));
                        args.push(operand(c, ScalarType::U64, &pool));
                    }
                    match op {
                        Op::StoreVec(w) => {
                            args.push(vector_operand(
                                c,
                                &mut k,
                                b,
                                Type::Vec(w, ScalarType::F32),
                                &mut pool,
                                &mut counter,
                            ));
                            None
                        }
                        Op::LoadVec(w) => Some(Type::Vec(w, ScalarType::F32)),
                        Op::CpAsync(_) => {
                            args.push(operand(c, ScalarType::U32, &pool));
                            None
                        }
                        _ => sig.result,
                    }
                }
                _ => {
                    for a in &sig.args {
                        match a {
                            Some(t @ Type::Vec(..)) => {
                                args.push(vector_operand(c, &mut k, b, *t, &mut pool, &mut counter));
                            }
                            _ => {
                                let want = a.and_then(Type::scalar).unwrap_or(ScalarType::U32);
                                args.push(operand(c, want, &pool));
                            }
                        }
                    }
                    sig.result
                }
            };
            let has_result = sig.has_result && (c.below(8) != 0 || !op.has_side_effects());
            counter += 1;
            let result = if has_result { result_ty.map(|t| (format!("v{counter}").into(), t)) } else { None };
            let id = k.append_inst(b, op, args, result, Span::DUMMY);
            if let Some(r) = k.inst(id).result {
                pool.push(Val { id: r, ty: k.value_type(r) });
            }
        }
    }
    // Terminators: any shape, with arguments typed by the target's parameters.
    for &b in &blocks {
        let call = |c: &mut Chooser, k: &Kernel, pool: &[Val]| -> BlockCall {
            let target = blocks[c.below(blocks.len())];
            let args = k
                .block(target)
                .params
                .iter()
                .map(|p| {
                    let Some(t) = k.value_type(*p).scalar() else {
                        // A pointer parameter takes the kernel's global pointer, or itself.
                        return Operand::Value(if k.value_type(*p) == k.value_type(gptr) { gptr } else { *p });
                    };
                    let cands: Vec<&Val> = pool.iter().filter(|v| v.ty == Type::Scalar(t)).collect();
                    if !cands.is_empty() && c.coin() {
                        Operand::Value(cands[c.below(cands.len())].id)
                    } else {
                        Operand::Const(random_constant(c, t))
                    }
                })
                .collect();
            BlockCall { block: target, args }
        };
        let term = match c.below(3) {
            0 => Terminator::Ret(None),
            1 => Terminator::Jmp(call(c, &k, &pool)),
            _ => {
                let preds: Vec<&Val> = pool.iter().filter(|v| v.ty == Type::PRED).collect();
                let cond = if !preds.is_empty() && c.coin() {
                    Operand::Value(preds[c.below(preds.len())].id)
                } else {
                    Operand::Const(Constant::pred(c.coin()))
                };
                Terminator::Br { cond, then_: call(c, &k, &pool), else_: call(c, &k, &pool) }
            }
        };
        k.block_mut(b).term = term;
    }
    k
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// parse(print(m)) is structurally equal to m, and printing is a fixed point.
    #[test]
    fn print_then_parse_is_identity(entropy in proptest::collection::vec(any::<u64>(), 1..64), nkernels in 1usize..3) {
        let mut c = Chooser { bytes: entropy, pos: 0 };
        let mut m = Module::default();
        for i in 0..nkernels {
            let mut k = generate(&mut c, &format!("k{i}"));
            k.compact();
            m.kernels.push(k);
        }
        let text = print_module(&m);
        let parsed = match parse(&text) {
            Ok(p) => p,
            Err(d) => panic!("printed module does not parse:\n{}\n{text}", kir_ir::diag::render(&d, "printed.kir", &text, false)),
        };
        prop_assert!(parsed.structurally_eq(&m), "round trip changed the module:\n{text}\n---\n{}", print_module(&parsed));
        prop_assert_eq!(print_module(&parsed), text);
    }
}
