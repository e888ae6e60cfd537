//! The `fuse` pass on the graphs of `kernels/graph_*.kir`: interpreter outputs before and after
//! fusion are bit-identical, launches and global-memory bytes go down where fusion applies, the
//! fused IR and the fusion decisions are snapshotted, and pairs that cross-thread reads (or other
//! hazards) forbid are left alone with the reason given.

use kir_interp::args::parse_arg_spec;
use kir_interp::graph::{bind_graph, run_graph, GraphStats};
use kir_interp::{Buffer, Options};
use kir_ir::Module;
use kir_passes::fuse::{fuse_module, FusionReport};

/// Loads a library file with its imports (`kernels/lib/`).
fn load(file: &str) -> Module {
    let path = format!("{}/kernels/{file}", env!("CARGO_MANIFEST_DIR"));
    match kir_ir::text::load::load_file(std::path::Path::new(&path)) {
        Ok(l) => l.module,
        Err(e) => panic!("{}", e.render(false)),
    }
}

/// Runs graph `g` with `NAME=VALUE` arguments; returns the buffers after the run and the stats.
fn run(m: &Module, g: &str, args: &[&str]) -> (Vec<Buffer>, GraphStats) {
    let graph = m.graph(g).unwrap_or_else(|| panic!("no graph @{g}"));
    let named: Vec<(String, kir_interp::args::ArgSpec)> = args
        .iter()
        .map(|a| {
            let (n, v) = a.split_once('=').unwrap();
            (n.to_string(), parse_arg_spec(v).unwrap())
        })
        .collect();
    let mut bound = bind_graph(graph, &named, None).unwrap();
    let m = kir_ir::verify::verify(m.clone()).expect("the module verifies");
    let stats = run_graph(&m, graph, &bound.args, &mut bound.buffers, &Options::default()).unwrap();
    (bound.buffers, stats)
}

/// Fuses a copy of `m`, checks that the result verifies, and that `g` gives bit-identical buffers.
fn fuse_and_compare(m: &Module, g: &str, args: &[&str]) -> (Module, FusionReport, GraphStats, GraphStats) {
    let mut fused = m.clone();
    let report = fuse_module(&mut fused);
    // Kernels, functions and graphs.
    let diags = kir_ir::verify::verify_module(&fused);
    assert!(!kir_ir::diag::has_errors(&diags), "fused module does not verify:\n{}", kir_ir::print_module(&fused));
    let reparsed = kir_ir::parse(&kir_ir::print_module(&fused)).expect("fused module re-parses");
    assert!(reparsed.structurally_eq(&fused));
    let (before, s0) = run(m, g, args);
    let (after, s1) = run(&fused, g, args);
    assert_eq!(before, after, "graph @{g}: buffers differ after fusion");
    (fused, report, s0, s1)
}

/// The fused kernels (those not in the original module) and the graphs, as text.
fn fused_ir(original: &Module, fused: &Module) -> String {
    let mut out = String::new();
    for k in &fused.kernels {
        if original.kernel(&k.name).is_none() {
            out.push_str(&kir_ir::print_kernel(k));
            out.push('\n');
        }
    }
    for g in &fused.graphs {
        out.push_str(&kir_ir::text::printer::print_graph(g));
    }
    out
}

fn traffic(s: &GraphStats) -> (u64, u64, u64) {
    (s.launches, s.global_bytes_read(), s.global_bytes_written())
}

#[test]
fn act_chain_fuses_into_one_launch_without_the_temporary() {
    let m = load("graph_act_chain.kir");
    let args = ["x=rand:f32:1000:1", "dy=rand:f32:1000:2", "dx=zeros:f32:1000", "n=1000", "s=0.125"];
    let (fused, report, s0, s1) = fuse_and_compare(&m, "act_chain", &args);
    // 3 launches: relu_deriv reads x, writes d; mul reads d, dy, writes d; scale reads d, writes dx.
    assert_eq!(traffic(&s0), (3, 16000, 12000));
    // One launch: reads x and dy, writes dx; %d is gone.
    assert_eq!(traffic(&s1), (1, 8000, 4000));
    assert!(fused.graph("act_chain").unwrap().temps.is_empty());
    insta::assert_snapshot!("act_chain_fused_ir", fused_ir(&m, &fused));
    insta::assert_snapshot!("act_chain_decisions", report.text());
    // Sizes that are not a multiple of the block, and a single element.
    for n in ["1", "255", "257"] {
        let args = [
            format!("x=rand:f32:{n}:3"),
            format!("dy=rand:f32:{n}:4"),
            format!("dx=ones:f32:{n}"),
            format!("n={n}"),
            "s=-3.5".into(),
        ];
        let args: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        fuse_and_compare(&m, "act_chain", &args);
    }
}

#[test]
fn grad_clip_pipeline_is_left_alone_and_says_why() {
    let m = load("graph_grad_clip.kir");
    let args = ["g=rand:f32:2000:5", "n=2000", "max_norm=1.0", "out=zeros:f32:2"];
    let (fused, report, s0, s1) = fuse_and_compare(&m, "clip_pipeline", &args);
    assert_eq!(s0.launches, 3);
    assert_eq!(traffic(&s0), traffic(&s1));
    assert_eq!(fused.graph("clip_pipeline"), m.graph("clip_pipeline"));
    let text = report.text();
    assert!(text.contains("barrier: @squared_sum"), "{text}");
    assert!(text.contains("cross-thread read: @gradient_clip_gpu_scale reads %out at `0`"), "{text}");
    insta::assert_snapshot!("grad_clip_decisions", report.for_graph("clip_pipeline").text());
}

#[test]
fn grad_clip_apply_steps_fuse_horizontally() {
    let m = load("graph_grad_clip.kir");
    // range:f32:1 is [0.0]: every gradient is scaled by 0 (the clip path runs).
    let args = ["g0=rand:f32:1000:6", "g1=rand:f32:1000:7", "scale=range:f32:1", "n=1000"];
    let (fused, _report, s0, s1) = fuse_and_compare(&m, "clip_apply2", &args);
    assert_eq!(s0.launches, 2);
    assert_eq!(s1.launches, 1);
    // Bytes are unchanged: fusion saves a launch, not traffic (each thread reads the scale once
    // per tensor).
    assert_eq!(
        (s0.global_bytes_read(), s0.global_bytes_written()),
        (s1.global_bytes_read(), s1.global_bytes_written())
    );
    insta::assert_snapshot!("grad_clip_apply2_fused_ir", fused_ir(&m, &fused));
}

#[test]
fn gemm_backward_consumers_are_not_fused_with_grad_pre() {
    let m = load("graph_gemm_bwd.kir");
    let args = [
        "grad=rand:f32:1425:60",
        "a=rand:f32:95:61",
        "b=rand:f32:375:62",
        "bias=rand:f32:75:63",
        "d_a=zeros:f32:95",
        "d_b=zeros:f32:375",
        "d_bias=zeros:f32:75",
        "m=19",
        "n=75",
        "k=5",
        "act=3",
    ];
    let (fused, report, s0, s1) = fuse_and_compare(&m, "gemm_bias_act_bwd", &args);
    assert_eq!(traffic(&s0), traffic(&s1));
    assert_eq!(fused.graph("gemm_bias_act_bwd"), m.graph("gemm_bias_act_bwd"));
    let text = report.text();
    for consumer in ["gemm_bwd_da", "gemm_bwd_db", "gemm_bwd_dbias"] {
        assert!(text.contains(&format!("cross-thread read: @{consumer} reads %grad_pre")), "{consumer}:\n{text}");
    }
    insta::assert_snapshot!("gemm_decisions", report.for_graph("gemm_bias_act_bwd").text());
}

#[test]
fn gemm_backward_square_fuses_d_a_and_d_b_only() {
    let m = load("graph_gemm_bwd.kir");
    let args = [
        "grad=rand:f32:576:70",
        "a=rand:f32:576:71",
        "b=rand:f32:576:72",
        "bias=rand:f32:24:73",
        "d_a=zeros:f32:576",
        "d_b=zeros:f32:576",
        "d_bias=zeros:f32:24",
        "n=24",
        "act=1",
    ];
    let (fused, report, s0, s1) = fuse_and_compare(&m, "gemm_bias_act_bwd_square", &args);
    assert_eq!(s0.launches, 4);
    assert_eq!(s1.launches, 3);
    let g = fused.graph("gemm_bias_act_bwd_square").unwrap();
    let kernels: Vec<&str> = g.launches.iter().map(|l| l.kernel.as_str()).collect();
    assert_eq!(kernels, ["gemm_bias_act_bwd_grad_pre", "gemm_bwd_da.gemm_bwd_db", "gemm_bwd_dbias"]);
    let text = report.text();
    assert!(text.contains("cross-thread read: @gemm_bwd_da reads %grad_pre"), "{text}");
    insta::assert_snapshot!("gemm_square_decisions", report.for_graph("gemm_bias_act_bwd_square").text());
}

#[test]
fn fusion_through_the_pass_manager_reports_statistics() {
    let mut m = load("graph_act_chain.kir");
    let p = kir_passes::parse_pipeline("fuse,dce").unwrap();
    let cfg = kir_passes::RunConfig { verify_each: true, ..Default::default() };
    let report = kir_passes::run_pipeline_in_place(&mut m, &p, &cfg, &mut std::io::sink()).unwrap();
    let stats = report.stats_text();
    assert!(stats.contains("2  launch pairs fused vertically"), "{stats}");
    assert!(stats.contains("1  temporaries removed"), "{stats}");
    assert_eq!(m.graph("act_chain").unwrap().launches.len(), 1);
}

/// Launches and global-memory traffic of every graph in `kernels/graph_*.kir`, before and after
/// `fuse` (the interpreter's exact counts; the table in BENCHMARKS.md, "Fusion", is this snapshot).
#[test]
fn traffic_before_and_after_fusion_for_every_graph() {
    let cases: &[(&str, &str, &[&str])] = &[
        (
            "graph_act_chain.kir",
            "act_chain",
            &["x=rand:f32:1000000:1", "dy=rand:f32:1000000:2", "dx=zeros:f32:1000000", "n=1000000", "s=0.125"],
        ),
        (
            "graph_grad_clip.kir",
            "clip_pipeline",
            &["g=rand:f32:1000000:5", "n=1000000", "max_norm=1.0", "out=zeros:f32:2"],
        ),
        (
            "graph_grad_clip.kir",
            "clip_apply2",
            &["g0=rand:f32:1000000:6", "g1=rand:f32:1000000:7", "scale=range:f32:1", "n=1000000"],
        ),
        (
            "graph_gemm_bwd.kir",
            "gemm_bias_act_bwd",
            &[
                "grad=rand:f32:4096:60",
                "a=rand:f32:2048:61",
                "b=rand:f32:2048:62",
                "bias=rand:f32:64:63",
                "d_a=zeros:f32:2048",
                "d_b=zeros:f32:2048",
                "d_bias=zeros:f32:64",
                "m=64",
                "n=64",
                "k=32",
                "act=3",
            ],
        ),
        (
            "graph_gemm_bwd.kir",
            "gemm_bias_act_bwd_square",
            &[
                "grad=rand:f32:4096:70",
                "a=rand:f32:4096:71",
                "b=rand:f32:4096:72",
                "bias=rand:f32:64:73",
                "d_a=zeros:f32:4096",
                "d_b=zeros:f32:4096",
                "d_bias=zeros:f32:64",
                "n=64",
                "act=3",
            ],
        ),
    ];
    let mut table = String::from("| graph | size | launches | bytes read | bytes written | launches (fused) | bytes read (fused) | bytes written (fused) |\n|---|---|---|---|---|---|---|---|\n");
    let mut seen = std::collections::BTreeSet::new();
    for (file, graph, args) in cases {
        let m = load(file);
        let (_, _, s0, s1) = fuse_and_compare(&m, graph, args);
        let size = args
            .iter()
            .filter(|a| a.starts_with("n=") || a.starts_with("m=") || a.starts_with("k="))
            .copied()
            .collect::<Vec<_>>()
            .join(" ");
        table.push_str(&format!(
            "| {file} @{graph} | {size} | {} | {} | {} | {} | {} | {} |\n",
            s0.launches,
            s0.global_bytes_read(),
            s0.global_bytes_written(),
            s1.launches,
            s1.global_bytes_read(),
            s1.global_bytes_written()
        ));
        seen.insert(file.to_string());
    }
    // Every graph file is in the table.
    for e in std::fs::read_dir(format!("{}/kernels", env!("CARGO_MANIFEST_DIR"))).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().to_string();
        if name.starts_with("graph_") && name.ends_with(".kir") {
            assert!(seen.contains(&name), "{name} has no row in the traffic table");
            for g in &load(&name).graphs {
                assert!(
                    cases.iter().any(|(f, gr, _)| *f == name && *gr == g.name),
                    "graph @{} of {name} has no row",
                    g.name
                );
            }
        }
    }
    insta::assert_snapshot!("traffic_table", table);
}
