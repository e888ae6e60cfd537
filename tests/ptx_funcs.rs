//! Device functions in PTX, as emitted when calls are not inlined (a pipeline without `inline`, or
//! `kir ptx`, which emits the module as written): every function a kernel calls is a `.func` with
//! the PTX calling convention, defined before its first caller, every call a `call.uni` sequence
//! (see `backend-ptx/src/emit.rs`, "Device functions and calls"), and functions no kernel calls
//! (an imported library's others, or all of them after inlining) are left out.
//!
//! What it guarantees: each module below (a function with a result, a void function storing
//! through a global pointer, a function given a shared pointer that waits at a barrier, nested
//! calls, `pred` parameters and results, 8-, 16- and 64-bit integers, `f16`/`bf16`/`f64`, constant
//! arguments of every type, names that would clash with the calling convention's) is emitted with
//! callees before callers and is accepted by `ptxas` for sm_80 and sm_90. Without ptxas the
//! assembly part prints `skip:` and passes, except with `CI=true`, where it fails
//! (`kir_backend_ptx::tools::require_tool_or_skip`). Emitting a body that calls functions without
//! its module, or a module whose callee is missing, is an error, never a panic. The PTX runs in the
//! PTX emulator (`kir-ptx-emu`, which implements `.func`/`call` from the PTX ISA) with the results
//! the kir source means. One small module's PTX is a snapshot, so that reviewers can read the
//! calling convention.

mod cli;

use kir_backend_ptx::{emit_kernel_in_module, emit_module, tools};
use kir_backend_ptx::{PtxOptions, SmVersion};
use kir_ir::verify::check as verify;

const RESULT: &str = "\
func @warp_sum(%v: f32) -> f32 {
entry:
  %a = shfl.bfly.f32 %v, 16, 0xffffffff
  %s = add.f32 %v, %a
  ret %s
}
kernel @k(%out: ptr<global, f32>) {
entry:
  %t = tid.x
  %f = cvt.rn.f32.u32 %t
  %s = call @warp_sum(%f)
  store %out[%t], %s
  call @warp_sum(1.5)
  ret
}
";

const VOID_STORE: &str = "\
func @store1(%p: ptr<global, f32>, %i: u32, %v: f32) {
entry:
  %big = gt.f32 %v, 100.0
  br %big, clamp, done
clamp:
  store %p[%i], 100.0
  ret
done:
  store %p[%i], %v
  ret
}
kernel @k(%out: ptr<global, f32>, %n: u32) {
entry:
  %t = global_id.x
  %inb = lt.u32 %t, %n
  br %inb, body, exit
body:
  %f = cvt.rn.f32.u32 %t
  call @store1(%out, %t, %f)
  jmp exit
exit:
  ret
}
";

const SHARED_BARRIER: &str = "\
func @exchange(%s: ptr<shared, f32>, %src: ptr<global, f32>, %i: u32) -> f32 {
entry:
  %v = load %src[%i]
  store %s[%i], %v
  barrier
  %j = xor.u32 %i, 1
  %w = load %s[%j]
  ret %w
}
kernel @k(%x: ptr<global, f32>, %out: ptr<global, f32>) {
  shared @tile: f32[64]
  shared @dyn: u32[]
entry:
  %t = tid.x
  %s = addr @tile
  %w = call @exchange(%s, %x, %t)
  store %out[%t], %w
  ret
}
";

/// Callers are written before their callees: emission must reorder them.
const NESTED: &str = "\
func @outer(%a: u32, %b: u32) -> u32 {
entry:
  %x = call @middle(%a)
  %y = call @middle(%b)
  %z = add.u32 %x, %y
  ret %z
}
func @middle(%a: u32) -> u32 {
entry:
  %c = call @inner(%a, 3)
  %d = call @inner(%c, %a)
  ret %d
}
func @inner(%a: u32, %k: u32) -> u32 {
entry:
  %m = mul.u32 %a, %k
  %lane = laneid
  %r = add.u32 %m, %lane
  ret %r
}
kernel @k(%out: ptr<global, u32>) {
entry:
  %t = tid.x
  %v = call @outer(%t, 7)
  store %out[%t], %v
  ret
}
";

const PRED: &str = "\
func @both(%a: pred, %b: pred) -> pred {
entry:
  %c = and.pred %a, %b
  ret %c
}
func @is_neg(%x: f32) -> pred {
entry:
  %n = lt.f32 %x, 0.0
  ret %n
}
kernel @k(%x: ptr<global, f32>, %out: ptr<global, u32>, %flag: pred) {
entry:
  %t = tid.x
  %v = load %x[%t]
  %n = call @is_neg(%v)
  %b = call @both(%n, %flag)
  %c = call @both(true, %b)
  %r = select.u32 %c, 1, 0
  store %out[%t], %r
  ret
}
";

/// Every scalar width through parameters and results, from registers and as constants.
const TYPES: &str = "\
func @h(%a: f16, %b: f16) -> f16 {
entry:
  %c = add.f16 %a, %b
  ret %c
}
func @bf(%a: bf16) -> bf16 {
entry:
  %c = mul.bf16 %a, %a
  ret %c
}
func @narrow(%a: u8, %b: s8, %c: u16, %d: s16) -> s16 {
entry:
  %a16 = cvt.s16.u8 %a
  %b16 = cvt.s16.s8 %b
  %e = add.s16 %a16, %b16
  %f = cvt.s16.u16 %c
  %g = add.s16 %e, %f
  %r = add.s16 %g, %d
  ret %r
}
func @small(%a: u8) -> s8 {
entry:
  %b = cvt.s8.u8 %a
  ret %b
}
func @wide(%a: u64, %b: s64, %c: f64, %p: ptr<global, f64>) -> ptr<global, f64> {
entry:
  %f = cvt.rn.f64.u64 %a
  %g = cvt.rn.f64.s64 %b
  %s = add.f64 %f, %g
  %t = add.f64 %s, %c
  store %p[0], %t
  %q = offset %p, 1
  ret %q
}
kernel @k(%hs: ptr<global, f16>, %bs: ptr<global, bf16>, %ss: ptr<global, s16>, %ds: ptr<global, f64>, %n: u8) {
entry:
  %t = tid.x
  %x = load %hs[%t]
  %y = call @h(%x, 0h3c00)
  %z = call @h(-2.5, %y)
  store %hs[%t], %z
  %bv = load %bs[%t]
  %bw = call @bf(%bv)
  %bz = call @bf(0.5)
  %bsum = add.bf16 %bw, %bz
  store %bs[%t], %bsum
  %sv = load %ss[%t]
  %sn = call @narrow(%n, -3, 65535, %sv)
  %sc = call @narrow(200, 127, 7, -32768)
  %ssum = add.s16 %sn, %sc
  store %ss[%t], %ssum
  %m = call @small(%n)
  %m2 = call @small(255)
  %t64 = cvt.u64.u32 %t
  %q = call @wide(%t64, -5, 0.25, %ds)
  %q2v = cvt.rn.f64.u32 %t
  %q2 = call @wide(0xffffffffffffffff, -9223372036854775808, %q2v, %q)
  ret
}
";

/// Function names that are also names of the calling convention or of parameters in scope.
const CLASHES: &str = "\
func @param0(%a: u32) -> u32 {
entry:
  ret %a
}
func @retval0() -> u32 {
entry:
  ret 4
}
func @func_retval0(%a: u32) -> u32 {
entry:
  %b = call @retval0()
  %c = add.u32 %a, %b
  ret %c
}
func @k_param_0(%a: u32) -> u32 {
entry:
  %b = call @param0(%a)
  %c = call @func_retval0(%b)
  ret %c
}
func @k.smem.tile() {
entry:
  ret
}
kernel @k(%out: ptr<global, u32>) {
  shared @tile: u32[32]
entry:
  %t = tid.x
  %v = call @k_param_0(%t)
  call @k.smem.tile()
  store %out[%t], %v
  ret
}
";

fn cases() -> Vec<(&'static str, String)> {
    vec![
        ("result", RESULT.to_string()),
        ("void_store", VOID_STORE.to_string()),
        ("shared_barrier", SHARED_BARRIER.to_string()),
        ("nested", NESTED.to_string()),
        ("pred", PRED.to_string()),
        ("types", TYPES.to_string()),
        ("clashes", CLASHES.to_string()),
    ]
}

fn parse(what: &str, src: &str) -> kir_ir::Module {
    let m = kir_ir::parse(src).unwrap_or_else(|d| panic!("{what}: does not parse: {d:#?}"));
    let errors: Vec<_> = kir_ir::verify::verify_module(&m).into_iter().filter(|d| d.is_error()).collect();
    assert!(errors.is_empty(), "{what}: does not verify: {errors:#?}");
    m
}

fn emit(what: &str, src: &str, sm: SmVersion) -> String {
    let m = parse(what, src);
    emit_module(&verify(m.clone()).unwrap(), &PtxOptions { sm, source: Some(src.to_string()), comments: true })
        .unwrap_or_else(|d| panic!("{what}: emission failed: {d:#?}"))
}

/// The position of the line defining `.func NAME` (with or without a result).
fn func_def(ptx: &str, name: &str) -> usize {
    ptx.lines()
        .position(|l| l.starts_with(".func ") && l.ends_with(&format!(" {name}(")))
        .unwrap_or_else(|| panic!("no `.func {name}` in\n{ptx}"))
}

/// Lines that call `name`.
fn call_lines(ptx: &str, name: &str) -> Vec<usize> {
    let tail = format!(" {name}, (");
    ptx.lines()
        .enumerate()
        .filter(|(_, l)| l.trim_start().starts_with("call") && l.contains(&tail))
        .map(|(i, _)| i)
        .collect()
}

#[test]
fn every_function_is_a_func_defined_before_its_callers() {
    for (what, src) in cases() {
        let m = parse(what, &src);
        let ptx = emit(what, &src, SmVersion::Sm80);
        assert_eq!(ptx.matches(".func ").count(), m.funcs.len(), "{what}: one .func per function\n{ptx}");
        assert_eq!(ptx.matches(".visible .entry ").count(), m.kernels.len(), "{what}\n{ptx}");
        assert!(!ptx.contains(".visible .func"), "{what}: functions are module-internal\n{ptx}");
        assert!(!ptx.contains("todo") && !ptx.contains("TODO"), "{what}\n{ptx}");
        // Every function is defined before every line that calls it.
        let table_names: Vec<String> = m
            .funcs
            .iter()
            .map(|f| {
                let plain = kir_backend_ptx::emit::ptx_ident(&f.name);
                if ptx.lines().any(|l| l.starts_with(".func ") && l.ends_with(&format!(" {plain}("))) {
                    plain
                } else {
                    format!("$func${plain}$")
                }
            })
            .collect();
        for name in &table_names {
            let def = func_def(&ptx, name);
            for call in call_lines(&ptx, name) {
                assert!(def < call, "{what}: `{name}` is called on line {call} before its definition on line {def}");
            }
        }
        // Calls are unguarded direct calls: `.uni` by PTX's definition.
        let calls = ptx.lines().filter(|l| l.trim_start().starts_with("call")).count();
        let uni = ptx.lines().filter(|l| l.trim_start().starts_with("call.uni ")).count();
        assert_eq!(calls, uni, "{what}\n{ptx}");
        // Nothing kernel-only inside a function.
        for (i, l) in ptx.lines().enumerate() {
            if l.starts_with(".func ") {
                let body: Vec<&str> = ptx.lines().skip(i).take_while(|l| *l != "}").collect();
                assert!(
                    !body.iter().any(|l| l.contains("cvta.to.global") || l.starts_with(".reqntid")),
                    "{what}\n{ptx}"
                );
            }
        }
    }
}

#[test]
fn ptxas_accepts_functions_and_calls_for_sm_80_and_sm_90() {
    if tools::require_tool_or_skip("ptxas").is_none() {
        return;
    }
    for (what, src) in cases() {
        for sm in [SmVersion::Sm80, SmVersion::Sm90] {
            let ptx = emit(what, &src, sm);
            tools::run_ptxas(&ptx, sm).unwrap_or_else(|e| panic!("{what} ({}): {e}\n{ptx}", sm.name()));
        }
    }
}

#[test]
fn the_calling_convention() {
    let ptx = emit("result", RESULT, SmVersion::Sm80);
    // The callee: the result and every parameter in 32-bit `.param` slots, returned through
    // `func_retval0`.
    assert!(ptx.contains(".func (.param .b32 func_retval0) warp_sum(\n\t.param .b32 warp_sum_param_0\n)\n"), "{ptx}");
    assert!(ptx.contains("\tst.param.f32 [func_retval0], %f2;\n\tret;\n"), "{ptx}");
    // The caller: a scope with the argument and return slots, `call.uni`, the result loaded back;
    // a constant argument is stored as an immediate; an unused result still has its slot.
    assert!(
        ptx.contains(
            "\t{\n\t.param .b32 param0;\n\tst.param.f32 [param0], %f0;\n\t.param .b32 retval0;\n\
             \tcall.uni (retval0), warp_sum, (param0);\n\tld.param.f32 %f1, [retval0];\n\t}\n"
        ),
        "{ptx}"
    );
    assert!(
        ptx.contains(
            "\tst.param.f32 [param0], 0f3FC00000;\n\t.param .b32 retval0;\n\tcall.uni (retval0), warp_sum, (param0);\n\t}\n"
        ),
        "{ptx}"
    );

    // Global pointers are passed as the kernel's global-window address (no second `cvta`), shared
    // pointers as the shared-window address, and both used with their space's instructions.
    let ptx = emit("shared_barrier", SHARED_BARRIER, SmVersion::Sm80);
    let func = &ptx[ptx.find(".func").unwrap()..ptx.find("// .kir kernel").unwrap()];
    assert!(func.contains(".param .b64 exchange_param_0") && func.contains(".param .b64 exchange_param_1"), "{func}");
    assert!(
        func.contains("ld.global.f32") && func.contains("st.shared.f32") && func.contains("ld.shared.f32"),
        "{func}"
    );
    assert!(func.contains("\tbar.sync 0;\n"), "{func}");
    assert!(!func.contains("cvta"), "{func}");
    assert!(ptx.contains("mov.u64 %rd2, k$smem$tile;"), "{ptx}");

    // Narrow types are promoted into 32-bit slots; the callee reads the low bytes.
    let ptx = emit("pred", PRED, SmVersion::Sm80);
    assert!(ptx.contains(
        ".func (.param .b32 func_retval0) both(\n\t.param .b32 both_param_0,\n\t.param .b32 both_param_1\n)"
    ));
    assert!(ptx.contains("\tld.param.u8 %rs0, [both_param_0];\n\tsetp.ne.u16 %p0, %rs0, 0;\n"), "{ptx}");
    assert!(ptx.contains("selp.u32 %r") && ptx.contains("\tst.param.b32 [param0], 1;\n"), "{ptx}");

    // Names that the convention or a parameter in scope spells are renamed, and only those.
    let ptx = emit("clashes", CLASHES, SmVersion::Sm80);
    for renamed in ["$func$param0$", "$func$retval0$", "$func$func_retval0$", "$func$k_param_0$", "$func$k$smem$tile$"]
    {
        assert!(ptx.contains(&format!(" {renamed}(")), "{renamed}\n{ptx}");
    }
}

#[test]
fn snapshot_of_a_call() {
    const SRC: &str = "\
func @axpy(%a: f32, %x: f32, %y: f32) -> f32 {
entry:
  %m = mul.f32 %a, %x
  %s = add.f32 %m, %y
  ret %s
}
func @put(%p: ptr<global, f32>, %i: u32, %v: f32, %keep: pred) {
entry:
  br %keep, write, done
write:
  store %p[%i], %v
  jmp done
done:
  ret
}
kernel @k(%x: ptr<global, f32>, %y: ptr<global, f32>, %a: f32) {
entry:
  %i = tid.x
  %xv = load %x[%i]
  %yv = load %y[%i]
  %r = call @axpy(%a, %xv, %yv)
  call @put(%y, %i, %r, true)
  ret
}
";
    let m = parse("snapshot", SRC);
    let ptx = emit_module(
        &verify(m.clone()).unwrap(),
        &PtxOptions { sm: SmVersion::Sm80, source: Some(SRC.to_string()), comments: true },
    )
    .expect("emits");
    insta::assert_snapshot!("ptx_funcs_call", ptx);
}

#[test]
fn bodies_that_call_need_their_module() {
    let m = parse("result", RESULT);
    // The emitter takes a checked module, so a kernel comes with the functions it calls (and no others), with
    // `emit_kernel_in_module` as with `emit_module`.
    let mut two = m.clone();
    two.funcs.push(parse("x", "func @other() {\nentry:\n  ret\n}\n").funcs.remove(0));
    let two = verify(two.clone()).unwrap();
    let ptx = emit_kernel_in_module(&two, "k", &PtxOptions::default()).expect("emits");
    assert!(ptx.contains(" warp_sum(") && !ptx.contains(" other("), "{ptx}");
    let ptx = emit_module(&two, &PtxOptions::default()).expect("emits");
    assert!(ptx.contains(" warp_sum(") && !ptx.contains(" other("), "{ptx}");
    // After inlining, the functions stay in the module but nothing calls them: no `.func`.
    let mut inlined = parse("nested", NESTED);
    kir_ir::inline::inline_module(&mut inlined).expect("inlines");
    let ptx = emit_module(&verify(inlined.clone()).unwrap(), &PtxOptions::default()).expect("emits");
    assert!(!ptx.contains(".func") && !ptx.contains("call"), "{ptx}");
    assert!(emit_kernel_in_module(&two, "nope", &PtxOptions::default()).is_err());
    // A called function is a `.func` that ptxas accepts.
    let ptx = emit_kernel_in_module(&two, "k", &PtxOptions::default()).expect("emits");
    assert!(ptx.contains(".func (.param .b32 func_retval0) warp_sum("), "{ptx}");
    if tools::require_tool_or_skip("ptxas").is_some() {
        tools::run_ptxas(&ptx, SmVersion::Sm80).unwrap_or_else(|e| panic!("{e}\n{ptx}"));
    }
}

#[test]
fn missing_or_recursive_functions_are_errors() {
    let m = parse("result", RESULT);
    let mut missing = m.clone();
    missing.funcs.clear();
    // The emitter takes a verified module: a call to a missing function never gets that far.
    let d = verify(missing).expect_err("call to a missing function");
    assert!(d.list().iter().any(|d| d.message.contains("unknown function `@warp_sum`")), "{d}");
    // Nor does recursion.
    let rec = "func @f(%a: u32) -> u32 {\nentry:\n  %b = call @f(%a)\n  ret %b\n}\n\
               kernel @k() {\nentry:\n  %x = call @f(1)\n  ret\n}\n";
    let rm = kir_ir::parse(rec).expect("parses");
    let d = verify(rm).expect_err("recursion");
    assert!(d.list().iter().any(|d| d.message.contains("calls itself")), "{d}");
}

#[test]
fn kir_ptx_emits_calls_as_written() {
    let dir = std::env::temp_dir().join(format!("kir-ptx-funcs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("calls.kir");
    std::fs::write(&path, NESTED).unwrap();
    let (code, out, err) = cli::kir(&["ptx", path.to_str().unwrap(), "--sm", "sm_90"]);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains(".func (.param .b32 func_retval0) inner(") && out.contains("call.uni (retval0), outer,"),
        "{out}"
    );
    if tools::require_tool_or_skip("ptxas").is_some() {
        tools::run_ptxas(&out, SmVersion::Sm90).unwrap_or_else(|e| panic!("{e}\n{out}"));
    }
}

/// The non-inlined PTX runs in the PTX emulator (which runs `.func`/`call` as the ABI defines
/// them), with the results the kir source means.
#[test]
fn the_emulator_runs_the_calls() {
    use kir_ptx_emu as emu;
    let load = |what: &str, src: &str| {
        let ptx = emit(what, src, SmVersion::Sm90);
        emu::Module::parse(&ptx).unwrap_or_else(|e| panic!("{what}: {e}\n{ptx}"))
    };
    let words = |mem: &emu::Memory, b| -> Vec<u32> {
        mem.bytes(b).unwrap().chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
    };
    let cfg = |threads, dynamic_shared_bytes| emu::LaunchConfig {
        grid: [1, 1, 1],
        block: [threads, 1, 1],
        dynamic_shared_bytes,
    };
    let opts = emu::Options::default();

    // A function with a result (a warp shuffle inside it), called twice.
    let m = load("result", RESULT);
    let mut mem = emu::Memory::new();
    let out = mem.alloc_zeroed("out", 32 * 4).unwrap();
    emu::launch(&m, "k", &cfg(32, 0), &[emu::Arg::Buffer(out)], &mut mem, &opts).unwrap_or_else(|e| panic!("{e}"));
    let want: Vec<u32> = (0..32u32).map(|t| (t as f32 + (t ^ 16) as f32).to_bits()).collect();
    assert_eq!(words(&mem, out), want);

    // A void function with two `ret`s, called under a bounds check.
    let m = load("void_store", VOID_STORE);
    let mut mem = emu::Memory::new();
    let out = mem.alloc_zeroed("out", 200 * 4).unwrap();
    let args = [emu::Arg::Buffer(out), emu::Arg::Scalar(150)];
    emu::launch(&m, "k", &cfg(256, 0), &args, &mut mem, &opts).unwrap_or_else(|e| panic!("{e}"));
    let want: Vec<u32> = (0..200u32).map(|t| if t < 150 { (t.min(100) as f32).to_bits() } else { 0 }).collect();
    assert_eq!(words(&mem, out), want);

    // A shared pointer and a barrier inside the function.
    let m = load("shared_barrier", SHARED_BARRIER);
    let mut mem = emu::Memory::new();
    let xs: Vec<u8> = (0..64u32).flat_map(|i| (i as f32 * 0.5).to_le_bytes()).collect();
    let x = mem.alloc("x", &xs).unwrap();
    let out = mem.alloc_zeroed("out", 64 * 4).unwrap();
    emu::launch(&m, "k", &cfg(64, 16), &[emu::Arg::Buffer(x), emu::Arg::Buffer(out)], &mut mem, &opts)
        .unwrap_or_else(|e| panic!("{e}"));
    let want: Vec<u32> = (0..64u32).map(|t| ((t ^ 1) as f32 * 0.5).to_bits()).collect();
    assert_eq!(words(&mem, out), want);

    // Nested calls.
    let m = load("nested", NESTED);
    let mut mem = emu::Memory::new();
    let out = mem.alloc_zeroed("out", 64 * 4).unwrap();
    emu::launch(&m, "k", &cfg(64, 0), &[emu::Arg::Buffer(out)], &mut mem, &opts).unwrap_or_else(|e| panic!("{e}"));
    let want: Vec<u32> = (0..64u32)
        .map(|t| {
            let lane = t % 32;
            let inner = |a: u32, k: u32| a.wrapping_mul(k).wrapping_add(lane);
            let middle = |a: u32| inner(inner(a, 3), a);
            middle(t).wrapping_add(middle(7))
        })
        .collect();
    assert_eq!(words(&mem, out), want);

    // `pred` parameters and results.
    let m = load("pred", PRED);
    for flag in [0u64, 1] {
        let mut mem = emu::Memory::new();
        let xs: Vec<u8> = (0..32).flat_map(|i| (i as f32 - 10.0).to_le_bytes()).collect();
        let x = mem.alloc("x", &xs).unwrap();
        let out = mem.alloc_zeroed("out", 32 * 4).unwrap();
        let args = [emu::Arg::Buffer(x), emu::Arg::Buffer(out), emu::Arg::Scalar(flag)];
        emu::launch(&m, "k", &cfg(32, 0), &args, &mut mem, &opts).unwrap_or_else(|e| panic!("{e}"));
        let want: Vec<u32> = (0..32).map(|i| u32::from(flag == 1 && i < 10)).collect();
        assert_eq!(words(&mem, out), want, "flag {flag}");
    }

    // Every width through parameters and results: f16, bf16, 8- and 16-bit integers (constants
    // sign- or zero-extended), 64-bit integers, f64 and a pointer result.
    let m = load("types", TYPES);
    let mut mem = emu::Memory::new();
    let halfs = |v: &dyn Fn(u32) -> u16| -> Vec<u8> { (0..32).flat_map(|t| v(t).to_le_bytes()).collect() };
    let hs = mem.alloc("hs", &halfs(&|t| half::f16::from_f32(t as f32).to_bits())).unwrap();
    let bs = mem.alloc("bs", &halfs(&|t| half::bf16::from_f32((t % 8) as f32).to_bits())).unwrap();
    let ss = mem.alloc("ss", &halfs(&|t| (t as i16 * 1000) as u16)).unwrap();
    let ds = mem.alloc_zeroed("ds", 3 * 8).unwrap();
    let args =
        [emu::Arg::Buffer(hs), emu::Arg::Buffer(bs), emu::Arg::Buffer(ss), emu::Arg::Buffer(ds), emu::Arg::Scalar(5)];
    emu::launch(&m, "k", &cfg(32, 0), &args, &mut mem, &opts).unwrap_or_else(|e| panic!("{e}"));
    let halves =
        |b| -> Vec<u16> { mem.bytes(b).unwrap().chunks(2).map(|c| u16::from_le_bytes([c[0], c[1]])).collect() };
    // h(-2.5, h(x, 1.0)) = x + 1 - 2.5, exact in f16.
    assert_eq!(halves(hs), (0..32).map(|t| half::f16::from_f32(t as f32 - 1.5).to_bits()).collect::<Vec<_>>());
    // bf(v) + bf(0.5) = v*v + 0.25, exact in bf16 for v < 8.
    let want: Vec<u16> = (0..32).map(|t| half::bf16::from_f32(((t % 8) * (t % 8)) as f32 + 0.25).to_bits()).collect();
    assert_eq!(halves(bs), want);
    // narrow(5, -3, 65535, s) + narrow(200, 127, 7, -32768) = (5 - 3 - 1 + s) + (200 + 127 + 7 - 32768).
    let want: Vec<u16> = (0..32)
        .map(|t: i16| {
            (5i16 - 3 - 1).wrapping_add(t.wrapping_mul(1000)).wrapping_add(334i16.wrapping_add(i16::MIN)) as u16
        })
        .collect();
    assert_eq!(halves(ss), want);
    // The second `wide` stores through the pointer the first returned (`ds + 8`).
    let d1 = f64::from_le_bytes(mem.bytes(ds).unwrap()[8..16].try_into().unwrap());
    assert_eq!(d1, (u64::MAX as f64 + i64::MIN as f64) + 31.0);
}
