//! Launch graphs in the text format: round trip (printed graphs re-parse to structurally equal
//! modules, for every form of launch, argument and size expression), the dependency DAG, size
//! expression evaluation, and the located errors of malformed or ill-typed graphs.

use kir_ir::analysis::effects::*;
use kir_ir::graph::*;
use kir_ir::text::printer::print_graph;
use kir_ir::*;
use proptest::prelude::*;

const KERNELS: &str = r#"
kernel @ew(%a: ptr<global, f32>, %b: ptr<global, f32>, %n: u32) {
entry:
  %i = global_id.x
  %inb = lt.u32 %i, %n
  br %inb, body, exit
body:
  %v = load %a[%i]
  store %b[%i], %v
  jmp exit
exit:
  ret
}

kernel @mix(%a: ptr<global, f32>, %s: f32, %k: u64, %p: pred, %out: ptr<global, u32>) {
  shared @dyn: f32[]
entry:
  %v = load %a[0]
  atom.add %out[0], 1
  ret
}
"#;

fn parse_ok(src: &str) -> Module {
    match parse(src) {
        Ok(m) => m,
        Err(d) => panic!("{}", diag::render(&d, "t.kir", src, false)),
    }
}

fn errors(graph: &str) -> String {
    let src = format!("{KERNELS}\n{graph}");
    // Lowering reports syntax and name errors; whether a graph fits its kernels is the verifier's.
    let d = match parse(&src) {
        Ok(m) => kir_ir::verify::verify_module(&m),
        Err(d) => d,
    };
    assert!(diag::has_errors(&d), "expected errors for:\n{graph}");
    diag::render(&d, "t.kir", &src, false)
}

#[test]
fn graphs_round_trip_and_keep_every_form() {
    let src = format!(
        "{KERNELS}\n{}",
        r#"
graph @g(%x: ptr<global, f32>, %y: ptr<global, f32>, %cnt: ptr<global, u32>, %n: u32, %m: u64, %s: f32) {
  temp %t: f32[mul(%n, 2)]
  temp %u: u32[max(%m, 0x10)]
  launch @ew grid(ceil_div(%n, 256), 1, 1) block(256) (%x, %t, %n)
  launch @ew grid(ceil_div(%n, 128)) block(32, 4) (%t, %y, %n)
  launch @mix grid(1) block(1) shared(mul(4, %n)) (%t, -0.0, add(%m, 1), true, %u)
  launch @mix grid(2, 3, 4) block(5, 6, 7) shared(0) (%y, nan, 7, false, %cnt)
  launch @mix grid(1) block(1) shared(4) (%y, 0f7fc00001, sub(%m, min(%n, 3)), false, %cnt)
}
"#
    );
    let m = parse_ok(&src);
    let g = m.graph("g").unwrap();
    assert_eq!(g.temps.len(), 2);
    assert_eq!(g.launches.len(), 5);
    assert_eq!(g.launches[0].grid[1], Expr::Int(1));
    assert_eq!(g.launches[1].block, [Expr::Int(32), Expr::Int(4), Expr::Int(1)]);
    assert_eq!(g.launches[2].args[1], LaunchArg::Const(Constant::f32(-0.0)));
    assert_eq!(g.launches[3].args[2], LaunchArg::Const(Constant::u64(7)));
    let printed = print_module(&m);
    let again = parse_ok(&printed);
    assert!(m.structurally_eq(&again), "round trip changed the module:\n{printed}");
    assert_eq!(print_module(&again), printed, "printing is not a fixed point");
    insta::assert_snapshot!("graph_printed", print_graph(g));
}

#[test]
fn the_kernel_files_with_graphs_round_trip() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../kernels");
    let mut seen = 0;
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if !(name.starts_with("graph_") && name.ends_with(".kir")) {
            continue;
        }
        let m = kir_ir::text::load::load_file(&path).unwrap_or_else(|e| panic!("{}", e.render(false))).module;
        assert!(!m.graphs.is_empty(), "{name} declares no graph");
        let again = parse_ok(&print_module(&m));
        assert!(m.structurally_eq(&again), "{name} does not round-trip");
        seen += 1;
    }
    assert!(seen >= 1);
}

#[test]
fn dependency_dag_follows_reads_and_writes() {
    let src = format!(
        "{KERNELS}\n{}",
        r#"
graph @g(%x: ptr<global, f32>, %y: ptr<global, f32>, %z: ptr<global, f32>, %n: u32) {
  temp %t: f32[%n]
  launch @ew grid(1) block(1) (%x, %t, %n)
  launch @ew grid(1) block(1) (%x, %z, %n)
  launch @ew grid(1) block(1) (%t, %y, %n)
  launch @ew grid(1) block(1) (%y, %x, %n)
}
"#
    );
    let m = parse_ok(&src);
    let g = m.graph("g").unwrap();
    let dag = dependency_graph(&m, g);
    let mut edges: Vec<(usize, usize, Vec<Dependency>)> = dag
        .edge_indices()
        .map(|e| {
            let (a, b) = dag.edge_endpoints(e).unwrap();
            (dag[a], dag[b], dag[e].clone())
        })
        .collect();
    edges.sort_by_key(|e| (e.0, e.1));
    let dep = |b: &str, h| Dependency { buffer: b.into(), hazard: h };
    assert_eq!(
        edges,
        vec![
            (0, 2, vec![dep("t", Hazard::ReadAfterWrite)]),
            (0, 3, vec![dep("x", Hazard::WriteAfterRead)]),
            (1, 3, vec![dep("x", Hazard::WriteAfterRead)]),
            (2, 3, vec![dep("y", Hazard::ReadAfterWrite)]),
        ]
    );
    assert!(!petgraph::algo::is_cyclic_directed(&dag));
    let acc = param_access(m.kernel("mix").unwrap());
    assert_eq!(acc[0], ParamAccess { read: true, write: false, atomic: false });
    assert_eq!(acc[4], ParamAccess { read: true, write: true, atomic: true });
}

#[test]
fn size_expressions_evaluate_without_wrapping() {
    let n = |name: &str| match name {
        "n" => Some(1000),
        "big" => Some(u64::MAX),
        _ => None,
    };
    let call = |f, a, b| Expr::Call(f, vec![a, b]);
    let p = |s: &str| Expr::Param(s.into());
    assert_eq!(call(ExprFn::CeilDiv, p("n"), Expr::Int(256)).eval(&n), Ok(4));
    assert_eq!(call(ExprFn::CeilDiv, Expr::Int(1024), Expr::Int(256)).eval(&n), Ok(4));
    assert_eq!(call(ExprFn::Div, p("n"), Expr::Int(256)).eval(&n), Ok(3));
    assert_eq!(call(ExprFn::Min, p("n"), Expr::Int(7)).eval(&n), Ok(7));
    assert!(call(ExprFn::Add, p("big"), Expr::Int(1)).eval(&n).unwrap_err().contains("overflows"));
    assert!(call(ExprFn::Sub, Expr::Int(1), p("n")).eval(&n).unwrap_err().contains("negative"));
    assert!(call(ExprFn::CeilDiv, p("n"), Expr::Int(0)).eval(&n).unwrap_err().contains("divides by zero"));
    assert!(p("q").eval(&n).is_err());
}

#[test]
fn error_unknown_kernel_and_arity() {
    insta::assert_snapshot!(errors(
        r#"graph @g(%x: ptr<global, f32>, %n: u32) {
  launch @nope grid(1) block(1) (%x)
  launch @ew grid(1) block(1) (%x, %n)
}"#
    ));
}

#[test]
fn error_argument_types() {
    insta::assert_snapshot!(errors(
        r#"graph @g(%x: ptr<global, f32>, %c: ptr<global, u32>, %n: u64, %s: f32) {
  launch @ew grid(1) block(1) (%x, %c, %n)
  launch @mix grid(1) block(1) shared(4) (%x, %n, mul(%n, 2), true, %x)
  launch @mix grid(1) block(1) shared(4) (%x, 1, 2, true, %c)
}"#
    ));
}

#[test]
fn error_undefined_names_and_bad_sizes() {
    insta::assert_snapshot!(errors(
        r#"graph @g(%x: ptr<global, f32>, %n: u32, %s: f32) {
  temp %t: f32[mul(%s, 2)]
  temp %x: f32[%n]
  launch @ew grid(ceil_div(%n, 256)) block(%y) (%x, %q, %n)
  launch @ew grid(cdiv(%n, 256)) block(add(1)) (%x, %x, %n)
}"#
    ));
}

#[test]
fn error_clauses_and_shared_memory() {
    insta::assert_snapshot!(errors(
        r#"graph @g(%x: ptr<global, f32>, %c: ptr<global, u32>, %n: u32) {
  launch @ew block(1) (%x, %x, %n)
  launch @ew grid(1) grid(2) block(1, 2, 3, 4) (%x, %x, %n)
  launch @ew grid(1) block(1) shared(16) (%x, %x, %n)
  launch @mix grid(1) block(1) (%x, 1.0, 1, true, %c)
  launch @ew grid(1) block(1) warp(32) (%x, %x, %n)
}"#
    ));
}

#[test]
fn error_duplicate_graph_and_parameters() {
    insta::assert_snapshot!(errors(
        r#"graph @g(%x: ptr<global, f32>, %x: u32, %b: ptr<local, f32>, %c: f12) {
}
graph @g() {
}"#
    ));
}

#[test]
fn error_syntax_in_a_launch() {
    insta::assert_snapshot!(errors(
        r#"graph @g(%x: ptr<global, f32>) {
  launch @ew grid(1) block(1) %x
}"#
    ));
}

fn arb_expr() -> impl Strategy<Value = Expr> {
    let leaf = prop_oneof![
        any::<u64>().prop_map(Expr::Int),
        prop::sample::select(vec!["n", "m"]).prop_map(|s| Expr::Param(s.to_string()))
    ];
    leaf.prop_recursive(3, 12, 2, |inner| {
        (prop::sample::select(ExprFn::ALL.to_vec()), inner.clone(), inner)
            .prop_map(|(f, a, b)| Expr::Call(f, vec![a, b]))
    })
}

fn arb_dims() -> impl Strategy<Value = [Expr; 3]> {
    (arb_expr(), prop_oneof![Just(Expr::Int(1)), arb_expr()], prop_oneof![Just(Expr::Int(1)), arb_expr()])
        .prop_map(|(a, b, c)| [a, b, c])
}

proptest! {
    #[test]
    fn generated_graphs_round_trip(
        len in arb_expr(),
        launches in prop::collection::vec((arb_dims(), arb_dims(), arb_expr(), any::<u32>(), any::<bool>()), 0..5),
    ) {
        let base = parse_ok(KERNELS);
        let mut m = base.clone();
        let param = |name: &str, ty| GraphParam { name: name.into(), ty, span: Span::DUMMY };
        let mut g = Graph {
            name: "gen".into(),
            params: vec![
                param("x", Type::Ptr(AddrSpace::Global, ScalarType::F32)),
                param("c", Type::Ptr(AddrSpace::Global, ScalarType::U32)),
                param("n", Type::U32),
                param("m", Type::U64),
            ],
            temps: vec![Temp { name: "t".into(), elem: ScalarType::F32, len, span: Span::DUMMY }],
            launches: vec![],
            span: Span::DUMMY,
        };
        for (grid, block, k, bits, use_mix) in launches {
            let (kernel, shared_bytes, args) = if use_mix {
                ("mix", Some(Expr::Int(64)), vec![
                    LaunchArg::Value("t".into()),
                    LaunchArg::Const(Constant::f32(f32::from_bits(bits))),
                    LaunchArg::Expr(Expr::Call(ExprFn::Add, vec![k, Expr::Int(1)])),
                    LaunchArg::Const(Constant::pred(bits % 2 == 0)),
                    LaunchArg::Value("c".into()),
                ])
            } else {
                ("ew", None, vec![LaunchArg::Value("x".into()), LaunchArg::Value("t".into()), LaunchArg::Const(Constant::u32(bits))])
            };
            g.launches.push(Launch { kernel: kernel.into(), grid, block, shared_bytes, args, span: Span::DUMMY, arg_spans: vec![] });
        }
        // Generated dimensions may be the literal 0, which the verifier rightly rejects; keep the
        // rest: the round trip of verified graphs is what the parser promises.
        m.graphs.push(g);
        // The kernels are valid: every error is the graph's.
        let verified = !diag::has_errors(&kir_ir::verify::verify_module(&m));
        let printed = print_module(&m);
        match parse(&printed) {
            Ok(again) => {
                prop_assert!(verified, "a graph the verifier rejects parsed:\n{}", printed);
                prop_assert!(m.structurally_eq(&again), "round trip changed:\n{}", printed);
            }
            Err(d) => prop_assert!(!verified, "{}", diag::render(&d, "gen.kir", &printed, false)),
        }
    }
}

/// A pointer passed to a function counts as read and written: the graph's dependencies see writes
/// made inside callees (the callee is not looked into, so this is conservative).
#[test]
fn pointers_passed_to_calls_count_as_accessed() {
    let m = parse_ok(
        "func @put(%p: ptr<global, u32>) {\nentry:\n  store %p[0], 1\n  ret\n}\n\
         kernel @k(%a: ptr<global, u32>, %b: ptr<global, u32>) {\nentry:\n  call @put(%a)\n  %v = load %b[0]\n  ret\n}\n",
    );
    let acc = param_access(m.kernel("k").unwrap());
    assert!(acc[0].write && acc[0].read, "{acc:?}");
    assert_eq!(acc[1], ParamAccess { read: true, write: false, atomic: false });
}
