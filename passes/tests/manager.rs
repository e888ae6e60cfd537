//! The pass manager's contract: pipeline strings, verification after each pass (a pass that breaks
//! the IR is named, with the verifier's errors, and the IR from before it is kept), dumps, dump
//! files, statistics.

use kir_ir::{parse, print_module, Kernel, Module};
use kir_passes::pass::{ModulePass, Pass, PassContext, PassKind};
use kir_passes::pipeline::Step;
use kir_passes::{parse_pipeline, registry, run_pipeline_in_place, PassError, Pipeline, RunConfig, DEFAULT_PIPELINE};

const SRC: &str = "kernel @k(%out: ptr<global, u32>, %x: u32) {
entry:
  %a = add.u32 2, 3
  %b = add.u32 %a, %x
  store %out[0], %b
  ret
}
";

fn module() -> Module {
    parse(SRC).expect("test module parses")
}

#[test]
fn pipeline_strings_parse_with_options() {
    let p = parse_pipeline("fold{approx},dce, simplify-cfg").unwrap();
    assert_eq!(p.spec(), "fold{approx},dce,simplify-cfg");
    assert_eq!(parse_pipeline("fold{approx=false}").unwrap().spec(), "fold{approx=false}");
    assert!(parse_pipeline("").unwrap().steps.is_empty());
    assert!(parse_pipeline(DEFAULT_PIPELINE).is_ok());
}

#[test]
fn bad_pipelines_are_rejected_with_a_reason() {
    let err = |s: &str| parse_pipeline(s).err().unwrap_or_else(|| panic!("`{s}` should be rejected"));
    assert!(
        err("fold,nope").starts_with("unknown pass `nope` (available: inline, fold, dce, simplify-cfg"),
        "{}",
        err("fold,nope")
    );
    assert_eq!(err("fold{fast}"), "unknown option `fast` for pass `fold` (options: approx)");
    assert_eq!(err("dce{x}"), "unknown option `x` for pass `dce` (it takes no options)");
    assert_eq!(err("fold{approx=maybe}"), "option `approx` of pass `fold` takes true or false, not `maybe`");
    assert_eq!(err("fold{approx"), "unclosed `{` in pipeline `fold{approx`");
    assert_eq!(err("fold,,dce"), "empty step in pipeline `fold,,dce` (two commas in a row, or a trailing comma?)");
    assert_eq!(err("fold}"), "unbalanced `}` in pipeline `fold}`");
}

#[test]
fn registry_names_are_unique_and_described() {
    let r = registry();
    for (i, p) in r.iter().enumerate() {
        assert!(!p.description.is_empty() && !p.description.contains('\n'), "{}", p.name);
        assert!(r[i + 1..].iter().all(|q| q.name != p.name), "duplicate pass {}", p.name);
    }
}

/// A pass that deletes every instruction with a result, keeping the store that uses one: the IR
/// no longer verifies.
struct Breaker;
impl Pass for Breaker {
    fn name(&self) -> &'static str {
        "breaker"
    }
    fn run(&self, k: &mut Kernel, _cx: &mut PassContext) -> bool {
        k.blocks[0].insts.retain(|i| k.insts[i.index()].result.is_none());
        true
    }
}

/// A pass that changes the kernel but says it did not.
struct Liar;
impl Pass for Liar {
    fn name(&self) -> &'static str {
        "liar"
    }
    fn run(&self, k: &mut Kernel, _cx: &mut PassContext) -> bool {
        k.blocks[0].insts.pop();
        false
    }
}

fn with(pass: Box<dyn Pass>, spec: &str) -> Pipeline {
    let mut p = parse_pipeline("fold").unwrap();
    p.steps.push(Step { spec: spec.into(), pass: PassKind::Kernel(pass) });
    p
}

#[test]
fn a_pass_that_breaks_the_ir_is_named_and_the_ir_before_it_is_kept() {
    let mut m = module();
    let cfg = RunConfig { verify_each: true, ..RunConfig::default() };
    let err =
        run_pipeline_in_place(&mut m, &with(Box::new(Breaker), "breaker"), &cfg, &mut std::io::sink()).unwrap_err();
    let PassError::Broken { pass, kernel, diagnostics, ir_after } = &err else { panic!("{err}") };
    assert_eq!((pass.as_str(), kernel.as_str()), ("breaker", "k"));
    assert!(diagnostics.iter().any(|d| d.message.contains("%b")), "{diagnostics:?}");
    assert!(!ir_after.contains("%b = add"), "{ir_after}");
    assert_eq!(err.to_string(), "pass `breaker` broke kernel @k; keeping the IR from before the pass");
    // The kernel is what `fold` left: %a folded, %b still there.
    let text = print_module(&m);
    assert!(text.contains("%b = add.u32 5, %x"), "{text}");
}

#[test]
fn a_pass_that_changes_the_ir_while_reporting_no_change_is_caught() {
    let mut m = module();
    let cfg = RunConfig { verify_each: true, ..RunConfig::default() };
    let err = run_pipeline_in_place(&mut m, &with(Box::new(Liar), "liar"), &cfg, &mut std::io::sink()).unwrap_err();
    assert!(
        err.diagnostics().iter().any(|d| d.message == "pass `liar` reported no change but changed kernel @k"),
        "{err:?}"
    );
}

#[test]
fn invalid_input_is_rejected_before_any_pass() {
    let mut m = module();
    m.kernels[0].blocks[0].insts.remove(0);
    let before = m.clone();
    let err =
        run_pipeline_in_place(&mut m, &parse_pipeline("fold").unwrap(), &RunConfig::default(), &mut std::io::sink())
            .unwrap_err();
    assert!(matches!(err, PassError::InvalidInput { .. }), "{err:?}");
    assert_eq!(m, before);
}

#[test]
fn dumps_are_headed_per_pass_and_kernel() {
    let mut m = module();
    let cfg = RunConfig { print_after_all: true, print_before: vec!["dce".into()], ..RunConfig::default() };
    let mut out = Vec::new();
    run_pipeline_in_place(&mut m, &parse_pipeline("fold,dce").unwrap(), &cfg, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let headers: Vec<&str> = text.lines().filter(|l| l.starts_with("***")).collect();
    assert_eq!(
        headers,
        [
            "*** IR Dump After fold (kernel @k) ***",
            "*** IR Dump Before dce (kernel @k) ***",
            "*** IR Dump After dce (kernel @k) ***"
        ]
    );
}

#[test]
fn after_change_prints_only_changed_kernels() {
    let mut m = module();
    let cfg = RunConfig { print_after_change: true, ..RunConfig::default() };
    let mut out = Vec::new();
    run_pipeline_in_place(&mut m, &parse_pipeline("dce,fold,dce").unwrap(), &cfg, &mut out).unwrap();
    let text = String::from_utf8(out).unwrap();
    let headers: Vec<&str> = text.lines().filter(|l| l.starts_with("***")).collect();
    assert_eq!(headers, ["*** IR Dump After fold (kernel @k) ***"]);
}

#[test]
fn dump_dir_gets_one_valid_file_per_step() {
    let dir = std::env::temp_dir().join(format!("kir-dump-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut m = module();
    let cfg = RunConfig { dump_dir: Some(dir.clone()), ..RunConfig::default() };
    run_pipeline_in_place(&mut m, &parse_pipeline("fold,simplify-cfg,dce").unwrap(), &cfg, &mut std::io::sink())
        .unwrap();
    let mut names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    assert_eq!(names, ["00-input.kir", "01-fold.kir", "02-simplify-cfg.kir", "03-dce.kir"]);
    for n in &names {
        let text = std::fs::read_to_string(dir.join(n)).unwrap();
        let parsed = parse(&text).unwrap_or_else(|d| panic!("{n}: {d:?}"));
        assert!(!kir_ir::diag::has_errors(&kir_ir::verify::verify_module(&parsed)), "{n}");
    }
    assert_eq!(std::fs::read_to_string(dir.join("00-input.kir")).unwrap(), print_module(&module()));
    assert_eq!(std::fs::read_to_string(dir.join("03-dce.kir")).unwrap(), print_module(&m));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn stats_count_what_each_pass_did() {
    let mut m = module();
    let r = run_pipeline_in_place(
        &mut m,
        &parse_pipeline("fold,dce").unwrap(),
        &RunConfig::default(),
        &mut std::io::sink(),
    )
    .unwrap();
    assert_eq!(r.steps[0].stats.get("instructions folded"), 1);
    assert_eq!(r.steps[0].changed_kernels, 1);
    assert_eq!(r.steps[1].stats.get("instructions removed"), 0);
    assert_eq!(r.steps[1].changed_kernels, 0);
    let s = r.stats_text();
    assert!(s.starts_with("*** Pass statistics ***\n 1. fold (changed 1 kernel)\n"), "{s}");
    assert!(r.timing_text().contains("fold") && r.timing_text().starts_with("*** Pass execution timing ***"));
}

#[test]
fn output_is_compacted_and_round_trips() {
    let mut m = module();
    run_pipeline_in_place(
        &mut m,
        &parse_pipeline(DEFAULT_PIPELINE).unwrap(),
        &RunConfig::default(),
        &mut std::io::sink(),
    )
    .unwrap();
    let reparsed = parse(&print_module(&m)).unwrap();
    assert!(m.structurally_eq(&reparsed));
    assert_eq!(m.kernels[0].insts.len(), m.kernels[0].inst_count());
}

/// A module pass: adds a copy of the first kernel (`@<name>.copy`); with `edit`, also drops an
/// instruction from the first kernel (which a module pass must not do); with `reject`, reports an
/// error after doing so.
struct AddCopy {
    edit: bool,
    reject: bool,
}
impl ModulePass for AddCopy {
    fn name(&self) -> &'static str {
        "add-copy"
    }
    fn run(&self, m: &mut Module, cx: &mut PassContext) -> bool {
        let mut copy = m.kernels[0].clone();
        copy.name = format!("{}.copy", copy.name);
        m.kernels.push(copy);
        if self.edit {
            m.kernels[0].blocks[0].insts.pop();
        }
        if self.reject {
            cx.diagnostics.push(kir_ir::Diagnostic::error("add-copy rejects this module"));
        }
        true
    }
    fn may_reject(&self) -> bool {
        self.reject
    }
}

fn with_module_pass(pass: AddCopy, front: &str) -> Pipeline {
    let mut p = parse_pipeline(front).unwrap();
    p.steps.push(Step { spec: "add-copy".into(), pass: PassKind::Module(Box::new(pass)) });
    p
}

#[test]
fn a_module_pass_counts_the_kernels_it_added_and_those_compaction_renumbered() {
    // Right after parsing, @k is compact: only the added kernel changed.
    let mut m = module();
    let r = run_pipeline_in_place(
        &mut m,
        &with_module_pass(AddCopy { edit: false, reject: false }, ""),
        &RunConfig::default(),
        &mut std::io::sink(),
    )
    .unwrap();
    assert_eq!(r.steps[0].changed_kernels, 1);
    assert_eq!(m.kernels.len(), 2);
    // `fold,dce` leave a dead instruction in @k's arena: the compaction after the module pass changes @k too.
    for verify_each in [false, true] {
        let mut m = module();
        let cfg = RunConfig { verify_each, ..RunConfig::default() };
        let p = with_module_pass(AddCopy { edit: false, reject: false }, "fold,dce");
        let r = run_pipeline_in_place(&mut m, &p, &cfg, &mut std::io::sink()).unwrap();
        assert_eq!(r.steps[2].changed_kernels, 2, "verify_each {verify_each}");
    }
}

#[test]
fn a_module_pass_that_changes_a_kernel_it_was_given_is_caught_and_the_module_restored() {
    let mut m = module();
    let cfg = RunConfig { verify_each: true, ..RunConfig::default() };
    let p = with_module_pass(AddCopy { edit: true, reject: false }, "");
    let err = run_pipeline_in_place(&mut m, &p, &cfg, &mut std::io::sink()).unwrap_err();
    let PassError::Broken { pass, .. } = &err else { panic!("{err}") };
    assert_eq!(pass, "add-copy");
    assert!(
        err.diagnostics().iter().any(|d| d.message.starts_with("module pass `add-copy` changed kernel @k,")),
        "{err:?}"
    );
    assert_eq!(m, module());
}

#[test]
fn a_module_pass_that_may_reject_is_undone_without_verify_each() {
    let mut m = module();
    let p = with_module_pass(AddCopy { edit: true, reject: true }, "");
    let err = run_pipeline_in_place(&mut m, &p, &RunConfig::default(), &mut std::io::sink()).unwrap_err();
    assert!(matches!(err, PassError::Rejected { .. }), "{err}");
    assert_eq!(m, module());
}
