//! Vectors, vector memory, tensor cores and async copies, emitted to PTX and assembled by the
//! real `ptxas` for sm_80 and sm_90 (any ptxas error fails the test; without ptxas the assembly
//! skips, see `kir_backend_ptx::tools::require_tool_or_skip`, but the checks of the emitted text
//! still run):
//! - `load.vN`/`store.vN` for every width and element type the verifier accepts, in global memory
//!   and in static and dynamic shared memory, with register indices of every integer type and
//!   constant indices (zero, positive, negative); each is one `ld`/`st` of `.vN` with the element's
//!   memory type (`.b16` for every 16-bit type, `.u8`/`.s8` into 32-bit registers);
//!   `vec` with register and constant elements (NaN payloads included), `extract` and `insert`
//!   of every lane;
//! - `mma` of every kind, `ldmatrix` `.x1`/`.x2`/`.x4` with and without `.trans` through a pointer
//!   to each 16-bit type, `cp.async` of 4, 8 and 16 bytes (`.ca`, `.ca`, `.cg`) between element
//!   types the verifier accepts with a constant (0, part, all) and a register source size,
//!   `cp.async.commit` and `cp.async.wait` 0, 1 and 7;
//! - vector block parameters across a loop (rotated through each other: a parallel-copy cycle)
//!   and an `mma` accumulator carried by a loop, which shares its parameter's registers;
//! - device functions returning vectors, called without inlining.
//!
//! Also: the register counts `ptxas -v` reports for a small `mma` kernel are printed.

use kir_backend_ptx::{emit_module, tools, PtxOptions, SmVersion};
use kir_ir::types::VecWidth;
use kir_ir::{ScalarType, Type};

/// Checks and emits `src` for `sm` (without comments).
fn emit(src: &str, sm: SmVersion) -> String {
    let m = kir_ir::parse(src).unwrap_or_else(|d| panic!("parse: {d:?}\n{src}"));
    let m = kir_ir::verify::check(m).unwrap_or_else(|d| panic!("check: {d}\n{src}"));
    let opts = PtxOptions { sm, source: None, comments: false };
    emit_module(&m, &opts).unwrap_or_else(|d| panic!("emission failed: {d:?}\n{src}"))
}

/// The sm_80 PTX of `src`, after ptxas accepted the PTX for sm_80 and for sm_90 (when found).
fn assemble(src: &str, what: &str) -> String {
    let have_ptxas = tools::require_tool_or_skip("ptxas").is_some();
    let mut first = None;
    for sm in [SmVersion::Sm80, SmVersion::Sm90] {
        let ptx = emit(src, sm);
        if have_ptxas {
            if let Err(e) = tools::run_ptxas(&ptx, sm) {
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
        first.get_or_insert(ptx);
    }
    first.unwrap_or_default()
}

/// The instruction lines of `ptx` (trimmed, without the `;`).
fn instructions(ptx: &str) -> Vec<&str> {
    ptx.lines().map(str::trim).filter(|l| l.ends_with(';')).map(|l| l.trim_end_matches(';')).collect()
}

/// The memory type PTX names for a vector access of `elem` (written from the PTX ISA: `ld`/`st`
/// have no f16/bf16 types, 16-bit values move as `.b16`).
fn ptx_mem_type(elem: ScalarType) -> &'static str {
    use ScalarType::*;
    match elem {
        U8 => "u8",
        S8 => "s8",
        U16 | S16 | F16 | BF16 => "b16",
        U32 | S32 => "u32",
        F32 => "f32",
        U64 | S64 => "u64",
        F64 => "f64",
        Pred => unreachable!("no vectors of pred"),
    }
}

/// A constant of `elem` as the text format spells it (`k` picks one of a few); for floats with
/// `k == 3`, a NaN with a payload.
fn literal(elem: ScalarType, k: usize) -> String {
    use ScalarType::*;
    match (elem, k) {
        (F16, 3) => "0h7E01".into(),
        (BF16, 3) => "0h7FC1".into(),
        (F32, 3) => "0f7FC00001".into(),
        (F64, 3) => "0d7FF8000000000001".into(),
        (F16 | BF16 | F32 | F64, _) => format!("{}.5", k as i32 - 1),
        (t, _) if t.is_signed_int() => format!("{}", k as i32 - 2),
        _ => format!("{}", 3 * k + 1),
    }
}

const INDEX_TYPES: [&str; 8] = ["u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64"];

/// The kernel of every vector access of `width` elements of `elem` through a pointer in `space`.
fn vector_kernel(space: &str, elem: ScalarType, w: VecWidth) -> String {
    let n = w.len();
    let mut params = vec![];
    let mut body = String::new();
    let mut shared = String::new();
    let ptrs: Vec<String> = if space == "global" {
        params.push(format!("%p: ptr<global, {elem}>"));
        vec!["%p".into()]
    } else {
        shared.push_str(&format!("  shared @t: {elem}[64] align 16\n  shared @dy: {elem}[] align 16\n"));
        body.push_str("  %p = addr @t\n  %q = addr @dy\n");
        vec!["%p".into(), "%q".into()]
    };
    for (j, it) in INDEX_TYPES.iter().enumerate() {
        params.push(format!("%i{j}: {it}"));
    }
    // The vector to store, built from constants (one a NaN for floats) and a loaded element.
    let elems: Vec<String> = (0..n).map(|k| literal(elem, k + 2)).collect();
    body.push_str(&format!("  %c = vec.v{n}.{elem} {}\n", elems.join(", ")));
    for (pi, p) in ptrs.iter().enumerate() {
        for j in 0..INDEX_TYPES.len() {
            body.push_str(&format!("  %v{pi}_{j} = load.v{n} {p}[%i{j}]\n"));
            body.push_str(&format!("  store.v{n} {p}[%i{j}], %v{pi}_{j}\n"));
        }
        // Constant indices: zero, one vector on, one vector back (the verifier checks alignment).
        body.push_str(&format!("  %k{pi} = load.v{n} {p}[{n}]\n"));
        body.push_str(&format!("  store.v{n} {p}[0], %c\n"));
        body.push_str(&format!("  %off{pi} = offset {p}, {}\n", 2 * n));
        // -n as a wrapping u64 index (the text's untyped index constant).
        body.push_str(&format!("  store.v{n} %off{pi}[0x{:X}], %k{pi}\n", (n as u64).wrapping_neg()));
    }
    // Every lane: extract, insert a value, insert a constant.
    let mut cur = "%v0_0".to_string();
    for lane in 0..n {
        body.push_str(&format!("  %e{lane} = extract.v{n}.{elem} %c, {lane}\n"));
        body.push_str(&format!("  %x{lane} = insert.v{n}.{elem} {cur}, {lane}, %e{lane}\n"));
        body.push_str(&format!("  %y{lane} = insert.v{n}.{elem} %x{lane}, {lane}, {}\n", literal(elem, lane)));
        cur = format!("%y{lane}");
    }
    let regs: Vec<String> = (0..n).map(|l| format!("%e{}", n - 1 - l)).collect();
    body.push_str(&format!("  %r = vec.v{n}.{elem} {}\n", regs.join(", ")));
    body.push_str(&format!("  store.v{n} %p[0], {cur}\n  store.v{n} %p[{n}], %r\n"));
    format!("kernel @vec_{space}_{elem}_v{n}({}) {{\n{shared}entry:\n{body}  ret\n}}\n", params.join(", "))
}

#[test]
fn every_vector_access_and_element_op_assembles() {
    let mut kernels = 0;
    for space in ["global", "shared"] {
        for elem in ScalarType::ALL {
            for w in VecWidth::ALL {
                if Type::vec(w.len() as u64, elem).is_err() {
                    continue;
                }
                let src = vector_kernel(space, elem, w);
                let ptx = assemble(&src, &format!("{space} vec<{}, {elem}>", w.len()));
                kernels += 1;
                let ins = instructions(&ptx);
                let (ld, st) = (
                    format!("ld.{space}.v{}.{} {{", w.len(), ptx_mem_type(elem)),
                    format!("st.{space}.v{}.{} [", w.len(), ptx_mem_type(elem)),
                );
                let accesses = if space == "global" { 1 } else { 2 } * (INDEX_TYPES.len() + 1);
                let loads: Vec<&&str> = ins.iter().filter(|l| l.starts_with(&ld)).collect();
                let stores: Vec<&&str> = ins.iter().filter(|l| l.starts_with(&st)).collect();
                assert_eq!(loads.len(), accesses, "{src}\n{ptx}");
                // Per pointer one more store (the built vector, the constant-index copy); then two.
                let pointers = if space == "global" { 1 } else { 2 };
                assert_eq!(stores.len(), accesses + pointers + 2, "{src}\n{ptx}");
                // Each lists one register per element.
                for l in loads.iter().chain(&stores) {
                    let list = l.split('{').nth(1).and_then(|r| r.split('}').next()).unwrap_or("");
                    assert_eq!(list.split(", ").count(), w.len(), "{l}");
                }
                // No scalar access and no 16-bit float type names in memory instructions.
                assert!(!ins.iter().any(|l| l.starts_with(&format!("ld.{space}.{}", ptx_mem_type(elem)))), "{ptx}");
                assert!(
                    !ins.iter().any(|l| (l.starts_with("ld.") || l.starts_with("st.")) && l.contains("f16 ")),
                    "{ptx}"
                );
            }
        }
    }
    // 12 element types with 2 elements, 9 with 4 (no 4 × 64 bits), in two spaces.
    assert_eq!(kernels, 2 * (12 + 9));
}

const TENSOR: &str = "
kernel @tc(%a: ptr<global, u32>, %c: ptr<global, f32>, %i: u32, %j: s64) {
  shared @h: f16[512] align 16
  shared @bh: bf16[512] align 16
  shared @u: u16[512] align 16
  shared @s: s16[] align 16
entry:
  %fa = load.v4 %a[%i]
  %fb = load.v2 %a[%i]
  %fc = load.v4 %c[%i]
  %d1 = mma.m16n8k16.f16 %fa, %fb, %fc
  %d2 = mma.m16n8k16.bf16 %fa, %fb, %d1
  %d3 = mma.m16n8k8.tf32 %fa, %fb, %d2
  store.v4 %c[%i], %d3
  %ph = addr @h
  %pb = addr @bh
  %pu = addr @u
  %ps = addr @s
LDMATRIX
  ret
}
";

#[test]
fn tensor_core_ops_assemble() {
    let mut ld = String::new();
    let mut n = 0;
    for p in ["%ph", "%pb", "%pu", "%ps"] {
        for x in ["x1", "x2", "x4"] {
            for trans in ["", ".trans"] {
                for idx in ["%i", "%j", "8"] {
                    n += 1;
                    ld.push_str(&format!("  %m{n} = ldmatrix.{x}{trans} {p}[{idx}]\n"));
                    let st = match x {
                        "x1" => "store %a[%i]",
                        "x2" => "store.v2 %a[%i]",
                        _ => "store.v4 %a[%i]",
                    };
                    ld.push_str(&format!("  {st}, %m{n}\n"));
                }
            }
        }
    }
    let src = TENSOR.replace("LDMATRIX", &ld);
    let ptx = assemble(&src, "tensor cores");
    let ins = instructions(&ptx);
    for (kind, shape) in [("f16", "m16n8k16"), ("bf16", "m16n8k16"), ("tf32", "m16n8k8")] {
        let head = format!("mma.sync.aligned.{shape}.row.col.f32.{kind}.{kind}.f32 {{%f");
        let line = ins.iter().find(|l| l.starts_with(&head)).unwrap_or_else(|| panic!("no `{head}` in\n{ptx}"));
        // D {4 .f32}, A {4 .b32}, B {2 .b32}, C {4 .f32}.
        let lists: Vec<usize> =
            line.split('{').skip(1).map(|r| r.split('}').next().unwrap().split(", ").count()).collect();
        assert_eq!(lists, [4, 4, 2, 4], "{line}");
        let regs: Vec<&str> = line.split(['{', '}', ',', ' ']).filter(|t| t.starts_with('%')).collect();
        assert!(regs[..4].iter().chain(&regs[10..]).all(|r| r.starts_with("%f")), "{line}");
        assert!(regs[4..10].iter().all(|r| r.starts_with("%r")), "{line}");
    }
    for (x, count) in [("x1", 1), ("x2", 2), ("x4", 4)] {
        for trans in ["", ".trans"] {
            let head = format!("ldmatrix.sync.aligned.m8n8.{x}{trans}.shared.b16 {{");
            let lines: Vec<&&str> = ins.iter().filter(|l| l.starts_with(&head)).collect();
            assert_eq!(lines.len(), 12, "{head} in\n{ptx}");
            for l in lines {
                let list = l.split('{').nth(1).and_then(|r| r.split('}').next()).unwrap_or("");
                assert_eq!(list.split(", ").count(), count, "{l}");
                assert!(l.ends_with(']'), "{l}");
            }
        }
    }
}

#[test]
fn async_copies_assemble() {
    use ScalarType::*;
    let mut params = vec!["%n: u32".to_string(), "%i: u32".to_string(), "%j: s64".to_string()];
    let mut shared = String::new();
    let mut body = String::new();
    let elems = [U8, S16, F16, BF16, U32, F32, S64, F64];
    for (e, t) in elems.iter().enumerate() {
        params.push(format!("%g{e}: ptr<global, {t}>"));
        shared.push_str(&format!("  shared @s{e}: {t}[64] align 16\n"));
        body.push_str(&format!("  %s{e} = addr @s{e}\n"));
    }
    let mut copies = [0usize; 3];
    for (si, size) in [4u32, 8, 16].into_iter().enumerate() {
        for (d, dt) in elems.iter().enumerate() {
            for (s, st) in elems.iter().enumerate() {
                if dt.bytes() > size || st.bytes() > size || (d + s + si) % 3 != 0 {
                    continue;
                }
                let (dn, sn) = ((size / dt.bytes()) as usize, (size / st.bytes()) as usize);
                for (di, sidx, bytes) in [
                    ("%i".to_string(), "%j".to_string(), "%n".to_string()),
                    (format!("{dn}"), format!("{}", 2 * sn), "0".to_string()),
                    ("%i".to_string(), "0".to_string(), format!("{}", size / 2)),
                    ("0".to_string(), "%i".to_string(), format!("{size}")),
                ] {
                    body.push_str(&format!("  cp.async.{size} %s{d}[{di}], %g{s}[{sidx}], {bytes}\n"));
                    copies[si] += 1;
                }
            }
        }
        body.push_str("  cp.async.commit\n");
    }
    body.push_str("  cp.async.wait 7\n  cp.async.wait 1\n  cp.async.wait 0\n");
    let src = format!("kernel @copies({}) {{\n{shared}entry:\n{body}  ret\n}}\n", params.join(", "));
    let ptx = assemble(&src, "async copies");
    let ins = instructions(&ptx);
    for (si, (size, cache)) in [(4, "ca"), (8, "ca"), (16, "cg")].into_iter().enumerate() {
        let head = format!("cp.async.{cache}.shared.global [");
        let lines: Vec<&&str> =
            ins.iter().filter(|l| l.starts_with(&head) && l.contains(&format!("], {size}, "))).collect();
        assert!(copies[si] > 0);
        assert_eq!(lines.len(), copies[si], "{size}-byte copies in\n{ptx}");
        // The source size: the register, or the constant.
        assert!(lines.iter().any(|l| l.ends_with(&format!(", {size}, %r0"))), "{ptx}");
        assert!(lines.iter().any(|l| l.ends_with(&format!(", {size}, 0"))), "{ptx}");
    }
    assert_eq!(ins.iter().filter(|l| **l == "cp.async.commit_group").count(), 3, "{ptx}");
    for n in [7, 1, 0] {
        assert!(ins.contains(&format!("cp.async.wait_group {n}").as_str()), "{ptx}");
    }
}

const LOOPS: &str = "
kernel @loops(%x: ptr<global, u32>, %c: ptr<global, f32>, %n: u32) {
entry:
  %i = global_id.x
  %i4 = shl.u32 %i, 2
  %a = load.v4 %x[%i4]
  %b = load.v2 %x[%i4]
  %p0 = load.v2 %x[0]
  %acc0 = load.v4 %c[%i4]
  jmp head(0, %acc0, %p0, %b)
head(%k: u32, %acc: vec<4, f32>, %p: vec<2, u32>, %q: vec<2, u32>):
  %more = lt.u32 %k, %n
  br %more, body, done
body:
  %acc1 = mma.m16n8k16.f16 %a, %p, %acc
  %k1 = add.u32 %k, 1
  jmp head(%k1, %acc1, %q, %p)
done:
  store.v4 %c[%i4], %acc
  store.v2 %x[%i4], %p
  store.v2 %x[0], %q
  ret
}
";

#[test]
fn vector_block_parameters_across_a_loop_assemble() {
    let ptx = assemble(LOOPS, "vector loop parameters");
    let ins = instructions(&ptx);
    // The accumulator's `mma` writes its parameter's registers (D = C), so only the rotated pair
    // moves on the back edge: 2 × 2 elements and one temporary per element cycle.
    let mma = ins.iter().find(|l| l.starts_with("mma.sync")).expect("an mma");
    let lists: Vec<&str> = mma.split('{').skip(1).map(|r| r.split('}').next().unwrap()).collect();
    assert_eq!(lists[0], lists[3], "D shares C's registers: {mma}");
    let moves = ins.iter().filter(|l| l.starts_with("mov.b32 %r")).count();
    assert!(moves >= 6, "the rotation moves every element:\n{ptx}");
}

const FUNCS: &str = "
func @f(%p: ptr<global, u8>, %i: u32) -> vec<4, u8> {
entry:
  %v = load.v4 %p[%i]
  ret %v
}
func @g(%x: f64) -> vec<2, f64> {
entry:
  %v = vec.v2.f64 %x, 1.0
  ret %v
}
func @h(%x: bf16) -> vec<4, bf16> {
entry:
  %v = vec.v4.bf16 %x, %x, 0h7FC1, %x
  ret %v
}
kernel @k(%p: ptr<global, u8>, %d: ptr<global, f64>, %b: ptr<global, bf16>) {
entry:
  %v = call @f(%p, 4)
  store.v4 %p[0], %v
  %x = load %d[0]
  %w = call @g(%x)
  store.v2 %d[0], %w
  %y = load %b[0]
  %u = call @h(%y)
  store.v4 %b[0], %u
  %unused = call @h(%y)
  ret
}
";

#[test]
fn vector_results_of_functions_assemble() {
    let ptx = assemble(FUNCS, "functions returning vectors");
    for decl in [
        ".func (.param .align 4 .b8 func_retval0[4]) f(",
        ".func (.param .align 16 .b8 func_retval0[16]) g(",
        ".func (.param .align 8 .b8 func_retval0[8]) h(",
    ] {
        assert!(ptx.contains(decl), "no `{decl}` in\n{ptx}");
    }
    let ins = instructions(&ptx);
    for l in
        ["st.param.v4.u8 [func_retval0], {", "st.param.v2.f64 [func_retval0], {", "st.param.v4.b16 [func_retval0], {"]
    {
        assert!(ins.iter().any(|i| i.starts_with(l)), "no `{l}` in\n{ptx}");
    }
    for l in ["ld.param.v4.u8 {", "ld.param.v2.f64 {", "ld.param.v4.b16 {"] {
        assert!(ins.iter().any(|i| i.starts_with(l) && i.ends_with("[retval0]")), "no `{l}` in\n{ptx}");
    }
}

/// `ptxas -v`'s register counts for a small `mma` kernel (printed, for the record; the test only
/// requires that ptxas reports them).
#[test]
fn mma_kernel_register_counts() {
    if tools::require_tool_or_skip("ptxas").is_none() {
        return;
    }
    let src = "
kernel @mma1(%a: ptr<global, u32>, %c: ptr<global, f32>) {
entry:
  %l = laneid
  %i = shl.u32 %l, 2
  %fa = load.v4 %a[%i]
  %fb = load.v2 %a[%i]
  %fc = load.v4 %c[%i]
  %d = mma.m16n8k16.f16 %fa, %fb, %fc
  store.v4 %c[%i], %d
  ret
}
";
    for sm in [SmVersion::Sm80, SmVersion::Sm90] {
        let report = tools::run_ptxas(&emit(src, sm), sm).unwrap_or_else(|e| panic!("{e}"));
        let k = report.kernels.iter().find(|k| k.name == "mma1").expect("mma1's resources");
        eprintln!("mma1 on {}: {} registers", sm.name(), k.registers);
        assert!(k.registers >= 10 && k.registers <= 64, "{k:?}");
    }
}
