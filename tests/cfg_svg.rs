//! `kir cfg --format svg` and `kir opt --cfg-svg`: the CFG picture is well-formed XML with one
//! `<g>` per block (stable ids), marks barriers, divergent branches, back edges, entry, exits and
//! unreachable blocks, has a legend, escapes what it prints, never overlaps blocks, and leaves the
//! DOT output as it was.

mod cli;
use cli::kir;
use std::collections::{BTreeMap, BTreeSet};

/// The blocks of a rendered picture: id -> (data-name, classes, rect x, y, w, h).
type Blocks = BTreeMap<String, (String, BTreeSet<String>, [f64; 4])>;

fn classes(n: roxmltree::Node) -> BTreeSet<String> {
    n.attribute("class").unwrap_or("").split_whitespace().map(str::to_string).collect()
}

fn parse(svg: &str) -> roxmltree::Document<'_> {
    roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("not well-formed XML: {e}\n{svg}"))
}

fn blocks(doc: &roxmltree::Document) -> Blocks {
    let mut out = Blocks::new();
    for g in doc.descendants().filter(|n| n.has_tag_name("g") && classes(*n).contains("block")) {
        let id = g.attribute("id").expect("a block has an id").to_string();
        let rect = g.children().find(|c| c.has_tag_name("rect")).expect("a block has a rect");
        let num = |a: &str| rect.attribute(a).unwrap().parse::<f64>().unwrap();
        let r = [num("x"), num("y"), num("width"), num("height")];
        let prev = out.insert(id.clone(), (g.attribute("data-name").unwrap().to_string(), classes(g), r));
        assert!(prev.is_none(), "duplicate block id {id}");
    }
    out
}

/// Edges: id -> classes.
fn edges(doc: &roxmltree::Document) -> BTreeMap<String, BTreeSet<String>> {
    doc.descendants()
        .filter(|n| n.has_tag_name("g") && classes(*n).contains("edge"))
        .map(|g| (g.attribute("id").unwrap().to_string(), classes(g)))
        .collect()
}

fn by_name<'b>(b: &'b Blocks, name: &str) -> (&'b String, &'b BTreeSet<String>) {
    b.iter().find(|(_, v)| v.0 == name).map(|(id, v)| (id, &v.1)).unwrap_or_else(|| panic!("no block {name}"))
}

fn svg_of(file: &str, kernel: &str) -> String {
    let (code, out, err) = kir(&["cfg", file, "--kernel", kernel, "--format", "svg"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.is_empty(), "{err}");
    out
}

/// Every kernel of the library: well-formed, one `<g>` per block with id `b<index>`, no two blocks
/// overlapping, a legend, and the same bytes when rendered twice.
#[test]
fn every_library_kernel_renders_one_group_per_block() {
    let mut files: Vec<_> = std::fs::read_dir("kernels").unwrap().map(|e| e.unwrap().path()).collect();
    files.extend(std::fs::read_dir("kernels/lib").unwrap().map(|e| e.unwrap().path()));
    files.extend(std::fs::read_dir("tests/filetests/barriers").unwrap().map(|e| e.unwrap().path()));
    files.extend(std::fs::read_dir("tests/spelled_out").unwrap().map(|e| e.unwrap().path()));
    files.retain(|p| p.extension().is_some_and(|e| e == "kir"));
    files.sort();
    let mut kernels = 0;
    for f in &files {
        let module = kir::ir::text::load::load_file(f)
            .unwrap_or_else(|e| panic!("{} loads: {}", f.display(), e.render(false)))
            .module;
        for k in module.kernels.iter().chain(&module.funcs) {
            kernels += 1;
            let svg = kir_cli::cfg_svg::render_kernel(k);
            assert_eq!(svg, kir_cli::cfg_svg::render_kernel(k), "deterministic: {}", k.name);
            let doc = parse(&svg);
            assert_eq!(doc.root_element().tag_name().name(), "svg");
            assert_eq!(doc.root_element().tag_name().namespace(), Some("http://www.w3.org/2000/svg"));
            let b = blocks(&doc);
            let want: BTreeSet<String> = (0..k.blocks.len()).map(|i| format!("b{i}")).collect();
            assert_eq!(b.keys().cloned().collect::<BTreeSet<_>>(), want, "{}", k.name);
            for (i, blk) in k.blocks.iter().enumerate() {
                assert_eq!(b[&format!("b{i}")].0, blk.name.as_str());
            }
            assert!(doc.descendants().any(|n| n.attribute("id") == Some("legend")), "{}", k.name);
            let rects: Vec<_> = b.values().map(|v| v.2).collect();
            for i in 0..rects.len() {
                for j in i + 1..rects.len() {
                    let (a, c) = (rects[i], rects[j]);
                    let apart =
                        a[0] + a[2] <= c[0] || c[0] + c[2] <= a[0] || a[1] + a[3] <= c[1] || c[1] + c[3] <= a[1];
                    assert!(apart, "{}: blocks overlap: {a:?} {c:?}", k.name);
                }
            }
            // One edge group per CFG edge.
            let n_edges: usize = k.blocks.iter().map(|blk| blk.term.successors().count()).sum();
            assert_eq!(edges(&doc).len(), n_edges, "{}", k.name);
        }
    }
    assert!(kernels >= 30, "{kernels}");
}

/// softmax: the barrier blocks, the entry, the exit, the loops' back edges and the divergent
/// loop branches (`%j < %cols` with `%j` from `tid.x`) are marked; the legend explains them.
#[test]
fn softmax_marks_barriers_loops_and_divergence() {
    let svg = svg_of("tests/spelled_out/softmax.kir", "softmax_rows");
    let doc = parse(&svg);
    let b = blocks(&doc);
    let src = std::fs::read_to_string("tests/spelled_out/softmax.kir").unwrap();
    let m = kir::ir::parse(&src).unwrap();
    let k = m.kernel("softmax_rows").unwrap();
    let with_barrier: BTreeSet<&str> = k
        .blocks
        .iter()
        .filter(|blk| blk.insts.iter().any(|&x| matches!(k.inst(x).op, kir::ir::Op::Barrier)))
        .map(|blk| blk.name.as_str())
        .collect();
    let marked: BTreeSet<&str> = b.values().filter(|v| v.1.contains("barrier")).map(|v| v.0.as_str()).collect();
    assert_eq!(marked, with_barrier);
    for n in ["mx.sync", "mxall.done", "sm.sync"] {
        assert!(by_name(&b, n).1.contains("barrier"), "{n}");
    }
    assert!(by_name(&b, "entry").1.contains("entry"));
    assert!(by_name(&b, "exit").1.contains("exit"));
    assert!(!by_name(&b, "entry").1.contains("divergent-branch"), "the row check is block-uniform");
    assert!(by_name(&b, "mx").1.contains("divergent-branch"));
    assert!(!by_name(&b, "mxall").1.contains("divergent-branch"), "the warp-count loop is uniform");
    let e = edges(&doc);
    let (mx, mx_body) = (by_name(&b, "mx").0, by_name(&b, "mx.body").0);
    let back = format!("e{}-{}-0", &mx_body[1..], &mx[1..]);
    assert!(e[&back].contains("back"), "{back}: {:?}", e[&back]);
    assert_eq!(e.values().filter(|c| c.contains("back")).count(), 5, "five loops");
    assert!(e[&format!("e{}-{}-0", &mx[1..], &mx_body[1..])].contains("divergent"));
    let legend = doc.descendants().find(|n| n.attribute("id") == Some("legend")).unwrap();
    let text: String = legend.descendants().filter(|n| n.is_text()).map(|n| n.text().unwrap()).collect();
    for want in ["entry block", "ret", "barrier", "varies within a warp", "loop back edge", "unreachable"] {
        assert!(text.contains(want), "legend lacks {want}: {text}");
    }
}

/// grad_clip's reductions: the barrier blocks are marked.
#[test]
fn grad_clip_marks_barriers() {
    let svg = svg_of("tests/spelled_out/grad_clip.kir", "squared_sum");
    let doc = parse(&svg);
    let b = blocks(&doc);
    assert!(b.values().any(|v| v.1.contains("barrier")), "{:?}", b);
    let src = std::fs::read_to_string("tests/spelled_out/grad_clip.kir").unwrap();
    let m = kir::ir::parse(&src).unwrap();
    let k = m.kernel("squared_sum").unwrap();
    for (i, blk) in k.blocks.iter().enumerate() {
        let has = blk.insts.iter().any(|&x| matches!(k.inst(x).op, kir::ir::Op::Barrier));
        assert_eq!(b[&format!("b{i}")].1.contains("barrier"), has, "{}", blk.name);
    }
}

/// A barrier under a `tid.x` branch: the branch is divergent (its edges too), the barrier block is
/// run by only some threads.
#[test]
fn divergent_branch_is_marked() {
    let svg = svg_of("tests/filetests/barriers/bad_barrier_under_tid.kir", "barrier_under_tid");
    let doc = parse(&svg);
    let b = blocks(&doc);
    let entry = by_name(&b, "entry").1;
    assert!(entry.contains("divergent-branch") && entry.contains("entry"), "{entry:?}");
    let sync = by_name(&b, "sync").1;
    assert!(sync.contains("barrier") && sync.contains("partial"), "{sync:?}");
    let e = edges(&doc);
    let from_entry: Vec<_> = e.iter().filter(|(id, _)| id.starts_with("e0-")).collect();
    assert_eq!(from_entry.len(), 2);
    assert!(from_entry.iter().all(|(_, c)| c.contains("divergent")), "{from_entry:?}");
    assert!(e.values().all(|c| !c.contains("back")));
    // A uniform early exit is not marked.
    let svg = svg_of("tests/filetests/barriers/ok_uniform_early_exit.kir", "uniform_early_exit");
    assert!(!svg.contains("class=\"block entry divergent-branch"), "{svg}");
}

/// Odd shapes: a self loop, `br %c, x, x`, an unreachable block, a pointer block parameter
/// (`<`, `>` in the label), and a kernel that does not verify (no divergence marks, said so).
#[test]
fn odd_shapes_unreachable_escaping_and_unverified() {
    let dir = std::env::temp_dir().join(format!("kir-cfg-svg-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("odd.kir");
    std::fs::write(
        &f,
        "kernel @odd(%out: ptr<global, u32>, %n: u32) {\nentry:\n  %t = tid.x\n  %c = lt.u32 %t, %n\n  \
         br %c, spin(%t, %out), spin(%n, %out)\nspin(%i: u32, %p: ptr<global, u32>):\n  %i2 = add.u32 %i, 1\n  \
         %more = lt.u32 %i2, %n\n  br %more, spin(%i2, %p), join\njoin:\n  %d = eq.u32 %n, 0\n  br %d, tail, tail\n\
         tail:\n  ret\ndead:\n  store %out[0], 1\n  jmp tail\n}\n",
    )
    .unwrap();
    let (code, svg, err) = kir(&["cfg", f.to_str().unwrap(), "--format", "svg"]);
    assert_eq!(code, 0, "{err}");
    let doc = parse(&svg);
    let b = blocks(&doc);
    assert!(by_name(&b, "dead").1.contains("unreachable"));
    assert!(!by_name(&b, "spin").1.contains("unreachable"));
    let spin = by_name(&b, "spin").0[1..].to_string();
    let e = edges(&doc);
    assert!(e[&format!("e{spin}-{spin}-0")].contains("back"), "self loop");
    let join = by_name(&b, "join").0[1..].to_string();
    let tail = by_name(&b, "tail").0[1..].to_string();
    assert!(e.contains_key(&format!("e{join}-{tail}-0")) && e.contains_key(&format!("e{join}-{tail}-1")));
    assert!(svg.contains("%p: ptr&lt;global, u32&gt;"), "escaped label");
    assert!(!svg.contains("ptr<global"), "raw `<` in the output");

    let g = dir.join("nodom.kir");
    std::fs::write(
        &g,
        "kernel @nodom(%out: ptr<global, u32>, %n: u32) {\nentry:\n  %t = tid.x\n  %c = lt.u32 %t, %n\n  \
         br %c, a, b\na:\n  %v = add.u32 %t, 1\n  jmp b\nb:\n  store %out[%t], %v\n  ret\n}\n",
    )
    .unwrap();
    let (code, svg, err) = kir(&["cfg", g.to_str().unwrap(), "--format", "svg"]);
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(code, 0, "{err}");
    let doc = parse(&svg);
    assert!(blocks(&doc).values().all(|v| !v.1.contains("divergent-branch") && !v.1.contains("partial")));
    assert!(svg.contains("no divergence marks: the kernel does not verify"));
}

#[test]
fn escape_covers_markup_characters() {
    assert_eq!(kir_cli::cfg_svg::escape("a<b & \"c\" 'd' >"), "a&lt;b &amp; &quot;c&quot; &apos;d&apos; &gt;");
}

/// `--format dot` is the default output, byte for byte; a bad format is a usage error.
#[test]
fn dot_is_unchanged_and_bad_format_is_usage_error() {
    let (code, plain, _) = kir(&["cfg", "kernels/relu_backward.kir"]);
    assert_eq!(code, 0);
    let (code, dot, _) = kir(&["cfg", "kernels/relu_backward.kir", "--format", "dot"]);
    assert_eq!(code, 0);
    assert_eq!(plain, dot);
    assert!(dot.starts_with("digraph \"relu_backward\""));
    let (code, out, err) = kir(&["cfg", "kernels/relu_backward.kir", "--format", "png"]);
    assert_eq!(code, 2, "{err}");
    assert!(out.is_empty());
    assert!(err.contains("invalid value 'png'") && err.contains("dot") && err.contains("svg"), "{err}");
}

/// `kir opt --cfg-svg DIR`: one picture per kernel of the optimized module.
#[test]
fn opt_writes_one_svg_per_kernel() {
    let dir = std::env::temp_dir().join(format!("kir-opt-svg-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    let (code, out, err) = kir(&["opt", "kernels/activations.kir", "--cfg-svg", dir.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("kernel @relu_forward"), "the module is still printed");
    let src = std::fs::read_to_string("kernels/activations.kir").unwrap();
    let m = kir::ir::parse(&src).unwrap();
    let mut names: Vec<String> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    names.sort();
    let mut want: Vec<String> = m.kernels.iter().map(|k| format!("{}.svg", k.name)).collect();
    want.sort();
    assert_eq!(names, want);
    for n in &names {
        let svg = std::fs::read_to_string(dir.join(n)).unwrap();
        let doc = parse(&svg);
        assert!(!blocks(&doc).is_empty());
    }
    std::fs::remove_dir_all(&dir).ok();
}
