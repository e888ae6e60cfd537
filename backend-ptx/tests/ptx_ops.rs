//! Every op the verifier accepts, with every type and modifier (`kir_ir::op::all_ops`), with
//! register operands and with constant operands, and every memory access form (element types,
//! index types, global and shared, atomics), emitted to PTX and assembled by the real `ptxas` for
//! sm_80 and sm_90: any ptxas error fails the test. Without ptxas these tests skip (fail with
//! CI=true), see `kir_backend_ptx::tools::require_tool_or_skip`.

use kir_backend_ptx::{emit_module, tools, PtxOptions, SmVersion};
use kir_ir::{AddrSpace, Constant, Kernel, Module, Op, Operand, ScalarType, SharedDecl, Span, Type};

/// A constant of `ty` with a non-trivial bit pattern.
fn sample(ty: ScalarType, k: u64) -> Constant {
    use ScalarType::*;
    match ty {
        Pred => Constant::pred(k % 2 == 1),
        F16 => Constant::from_bits(F16, 0x3E00 + k),
        BF16 => Constant::from_bits(BF16, 0x3FC0 + k),
        F32 => Constant::f32(1.5 + k as f32),
        F64 => Constant::f64(-2.25 - k as f64),
        _ => Constant::int_wrapping(ty, 3 + k as i128 * if ty.is_signed_int() { -5 } else { 7 }),
    }
}

/// One kernel per pure/collective op: params of the operand types, the op, nothing else.
/// Returns the module of all kernels the verifier accepts.
fn op_module(consts: bool) -> (Module, usize) {
    let mut m = Module::default();
    for (n, op) in kir_ir::op::all_ops().into_iter().enumerate() {
        if matches!(
            op,
            Op::Load
                | Op::Store
                | Op::Atomic(_)
                | Op::AtomicCas
                | Op::PtrOffset
                | Op::PtrOffsetBytes
                | Op::PtrCast(_)
                | Op::SharedAddr(_)
        ) {
            continue;
        }
        let sig = op.signature();
        let mut k = Kernel::new(format!("op{n}"));
        let b = k.add_block("entry");
        let mut args = Vec::new();
        for (i, t) in sig.args.iter().enumerate() {
            let Some(Type::Scalar(t)) = t else { continue };
            if consts {
                args.push(Operand::Const(sample(*t, i as u64)));
            } else {
                args.push(Operand::Value(k.add_param(format!("a{i}"), Type::Scalar(*t))));
            }
        }
        if args.len() != op.arity() {
            continue;
        }
        let result = sig.result.filter(|_| sig.has_result).map(|t| ("r".into(), t));
        k.append_inst(b, op, args, result, Span::DUMMY);
        if kir_ir::verify::verify_body(&k, None, None).0.iter().any(|d| d.is_error()) {
            continue;
        }
        m.kernels.push(k);
    }
    let n = m.kernels.len();
    (m, n)
}

/// Loads, stores, atomics and pointer arithmetic for every element type, index type and space.
fn memory_module() -> Module {
    use ScalarType::*;
    let mut m = Module::default();
    let ints = [U8, U16, U32, U64, S8, S16, S32, S64];
    for space in [AddrSpace::Global, AddrSpace::Shared] {
        for elem in ScalarType::ALL.into_iter().filter(|t| !t.is_pred()) {
            let mut k = Kernel::new(format!("mem_{}_{}", space.name(), elem));
            let b = k.add_block("entry");
            let p = match space {
                AddrSpace::Global => Operand::Value(k.add_param("p", Type::Ptr(space, elem))),
                AddrSpace::Shared => {
                    k.shared.push(SharedDecl {
                        name: "tile".into(),
                        elem,
                        len: Some(64),
                        align: 16,
                        span: Span::DUMMY,
                    });
                    k.shared.push(SharedDecl { name: "dyn".into(), elem, len: None, align: 16, span: Span::DUMMY });
                    let t = k.append_inst(
                        b,
                        Op::SharedAddr(0),
                        vec![],
                        Some(("t".into(), Type::Ptr(space, elem))),
                        Span::DUMMY,
                    );
                    k.append_inst(
                        b,
                        Op::SharedAddr(1),
                        vec![],
                        Some(("dy".into(), Type::Ptr(space, elem))),
                        Span::DUMMY,
                    );
                    Operand::Value(k.inst(t).result.unwrap())
                }
            };
            let v = Operand::Value(k.add_param("v", Type::Scalar(elem)));
            for (j, it) in ints.iter().enumerate() {
                let idx = Operand::Value(k.add_param(format!("i{j}"), Type::Scalar(*it)));
                k.append_inst(
                    b,
                    Op::Load,
                    vec![p, idx],
                    Some((format!("l{j}").into(), Type::Scalar(elem))),
                    Span::DUMMY,
                );
                k.append_inst(b, Op::Store, vec![p, idx, v], None, Span::DUMMY);
                k.append_inst(
                    b,
                    Op::PtrOffset,
                    vec![p, idx],
                    Some((format!("o{j}").into(), Type::Ptr(space, elem))),
                    Span::DUMMY,
                );
                k.append_inst(
                    b,
                    Op::PtrOffsetBytes,
                    vec![p, idx],
                    Some((format!("ob{j}").into(), Type::Ptr(space, elem))),
                    Span::DUMMY,
                );
            }
            let ci = Operand::Const(Constant::int_wrapping(S32, -3));
            k.append_inst(b, Op::Load, vec![p, ci], Some(("lc".into(), Type::Scalar(elem))), Span::DUMMY);
            k.append_inst(
                b,
                Op::Store,
                vec![p, Operand::Const(Constant::u64(5)), Operand::Const(sample(elem, 1))],
                None,
                Span::DUMMY,
            );
            k.append_inst(
                b,
                Op::PtrCast(Type::Ptr(space, U8)),
                vec![p],
                Some(("c".into(), Type::Ptr(space, U8))),
                Span::DUMMY,
            );
            let i0 = Operand::Const(Constant::u32(1));
            for a in [kir_ir::AtomicOp::Add, kir_ir::AtomicOp::Min, kir_ir::AtomicOp::Max, kir_ir::AtomicOp::Exch] {
                if a.accepts(elem) {
                    k.append_inst(
                        b,
                        Op::Atomic(a),
                        vec![p, i0, v],
                        Some((format!("at{}", a.name()).into(), Type::Scalar(elem))),
                        Span::DUMMY,
                    );
                    k.append_inst(b, Op::Atomic(a), vec![p, i0, v], None, Span::DUMMY);
                }
            }
            if matches!(elem, U32 | S32 | U64 | S64) {
                k.append_inst(
                    b,
                    Op::AtomicCas,
                    vec![p, i0, v, v],
                    Some(("cas".into(), Type::Scalar(elem))),
                    Span::DUMMY,
                );
            }
            let diags = kir_ir::verify::verify_body(&k, None, None).0;
            assert!(!diags.iter().any(|d| d.is_error()), "memory kernel {} does not verify: {diags:?}", k.name);
            m.kernels.push(k);
        }
    }
    m
}

fn assemble_all(m: &Module, what: &str) {
    if tools::require_tool_or_skip("ptxas").is_none() {
        return;
    }
    // The kernels exist to be assembled, not run: their collectives' member masks are constants
    // no launch honours, so they are the author's claim (`assume_masks()`), which the emitter's
    // checked input then accepts.
    let mut m = m.clone();
    for k in &mut m.kernels {
        k.assume_masks = Some(kir_ir::Span::DUMMY);
    }
    for sm in [SmVersion::Sm80, SmVersion::Sm90] {
        let v = kir_ir::verify::check(m.clone()).unwrap_or_else(|d| panic!("{what}: {d}"));
        let ptx = emit_module(&v, &PtxOptions::new(sm)).unwrap_or_else(|d| panic!("{what}: emission failed: {d:#?}"));
        if let Err(e) = tools::run_ptxas(&ptx, sm) {
            // Show the offending PTX lines next to ptxas's messages.
            let lines: Vec<&str> = ptx.lines().collect();
            let mut context = String::new();
            for l in e.lines() {
                if let Some(n) = l
                    .split(", line ")
                    .nth(1)
                    .and_then(|r| r.split(';').next())
                    .and_then(|n| n.trim().parse::<usize>().ok())
                {
                    context.push_str(&format!("  line {n}: {}\n", lines.get(n - 1).unwrap_or(&"?")));
                }
            }
            panic!("{what} for {}: {e}\n{context}", sm.name());
        }
    }
}

#[test]
fn every_op_with_register_operands_assembles() {
    let (m, n) = op_module(false);
    assert!(n > 500, "only {n} ops verified");
    assemble_all(&m, "register operands");
}

#[test]
fn every_op_with_constant_operands_assembles() {
    let (m, n) = op_module(true);
    assert!(n > 500, "only {n} ops verified");
    assemble_all(&m, "constant operands");
}

#[test]
fn every_memory_form_assembles() {
    assemble_all(&memory_module(), "memory");
}
