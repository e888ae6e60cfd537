//! The kernel library as a whole: every `.kir` file in `kernels/` parses, passes `kir check`'s
//! checks, starts with a header comment, and has `; run:` directives that launch each of its
//! kernels with exactly its parameters (names, scalar vs buffer, buffer element types; graph runs likewise) and
//! modest sizes (docs/testing.md).

use kir_harness::directives::parse_directives;
use kir_ir::{Module, ScalarType, Type};
use std::path::{Path, PathBuf};

fn kir_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("kernels");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "kir"))
        .collect();
    out.sort();
    assert!(out.len() >= 7, "expected the kernel library in {}", dir.display());
    out
}

fn parse_file(p: &Path) -> (String, Module) {
    let src = std::fs::read_to_string(p).unwrap();
    let m = kir_ir::text::load::load_source(p, src.clone()).unwrap_or_else(|e| panic!("{}", e.render(false))).module;
    (src, m)
}

#[test]
fn every_file_parses_and_passes_the_checks() {
    for p in kir_files() {
        let (src, m) = parse_file(&p);
        let diags = kir_ir::verify::check_keeping(m.clone()).0;
        assert!(
            !kir_ir::diag::has_errors(&diags),
            "{}",
            kir_ir::diag::render(&diags, &p.display().to_string(), &src, false)
        );
    }
}

#[test]
fn every_file_starts_with_a_header_comment() {
    for p in kir_files() {
        let src = std::fs::read_to_string(&p).unwrap();
        let header: Vec<&str> = src.lines().take_while(|l| l.starts_with(';')).collect();
        assert!(
            header.len() >= 3,
            "{}: the file must start with a comment saying what it computes, its launch shape and deviations",
            p.display()
        );
    }
}

/// The element type and length of a buffer value `KIND:TYPE:LEN[:SEED]`, or None for a `.npy` file.
fn buffer_spec(v: &str) -> Option<(ScalarType, usize)> {
    if v.starts_with('@') {
        return None;
    }
    let parts: Vec<&str> = v.split(':').collect();
    assert!(parts.len() >= 3 && ["rand", "zeros", "ones", "range"].contains(&parts[0]), "bad buffer value `{v}`");
    let ty = ScalarType::from_name(parts[1]).unwrap_or_else(|| panic!("bad type in `{v}`"));
    Some((ty, parts[2].parse().unwrap_or_else(|_| panic!("bad length in `{v}`"))))
}

#[test]
fn every_kernel_has_run_directives_matching_its_parameters() {
    let mut big_runs = 0;
    for p in kir_files() {
        let (src, m) = parse_file(&p);
        let d = parse_directives(&src).unwrap_or_else(|e| panic!("{}: {:?}", p.display(), e));
        for k in &m.kernels {
            let runs: Vec<_> = d.runs.iter().filter(|r| r.target == k.name).collect();
            // a kernel launched by a graph that has a run directive is exercised through the graph
            let via_graph = m
                .graphs
                .iter()
                .any(|g| g.launches.iter().any(|l| l.kernel == k.name) && d.runs.iter().any(|r| r.target == g.name));
            assert!(!runs.is_empty() || via_graph, "{}: @{} has no `; run:` directive", p.display(), k.name);
            for r in runs {
                let at = format!("{}:{}", p.display(), r.line);
                let (grid, block) = (r.grid.expect("grid"), r.block.expect("block"));
                let threads: u64 = block.iter().map(|&x| x as u64).product();
                assert!(threads <= 1024, "{at}: block of {threads} threads");
                let mut seen = Vec::new();
                for &pv in &k.params {
                    let v = &k.values[pv.index()];
                    let (_, value) = r
                        .args
                        .iter()
                        .find(|(n, _)| *n == v.name)
                        .unwrap_or_else(|| panic!("{at}: no argument for %{}", v.name));
                    seen.push(v.name.to_string());
                    match v.ty {
                        Type::Ptr(_, elem) => {
                            if let Some((ty, len)) = buffer_spec(value) {
                                assert_eq!(ty, elem, "{at}: %{} points to {elem} but gets `{value}`", v.name);
                                if len > 1 << 16 {
                                    big_runs += 1;
                                    assert!(
                                        matches!(k.name.as_str(), "relu_backward" | "relu_backward_v4")
                                            && len <= 1 << 20,
                                        "{at}: {len} elements is too large for CI"
                                    );
                                }
                            } else {
                                let f = p.parent().unwrap().join(&value[1..]);
                                assert!(f.is_file(), "{at}: missing {}", f.display());
                            }
                        }
                        Type::Scalar(_) => {
                            assert!(buffer_spec_is_literal(value), "{at}: %{} is a scalar but gets `{value}`", v.name)
                        }
                        Type::Vec(..) => panic!("{at}: %{} is a vector parameter, which the verifier refuses", v.name),
                    }
                }
                for (n, _) in &r.args {
                    assert!(seen.contains(n), "{at}: @{} has no parameter %{n}", k.name);
                }
                let _ = grid;
            }
        }
        for g in &m.graphs {
            for r in d.runs.iter().filter(|r| r.target == g.name) {
                let at = format!("{}:{}", p.display(), r.line);
                assert!(r.grid.is_none() && r.block.is_none(), "{at}: a graph carries its own launch shapes");
                let mut names: Vec<&str> = r.args.iter().map(|(n, _)| n.as_str()).collect();
                let mut want: Vec<&str> = g.params.iter().map(|p| p.name.as_str()).collect();
                names.sort_unstable();
                want.sort_unstable();
                assert_eq!(names, want, "{at}: arguments of @{}", g.name);
                for gp in &g.params {
                    let value = &r.args.iter().find(|(n, _)| *n == gp.name).unwrap().1;
                    match gp.ty {
                        Type::Ptr(_, elem) => {
                            if let Some((ty, _)) = buffer_spec(value) {
                                assert_eq!(ty, elem, "{at}: %{} points to {elem} but gets `{value}`", gp.name);
                            }
                        }
                        Type::Scalar(_) => assert!(buffer_spec_is_literal(value), "{at}: %{} is a scalar", gp.name),
                        Type::Vec(..) => panic!("{at}: %{} is a vector parameter", gp.name),
                    }
                }
            }
        }
        for r in &d.runs {
            assert!(
                m.kernel(&r.target).is_some() || m.graph(&r.target).is_some(),
                "{}:{}: no kernel or graph @{}",
                p.display(),
                r.line,
                r.target
            );
        }
    }
    assert!(big_runs <= 6, "only the large relu_backward and relu_backward_v4 runs may exceed 2^16 elements");
}

fn buffer_spec_is_literal(v: &str) -> bool {
    !v.contains(':') && !v.starts_with('@')
}

#[test]
fn seed_kernel_names_are_kept() {
    let all: Vec<String> =
        kir_files().iter().flat_map(|p| parse_file(p).1.kernels.into_iter().map(|k| k.name)).collect();
    for name in [
        "relu_backward",
        "gelu_backward",
        "silu_backward",
        "clip_scale_reduce",
        "gradient_clip_gpu_scale",
        "gemm_bias_act_bwd_grad_pre",
        "gemm_bwd_da",
        "gemm_bwd_db",
        "gemm_bwd_db_accum",
        "gemm_bwd_dbias",
        "gemm_bwd_dbias_accum",
        "persistent_decoder",
        "glu_backward_f32",
        "reglu_backward_f16",
        "swiglu_backward_bf16",
        "geglu_backward_f32",
    ] {
        assert!(all.iter().any(|n| n == name), "no kernel @{name} in kernels/");
    }
}
