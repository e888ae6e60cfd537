//! Device functions through the passes: `inline` (a module pass, first in the default pipeline),
//! the kernel passes on function bodies (`ret %v` is a use, a `call` has side effects), dumps and
//! verification with functions, fusion that sees through calls, and barrier verification at every
//! call site.

use kir_ir::{parse, print_kernel, print_module, Module, Op};
use kir_passes::uniformity::{Level, Uniformity, ValueReason};
use kir_passes::{parse_pipeline, registry, run_pipeline_in_place, PassError, PassKind, RunConfig, DEFAULT_PIPELINE};

fn module(src: &str) -> Module {
    let m = parse(src).unwrap_or_else(|d| panic!("{d:?}"));
    let v = kir_ir::verify::verify_module(&m);
    assert!(!kir_ir::diag::has_errors(&v), "{}", kir_ir::diag::render(&v, "t.kir", src, false));
    m
}

fn run(m: &mut Module, pipeline: &str, cfg: &RunConfig) -> Result<String, PassError> {
    let mut out = Vec::new();
    run_pipeline_in_place(m, &parse_pipeline(pipeline).unwrap(), cfg, &mut out)?;
    Ok(String::from_utf8(out).unwrap())
}

fn verified(m: &Module) {
    let v = kir_ir::verify::verify_module(m);
    assert!(!kir_ir::diag::has_errors(&v), "{v:?}\n{}", print_module(m));
}

fn has_call(k: &kir_ir::Kernel) -> bool {
    k.placed_insts().any(|(_, i)| matches!(k.inst(i).op, Op::Call(_)))
}

const SQUARE: &str = "
func @sq(%x: f32) -> f32 {
entry:
  %y = mul.f32 %x, %x
  ret %y
}
func @put(%p: ptr<global, f32>, %i: u32, %v: f32) {
entry:
  %inb = lt.u32 %i, 4
  br %inb, yes, no
yes:
  store %p[%i], %v
  ret
no:
  ret
}
kernel @k(%out: ptr<global, f32>) {
entry:
  %t = tid.x
  %v = call @sq(3.0)
  call @put(%out, %t, %v)
  ret
}
";

#[test]
fn inline_is_a_module_pass_and_first_in_the_default_pipeline() {
    let info = registry().into_iter().find(|p| p.name == "inline").expect("inline is registered");
    assert!(matches!((info.create)(&Default::default()).unwrap(), PassKind::Module(_)));
    assert!(DEFAULT_PIPELINE.starts_with("inline,"), "{DEFAULT_PIPELINE}");
    assert_eq!(parse_pipeline(DEFAULT_PIPELINE).unwrap().steps[0].name(), "inline");
    let err = parse_pipeline("inline{deep}").err().unwrap();
    assert_eq!(err, "unknown option `deep` for pass `inline` (it takes no options)");
}

#[test]
fn the_default_pipeline_inlines_then_optimizes_across_the_call_and_keeps_the_functions() {
    let mut m = module(SQUARE);
    let cfg = RunConfig { verify_each: true, ..RunConfig::default() };
    let mut out = Vec::new();
    let report = run_pipeline_in_place(&mut m, &parse_pipeline(DEFAULT_PIPELINE).unwrap(), &cfg, &mut out).unwrap();
    verified(&m);
    let k = m.kernel("k").unwrap();
    assert!(!has_call(k) && k.callees.is_empty(), "{}", print_kernel(k));
    // `sq(3.0)` folded to 9 once inlined; the stored value is the constant.
    let text = print_kernel(k);
    assert!(text.contains("store %out[%t], 9.0"), "{text}");
    // The functions stay, call-free (and optimized like any body).
    assert_eq!(m.funcs.len(), 2);
    assert!(m.funcs.iter().all(|f| !has_call(f)));
    assert_eq!(report.steps[0].name, "inline");
    assert_eq!(report.steps[0].stats.get("calls inlined"), 2);
    assert_eq!(report.steps[0].changed_kernels, 1, "only @k had calls");
    // The result prints and parses back to the same module.
    let again = parse(&print_module(&m)).unwrap();
    assert!(again.structurally_eq(&m));
}

#[test]
fn inline_dumps_every_body_and_after_change_only_the_rewritten_ones() {
    let mut m = module(SQUARE);
    let cfg = RunConfig { print_after: vec!["inline".into()], ..RunConfig::default() };
    let dumps = run(&mut m, "inline", &cfg).unwrap();
    let headers: Vec<&str> = dumps.lines().filter(|l| l.starts_with("***")).collect();
    assert_eq!(
        headers,
        [
            "*** IR Dump After inline (kernel @k) ***",
            "*** IR Dump After inline (function @sq) ***",
            "*** IR Dump After inline (function @put) ***"
        ]
    );
    // The dump shows the result: the kernel without its calls, the copies named after the callee.
    let kernel_dump = dumps.split("*** IR Dump").nth(1).unwrap();
    assert!(!kernel_dump.contains("call @"), "{kernel_dump}");
    assert!(kernel_dump.contains("%sq.y = mul.f32 3.0, 3.0"), "{kernel_dump}");
    assert!(kernel_dump.contains("put.yes:"), "{kernel_dump}");
    // The kernel dump parses on its own (no call left).
    parse(kernel_dump.split_once('\n').unwrap().1).unwrap();

    let mut m = module(SQUARE);
    let cfg = RunConfig { print_after_change: true, print_before: vec!["inline".into()], ..RunConfig::default() };
    let dumps = run(&mut m, "inline,fold", &cfg).unwrap();
    let headers: Vec<&str> = dumps.lines().filter(|l| l.starts_with("***")).collect();
    assert_eq!(
        headers,
        [
            "*** IR Dump Before inline (kernel @k) ***",
            "*** IR Dump Before inline (function @sq) ***",
            "*** IR Dump Before inline (function @put) ***",
            "*** IR Dump After inline (kernel @k) ***",
            "*** IR Dump After fold (kernel @k) ***",
        ]
    );
}

#[test]
fn inline_on_a_module_without_calls_is_skipped_and_changes_nothing() {
    let src = "kernel @k(%out: ptr<global, u32>) {\nentry:\n  store %out[0], 1\n  ret\n}\n";
    let mut m = module(src);
    let cfg = RunConfig { verify_each: true, print_after_all: true, ..RunConfig::default() };
    let mut out = Vec::new();
    let r = run_pipeline_in_place(&mut m, &parse_pipeline("inline").unwrap(), &cfg, &mut out).unwrap();
    assert_eq!(r.steps[0].changed_kernels, 0);
    assert_eq!(m, module(src));
    assert!(String::from_utf8(out).unwrap().starts_with("*** IR Dump After inline (kernel @k) ***"));
}

/// A kernel already at the inliner's size limit before its call (distinct names, so building it
/// costs only its size).
fn too_big_to_inline() -> String {
    let n = kir_ir::inline::MAX_INLINED_INSTS;
    let mut src = String::from("func @one(%x: u32) -> u32 {\nentry:\n  %y = add.u32 %x, 1\n  ret %y\n}\n");
    src.push_str("kernel @k(%p: ptr<global, u32>) {\nentry:\n  %v0 = add.u32 0, 1\n");
    for i in 1..n {
        src.push_str(&format!("  %v{i} = add.u32 %v{}, 1\n", i - 1));
    }
    src.push_str(&format!("  %r = call @one(%v{})\n  store %p[0], %r\n  ret\n}}\n", n - 1));
    src
}

#[test]
fn an_inlining_error_rejects_the_module_and_keeps_it_as_it_was() {
    let src = too_big_to_inline();
    let mut m = module(&src);
    let err = run(&mut m, "inline", &RunConfig::default()).unwrap_err();
    let PassError::Rejected { pass, diagnostics, .. } = &err else { panic!("{err}") };
    assert_eq!(pass, "inline");
    assert!(diagnostics[0].message.contains("would exceed"), "{diagnostics:?}");
    assert!(diagnostics[0].span().is_some_and(|s| !s.is_dummy()), "located: {diagnostics:?}");
    assert_eq!(m, module(&src));
    // Barrier verification cannot follow those calls either: an error, never a silent pass.
    let d = kir_ir::verify::check_barriers(&m, |_| None);
    assert_eq!(d.len(), 1, "{d:?}");
    assert!(d[0].message.starts_with("cannot verify the barriers of `@k` across its calls"), "{}", d[0].message);
}

#[test]
fn the_input_is_verified_with_the_module_so_recursion_is_caught() {
    // Every body verifies on its own; only the module sees the recursion.
    let src = "func @a() {\nentry:\n  call @b()\n  ret\n}\nfunc @b() {\nentry:\n  call @a()\n  ret\n}\n\
               kernel @k() {\nentry:\n  call @a()\n  ret\n}\n";
    let mut m = parse(src).unwrap();
    let err = run(&mut m, "fold", &RunConfig::default()).unwrap_err();
    assert!(matches!(err, PassError::InvalidInput { .. }), "{err:?}");
}

const FUNC_BODY: &str = "
func @f(%x: u32, %p: ptr<global, u32>) -> u32 {
entry:
  %a = add.u32 2, 3
  %dead = mul.u32 %x, 7
  %unused = call @g(%p)
  %c = eq.u32 %a, 5
  br %c, yes, no
yes:
  jmp out(%a)
no:
  jmp out(%x)
out(%r: u32):
  ret %r
}
func @g(%p: ptr<global, u32>) -> u32 {
entry:
  store %p[0], 1
  ret 0
}
kernel @k(%p: ptr<global, u32>) {
entry:
  %v = call @f(4, %p)
  store %p[1], %v
  ret
}
";

#[test]
fn fold_dce_and_simplify_cfg_work_inside_functions() {
    let mut m = module(FUNC_BODY);
    let cfg = RunConfig { verify_each: true, ..RunConfig::default() };
    run(&mut m, "fold", &cfg).unwrap();
    let f = print_kernel(m.func("f").unwrap());
    // Folded into the branch condition and the block argument.
    assert!(f.contains("br true, yes, no") && f.contains("jmp out(5)"), "{f}");
    run(&mut m, "simplify-cfg", &cfg).unwrap();
    let f = print_kernel(m.func("f").unwrap());
    // The constant branch folded, `out` merged and its parameter replaced: the returned value is
    // rewritten, never dropped.
    assert!(f.contains("ret 5"), "{f}");
    assert!(!f.contains("no:"), "{f}");
    run(&mut m, "dce", &cfg).unwrap();
    let f = print_kernel(m.func("f").unwrap());
    // The dead multiply goes; the call stays although its result is unused (its callee stores).
    assert!(!f.contains("%dead"), "{f}");
    assert!(f.contains("%unused = call @g(%p)"), "{f}");
    verified(&m);
}

#[test]
fn dce_keeps_what_a_function_returns_and_simplify_cfg_keeps_ret_values() {
    let src = "
func @h(%x: u32) -> u32 {
entry:
  %y = mul.u32 %x, 3
  %z = add.u32 %y, 1
  jmp tail(%z)
tail(%w: u32):
  ret %w
}
kernel @k(%p: ptr<global, u32>) {
entry:
  %v = call @h(2)
  store %p[0], %v
  ret
}
";
    let mut m = module(src);
    let cfg = RunConfig { verify_each: true, ..RunConfig::default() };
    run(&mut m, "dce,simplify-cfg,dce", &cfg).unwrap();
    let f = print_kernel(m.func("h").unwrap());
    assert!(f.contains("%y = mul.u32 %x, 3") && f.contains("%z = add.u32 %y, 1"), "{f}");
    assert!(f.contains("ret %z"), "{f}");
    assert!(!f.contains("tail"), "merged: {f}");
    verified(&m);
}

#[test]
fn uniformity_of_a_body_alone_is_conservative_about_calls_and_parameters() {
    let src = "
func @id(%x: u32) -> u32 {
entry:
  ret %x
}
func @fill(%s: ptr<shared, u32>, %v: u32) {
entry:
  store %s[0], %v
  ret
}
kernel @k(%n: u32, %out: ptr<global, u32>) {
  shared @buf: u32[4]
entry:
  %bp = addr @buf
  store %bp[0], %n
  barrier
  %a = call @id(%n)
  call @fill(%bp, %n)
  %b = load %bp[0]
  store %out[0], %b
  ret
}
";
    let m = module(src);
    let k = m.kernel("k").unwrap();
    let u = Uniformity::compute(k);
    let val = |name: &str| kir_ir::ValueId(k.values.iter().position(|v| v.name == name).unwrap() as u32);
    // A call's result is varying (the callee is not analysed here)...
    assert_eq!(u.value_level(val("a")), Level::Varying);
    assert_eq!(u.value_reason(val("a")), Some(ValueReason::Call));
    // ... and a call writes through its pointer arguments: the load after it may race.
    assert_eq!(u.value_level(val("b")), Level::Varying);
    let f = m.func("id").unwrap();
    let uf = Uniformity::compute(f);
    assert_eq!(uf.value_level(f.params[0]), Level::Varying);
    assert_eq!(uf.value_reason(f.params[0]), Some(ValueReason::FuncParam));
    // The same kernel with its calls inlined: @id of a parameter is uniform.
    let mut inl = m.clone();
    kir_ir::inline::inline_module(&mut inl).unwrap();
    let k = inl.kernel("k").unwrap();
    let u = Uniformity::compute(k);
    let a = kir_ir::ValueId(k.values.iter().position(|v| v.name == "a").unwrap() as u32);
    assert_eq!(u.value_level(a), Level::Uniform);
}

const UNDER_BRANCH_TWICE: &str = "
func @sync() {
entry:
  barrier
  ret
}
func @maybe(%c: u32) {
entry:
  %go = ne.u32 %c, 0
  br %go, wait, out
wait:
  barrier
  ret
out:
  ret
}
func @never_called(%c: u32) {
entry:
  %go = ne.u32 %c, 0
  br %go, wait, out
wait:
  barrier
  ret
out:
  ret
}
kernel @k(%n: u32) {
entry:
  call @sync()
  call @maybe(%n)
  %t = tid.x
  %small = lt.u32 %t, %n
  br %small, a, done
a:
  call @sync()
  call @sync()
  jmp done
done:
  ret
}
";

#[test]
fn the_verify_barriers_pass_follows_calls() {
    let mut m = module(UNDER_BRANCH_TWICE);
    let err = run(&mut m, "verify-barriers", &RunConfig::default()).unwrap_err();
    let PassError::Rejected { diagnostics, .. } = &err else { panic!("{err}") };
    assert_eq!(diagnostics.len(), 1);
    assert_eq!(m, module(UNDER_BRANCH_TWICE));
    // After `inline`, the same verdict on the call-free kernel.
    let mut m = module(UNDER_BRANCH_TWICE);
    let err = run(&mut m, "inline,verify-barriers", &RunConfig::default()).unwrap_err();
    assert!(matches!(err, PassError::Rejected { ref pass, .. } if pass == "verify-barriers"), "{err}");
}

/// Shared with tests/fusion_cli.rs.
const GRAPH: &str = include_str!("../../tests/fixtures/fusion_through_call.kir");

#[test]
fn fusion_sees_through_calls() {
    let mut m = module(GRAPH);
    let report = kir_passes::fuse::fuse_module(&mut m);
    verified(&m);
    // The store inside @put makes the pair vertical (the consumer reads what the call wrote).
    let d = &report.decisions[0];
    assert_eq!(d.kind, kir_passes::fuse::FusionKind::Vertical, "{}", report.text());
    let fused = d.outcome.as_ref().expect("fused").kernel.clone();
    let k = m.kernel(&fused).unwrap();
    assert!(!has_call(k) && k.callees.is_empty(), "{}", print_kernel(k));
    // The module's own kernels and functions are untouched.
    let orig = module(GRAPH);
    assert!(m.kernel("produce") == orig.kernel("produce"));
    assert_eq!(m.funcs, orig.funcs);
    assert_eq!(m.graphs[0].launches.len(), 1);
    assert_eq!(m.graphs[0].launches[0].kernel, fused);
}

/// A pipeline refuses input that does not verify, naming the body: a function is called one.
#[test]
fn invalid_input_in_a_function_is_named_as_a_function() {
    let mut m = parse(
        "func @f(%x: u32) -> u32 {\nentry:\n  %c = cvt.rn.f32.u32 %x\n  %y = add.u32 %x, %c\n  ret %y\n}\n\
         kernel @k(%p: ptr<global, u32>) {\nentry:\n  %v = call @f(1)\n  store %p[0], %v\n  ret\n}\n",
    )
    .unwrap();
    let e = run(&mut m, DEFAULT_PIPELINE, &RunConfig::default()).unwrap_err();
    assert_eq!(e.to_string(), "function @f does not verify; no pass was run");
}
