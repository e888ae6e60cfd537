//! A kernel's control-flow graph as a standalone SVG picture, with the uniformity analysis'
//! verdicts drawn on it (`kir cfg FILE --format svg`, `kir opt --cfg-svg DIR`). No tool outside
//! kir is needed: the layout is computed here.
//!
//! Guarantees:
//! - The output is deterministic: the same kernel gives the same bytes (no hashing, no clock; all
//!   coordinates are printed with one decimal).
//! - It is one well-formed XML document (an `<svg>` root in the SVG namespace). Every text taken
//!   from the kernel (block names, instructions, the kernel name) is escaped: `&`, `<`, `>`, `"`
//!   and `'` never appear raw in text or attribute values.
//! - One `<g class="block ...">` per block with the stable id `b<N>`, `N` the block's index in the
//!   kernel (the node names of `kir cfg`'s DOT output), and `data-name` the block's label. Its
//!   classes say what is marked: `entry`, `exit` (ends in `ret`), `barrier` (holds a `barrier`),
//!   `divergent-branch` / `warp-branch` (its `br` condition is varying / warp-uniform),
//!   `partial` (only some threads execute it), `unreachable`. Its `<title>` holds the whole block
//!   text; the drawn label keeps at most [`MAX_INSTS`] instruction lines (the middle elided) of at
//!   most [`MAX_LINE`] characters each.
//! - One `<g class="edge ...">` per CFG edge (in terminator order, `br %c, a, a` gives two), id
//!   `e<from>-<to>-<position>`, classes `back` (closes a cycle: a retreating edge of a depth-first
//!   search from the entry block, i.e. a loop back edge in a reducible CFG), `divergent` / `warp`
//!   (leaves a branch of that level), `true` / `false` (the branch side).
//! - A `<g id="legend">` explains every mark. When no uniformity verdict is given (the kernel does
//!   not verify) no branch or block is marked divergent and the legend says so.
//! - Layout: layered (Sugiyama-style). Back edges are left out of the layering and drawn around the
//!   right-hand side; a block's layer is its longest forward path from a source; edges spanning
//!   several layers go through reserved columns; the order within layers reduces crossings
//!   (barycenter sweeps); blocks never overlap.

use kir::ir::analysis::cfg::Cfg;
use kir::ir::text::printer::{print_inst, print_terminator};
use kir::ir::{BlockId, Kernel, Op, Terminator};
use kir::passes::uniformity::{Level, Uniformity};
use std::fmt::Write;

/// Instruction lines drawn per block at most (the middle of a longer block is elided).
pub const MAX_INSTS: usize = 16;
/// Characters per drawn line at most (longer lines end in `…`).
pub const MAX_LINE: usize = 64;

const FONT: &str = "DejaVu Sans Mono, Menlo, Consolas, monospace";
const FONT_SIZE: f64 = 12.0;
const CHAR_W: f64 = 7.3;
const LINE_H: f64 = 15.0;
const PAD: f64 = 8.0;
const LAYER_GAP: f64 = 56.0;
const NODE_GAP: f64 = 36.0;
const DUMMY_GAP: f64 = 14.0;
const MARGIN: f64 = 24.0;
const TITLE_H: f64 = 34.0;
const BADGE_CHAR_W: f64 = 6.1;

const C_EDGE: &str = "#555555";
const C_DIV: &str = "#d62728";
const C_WARP: &str = "#e07b00";
const C_BACK: &str = "#7b3fb5";
const C_ENTRY: &str = "#2a9d3a";
const C_EXIT: &str = "#222222";
const C_BARRIER: &str = "#1f5fbf";
const C_PARTIAL_FILL: &str = "#fff1d6";
const C_UNREACH: &str = "#999999";

/// Renders the CFG of `k` as SVG, verifying the kernel first: the uniformity marks are drawn only
/// when it verifies (the analysis' verdicts mean something only then).
pub fn render_kernel(k: &Kernel) -> String {
    // One CFG for all three: the verifier builds it, the analysis and the picture reuse it.
    let (diags, cfg) = kir::ir::verify::verify_body(k, None, None);
    let cfg = cfg.unwrap_or_else(|| Cfg::new(k));
    let u = (!kir::ir::diag::has_errors(&diags)).then(|| Uniformity::compute_with(k, Some(&cfg)));
    render(k, &cfg, u.as_ref())
}

/// Renders the CFG of `k` as SVG; `u` (the uniformity analysis of `k`) adds the divergence marks.
pub fn render(k: &Kernel, cfg: &Cfg, u: Option<&Uniformity>) -> String {
    let facts = BlockFacts::compute(k, cfg, u);
    let layout = Layout::compute(k, cfg, &facts);
    draw(k, u.is_some(), &facts, &layout)
}

/// What is marked on each block.
struct BlockFacts {
    entry: Vec<bool>,
    exit: Vec<bool>,
    barrier: Vec<bool>,
    reachable: Vec<bool>,
    /// Level of the block's `br` condition (Uniform for jmp/ret or without a verdict).
    branch: Vec<Level>,
    /// Control level of the block (Uniform without a verdict).
    control: Vec<Level>,
    /// Drawn lines: the header, then instructions and the terminator.
    lines: Vec<Vec<String>>,
    /// The whole block text, for the tooltip.
    full: Vec<String>,
}

impl BlockFacts {
    fn compute(k: &Kernel, cfg: &Cfg, u: Option<&Uniformity>) -> BlockFacts {
        let n = k.blocks.len();
        let mut f = BlockFacts {
            entry: vec![false; n],
            exit: vec![false; n],
            barrier: vec![false; n],
            reachable: vec![false; n],
            branch: vec![Level::Uniform; n],
            control: vec![Level::Uniform; n],
            lines: Vec::with_capacity(n),
            full: Vec::with_capacity(n),
        };
        for b in k.block_ids() {
            let i = b.index();
            let blk = k.block(b);
            f.entry[i] = i == 0;
            f.exit[i] = matches!(blk.term, Terminator::Ret(_));
            f.barrier[i] = blk.insts.iter().any(|&x| matches!(k.inst(x).op, Op::Barrier));
            f.reachable[i] = cfg.is_reachable(b);
            if let Some(u) = u {
                if matches!(blk.term, Terminator::Br { .. }) && f.reachable[i] {
                    f.branch[i] = u.branch_level(b);
                }
                if f.reachable[i] {
                    f.control[i] = u.block_level(b);
                }
            }
            let mut header = blk.name.to_string();
            if !blk.params.is_empty() {
                let ps: Vec<String> =
                    blk.params.iter().map(|p| format!("%{}: {}", k.value(*p).name, k.value(*p).ty)).collect();
                header = format!("{header}({})", ps.join(", "));
            }
            header.push(':');
            let mut body: Vec<String> = blk.insts.iter().map(|&x| print_inst(k, x)).collect();
            body.push(print_terminator(k, &blk.term));
            let mut full = header.clone();
            for l in &body {
                full.push_str("\n  ");
                full.push_str(l);
            }
            f.full.push(full);
            let ninst = body.len() - 1;
            let mut lines = vec![truncate(&header)];
            if ninst > MAX_INSTS {
                let head = MAX_INSTS - 5;
                let tail = 4;
                lines.extend(body[..head].iter().map(|l| truncate(l)));
                lines.push(format!("… {} more instructions …", ninst - head - tail));
                lines.extend(body[ninst - tail..].iter().map(|l| truncate(l)));
            } else {
                lines.extend(body.iter().map(|l| truncate(l)));
            }
            f.lines.push(lines);
        }
        f
    }

    /// The badges drawn on the header line of block `i`: (text, colour).
    fn badges(&self, i: usize) -> Vec<(&'static str, &'static str)> {
        let mut v = Vec::new();
        if self.entry[i] {
            v.push(("entry", C_ENTRY));
        }
        if self.barrier[i] {
            v.push(("barrier", C_BARRIER));
        }
        match self.branch[i] {
            Level::Varying => v.push(("br V", C_DIV)),
            Level::WarpUniform => v.push(("br W", C_WARP)),
            Level::Uniform => {}
        }
        if self.exit[i] {
            v.push(("ret", C_EXIT));
        }
        if !self.reachable[i] {
            v.push(("unreachable", C_UNREACH));
        }
        v
    }
}

fn truncate(s: &str) -> String {
    if s.chars().count() <= MAX_LINE {
        s.to_string()
    } else {
        let mut t: String = s.chars().take(MAX_LINE - 1).collect();
        t.push('…');
        t
    }
}

fn badge_width(text: &str) -> f64 {
    text.chars().count() as f64 * BADGE_CHAR_W + 10.0
}

/// XML-escapes text for element content and attribute values.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // Control characters are not allowed in XML 1.0 (block names cannot hold them; be safe).
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => out.push('?'),
            c => out.push(c),
        }
    }
    out
}

/// One CFG edge and how it is routed.
struct EdgeRoute {
    from: usize,
    to: usize,
    pos: usize,
    /// The edge closes a cycle (drawn around the right-hand side).
    back: bool,
    /// Layout nodes the edge passes through (dummies), top to bottom.
    chain: Vec<usize>,
}

/// Positions: layout node `i < nblocks` is block `i`; the rest are dummies of long edges.
struct Layout {
    /// Center x, top y, width, height of every layout node.
    x: Vec<f64>,
    y: Vec<f64>,
    w: Vec<f64>,
    h: Vec<f64>,
    layer: Vec<usize>,
    layer_top: Vec<f64>,
    layer_h: Vec<f64>,
    edges: Vec<EdgeRoute>,
    /// x of each back edge's vertical run (parallel to `edges`; 0 for forward edges).
    back_x: Vec<f64>,
    width: f64,
    height: f64,
}

impl Layout {
    fn compute(k: &Kernel, cfg: &Cfg, facts: &BlockFacts) -> Layout {
        let nb = k.blocks.len();
        // Depth-first search (entry first, then every block not yet seen, in index order) to find
        // the retreating edges and a natural initial order.
        let mut state = vec![0u8; nb]; // 0 new, 1 on stack, 2 done
        let mut preorder = Vec::with_capacity(nb);
        let mut back = std::collections::BTreeSet::new(); // (from, pos)
        for root in 0..nb {
            if state[root] != 0 {
                continue;
            }
            let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
            state[root] = 1;
            preorder.push(root);
            while let Some(top) = stack.last_mut() {
                let (b, next) = *top;
                let succs = cfg.succs(BlockId(b as u32));
                if next < succs.len() {
                    top.1 += 1;
                    let s = succs[next].index();
                    if s >= nb {
                        continue;
                    }
                    match state[s] {
                        0 => {
                            state[s] = 1;
                            preorder.push(s);
                            stack.push((s, 0));
                        }
                        1 => {
                            back.insert((b, next));
                        }
                        _ => {}
                    }
                } else {
                    state[b] = 2;
                    stack.pop();
                }
            }
        }
        let mut dfs_rank = vec![0usize; nb];
        for (r, &b) in preorder.iter().enumerate() {
            dfs_rank[b] = r;
        }
        // Edges in terminator order.
        let mut edges = Vec::new();
        for b in 0..nb {
            for (pos, s) in cfg.succs(BlockId(b as u32)).iter().enumerate() {
                let to = s.index();
                if to >= nb {
                    continue;
                }
                edges.push(EdgeRoute { from: b, to, pos, back: back.contains(&(b, pos)), chain: Vec::new() });
            }
        }
        // Longest-path layering over the forward edges (a DAG), in a topological order.
        let mut indeg = vec![0usize; nb];
        for e in edges.iter().filter(|e| !e.back) {
            indeg[e.to] += 1;
        }
        let mut layer = vec![0usize; nb];
        let mut ready: std::collections::BTreeSet<(usize, usize)> =
            (0..nb).filter(|&b| indeg[b] == 0).map(|b| (dfs_rank[b], b)).collect();
        while let Some(&(r, b)) = ready.iter().next() {
            ready.remove(&(r, b));
            for e in edges.iter().filter(|e| !e.back && e.from == b) {
                layer[e.to] = layer[e.to].max(layer[b] + 1);
                indeg[e.to] -= 1;
                if indeg[e.to] == 0 {
                    ready.insert((dfs_rank[e.to], e.to));
                }
            }
        }
        // Node sizes.
        let mut w = Vec::with_capacity(nb);
        let mut h = Vec::with_capacity(nb);
        for b in 0..nb {
            let lines = &facts.lines[b];
            let header_w = lines[0].chars().count() as f64 * CHAR_W
                + facts.badges(b).iter().map(|(t, _)| badge_width(t) + 4.0).sum::<f64>()
                + 6.0;
            let body_w = lines[1..].iter().map(|l| l.chars().count() as f64 * CHAR_W + 12.0).fold(0.0, f64::max);
            w.push(header_w.max(body_w).max(60.0) + 2.0 * PAD + 6.0);
            h.push(lines.len() as f64 * LINE_H + 2.0 * PAD + 4.0);
        }
        // Dummies for long forward edges.
        let mut node_layer = layer.clone();
        for e in edges.iter_mut().filter(|e| !e.back) {
            let (a, b) = (node_layer[e.from], node_layer[e.to]);
            for l in a + 1..b {
                let d = w.len();
                w.push(2.0);
                h.push(0.0);
                node_layer.push(l);
                e.chain.push(d);
            }
        }
        let nn = w.len();
        let nlayers = node_layer.iter().copied().max().map_or(0, |m| m + 1);
        // Initial order: blocks by DFS preorder, each followed in its layer... dummies by their edge.
        let mut layers: Vec<Vec<usize>> = vec![Vec::new(); nlayers];
        for &b in &preorder {
            layers[node_layer[b]].push(b);
        }
        let mut order_edges: Vec<usize> = (0..edges.len()).collect();
        order_edges.sort_by_key(|&i| (dfs_rank[edges[i].from], edges[i].pos));
        for &i in &order_edges {
            for &d in &edges[i].chain {
                layers[node_layer[d]].push(d);
            }
        }
        // Segments between consecutive layers.
        let mut up: Vec<Vec<usize>> = vec![Vec::new(); nn];
        let mut down: Vec<Vec<usize>> = vec![Vec::new(); nn];
        for e in edges.iter().filter(|e| !e.back) {
            let mut path = vec![e.from];
            path.extend(&e.chain);
            path.push(e.to);
            for p in path.windows(2) {
                down[p[0]].push(p[1]);
                up[p[1]].push(p[0]);
            }
        }
        // Barycenter sweeps, keeping the ordering with the fewest crossings.
        let mut best = layers.clone();
        let mut best_cross = crossings(&layers, &down, nn);
        for it in 0..12 {
            let downward = it % 2 == 0;
            let range: Vec<usize> =
                if downward { (1..nlayers).collect() } else { (0..nlayers.saturating_sub(1)).rev().collect() };
            for l in range {
                let (fixed, nbrs) = if downward { (l - 1, &up) } else { (l + 1, &down) };
                let mut pos = vec![0.0f64; nn];
                for (i, &v) in layers[fixed].iter().enumerate() {
                    pos[v] = i as f64;
                }
                let mut keyed: Vec<(f64, usize, usize)> = layers[l]
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| {
                        let ns = &nbrs[v];
                        let bc = if ns.is_empty() {
                            i as f64
                        } else {
                            ns.iter().map(|&n| pos[n]).sum::<f64>() / ns.len() as f64
                        };
                        (bc, i, v)
                    })
                    .collect();
                keyed.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal).then(a.1.cmp(&b.1)));
                layers[l] = keyed.into_iter().map(|t| t.2).collect();
            }
            let c = crossings(&layers, &down, nn);
            if c < best_cross {
                best_cross = c;
                best = layers.clone();
            }
        }
        let layers = best;
        // Horizontal positions: start packed, then pull each node toward its neighbours' mean,
        // keeping order and separation (average of a left- and a right-pushed placement).
        let sep = |a: usize, b: usize| -> f64 {
            let gap = if a >= nb || b >= nb { DUMMY_GAP } else { NODE_GAP };
            w[a] / 2.0 + w[b] / 2.0 + gap
        };
        let mut x = vec![0.0f64; nn];
        for layer in &layers {
            let mut cur = 0.0;
            for (i, &v) in layer.iter().enumerate() {
                if i > 0 {
                    cur += sep(layer[i - 1], v);
                }
                x[v] = cur;
            }
            let shift = cur / 2.0;
            for &v in layer {
                x[v] -= shift;
            }
        }
        for it in 0..16 {
            let downward = it % 2 == 0;
            let range: Vec<usize> = if downward { (0..nlayers).collect() } else { (0..nlayers).rev().collect() };
            for l in range {
                let layer = &layers[l];
                if layer.is_empty() {
                    continue;
                }
                let desired: Vec<f64> = layer
                    .iter()
                    .map(|&v| {
                        let ns: Vec<usize> = if it % 4 < 2 {
                            if downward {
                                up[v].clone()
                            } else {
                                down[v].clone()
                            }
                        } else {
                            up[v].iter().chain(down[v].iter()).copied().collect()
                        };
                        if ns.is_empty() {
                            x[v]
                        } else {
                            ns.iter().map(|&n| x[n]).sum::<f64>() / ns.len() as f64
                        }
                    })
                    .collect();
                let m = layer.len();
                let mut left = desired.clone();
                for i in 1..m {
                    left[i] = left[i].max(left[i - 1] + sep(layer[i - 1], layer[i]));
                }
                let mut right = desired.clone();
                for i in (0..m - 1).rev() {
                    right[i] = right[i].min(right[i + 1] - sep(layer[i], layer[i + 1]));
                }
                for i in 0..m {
                    x[layer[i]] = (left[i] + right[i]) / 2.0;
                }
            }
        }
        // Vertical positions.
        let mut layer_h = vec![0.0f64; nlayers];
        for v in 0..nn {
            layer_h[node_layer[v]] = layer_h[node_layer[v]].max(h[v]);
        }
        let mut layer_top = vec![0.0f64; nlayers];
        let mut y_cur = MARGIN + TITLE_H;
        for l in 0..nlayers {
            layer_top[l] = y_cur;
            y_cur += layer_h[l] + LAYER_GAP;
        }
        let mut y = vec![0.0f64; nn];
        for v in 0..nn {
            y[v] = layer_top[node_layer[v]];
            if v >= nb {
                h[v] = layer_h[node_layer[v]];
            }
        }
        // Shift so the leftmost node starts at the margin.
        let min_x = (0..nn).map(|v| x[v] - w[v] / 2.0).fold(f64::INFINITY, f64::min);
        let min_x = if min_x.is_finite() { min_x } else { 0.0 };
        for xv in x.iter_mut() {
            *xv += MARGIN - min_x;
        }
        // Back edges: a vertical run right of everything in the layers they span.
        let mut back_x = vec![0.0f64; edges.len()];
        let mut runs: Vec<(f64, f64, f64)> = Vec::new(); // (top, bottom, x) of placed runs
        let mut back_ids: Vec<usize> = (0..edges.len()).filter(|&i| edges[i].back).collect();
        back_ids.sort_by_key(|&i| {
            let e = &edges[i];
            (node_layer[e.from] - node_layer[e.to].min(node_layer[e.from]), e.from, e.pos)
        });
        for i in back_ids {
            let e = &edges[i];
            let (lt, lb) = (node_layer[e.to].min(node_layer[e.from]), node_layer[e.to].max(node_layer[e.from]));
            let mut rx: f64 = 0.0;
            for v in 0..nn {
                if (lt..=lb).contains(&node_layer[v]) {
                    rx = rx.max(x[v] + w[v] / 2.0);
                }
            }
            let (top, bottom) = (layer_top[lt], layer_top[lb] + layer_h[lb]);
            let mut cand = rx + 18.0;
            for &(t, b, rx2) in &runs {
                if t <= bottom + 20.0 && top <= b + 20.0 && cand <= rx2 + 11.0 {
                    cand = rx2 + 12.0;
                }
            }
            runs.push((top, bottom, cand));
            back_x[i] = cand;
        }
        let graph_right =
            (0..nn).map(|v| x[v] + w[v] / 2.0).chain(back_x.iter().copied()).fold(MARGIN, f64::max) + 12.0;
        let height = y_cur - LAYER_GAP + MARGIN;
        Layout { x, y, w, h, layer: node_layer, layer_top, layer_h, edges, back_x, width: graph_right, height }
    }
}

/// Crossings between consecutive layers (quadratic per layer pair; CFGs are small).
fn crossings(layers: &[Vec<usize>], down: &[Vec<usize>], nn: usize) -> usize {
    let mut pos = vec![0usize; nn];
    for l in layers {
        for (i, &v) in l.iter().enumerate() {
            pos[v] = i;
        }
    }
    let mut total = 0;
    for l in layers {
        let segs: Vec<(usize, usize)> = l.iter().flat_map(|&v| down[v].iter().map(move |&t| (v, t))).collect();
        for i in 0..segs.len() {
            for j in i + 1..segs.len() {
                let (a, b) = (segs[i], segs[j]);
                let (pa, pb) = (pos[a.0], pos[b.0]);
                let (qa, qb) = (pos[a.1], pos[b.1]);
                if (pa < pb && qa > qb) || (pa > pb && qa < qb) {
                    total += 1;
                }
            }
        }
    }
    total
}

fn f(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    let r = if r == 0.0 { 0.0 } else { r }; // no "-0.0"
    format!("{r:.1}")
}

fn edge_style(back: bool, level: Level) -> (&'static str, &'static str, &'static str, &'static str) {
    // (class, colour, dash, marker id)
    if back {
        return ("back", C_BACK, "", "arrow-back");
    }
    match level {
        Level::Varying => ("divergent", C_DIV, "6,4", "arrow-div"),
        Level::WarpUniform => ("warp", C_WARP, "6,4", "arrow-warp"),
        Level::Uniform => ("", C_EDGE, "", "arrow"),
    }
}

fn draw(k: &Kernel, has_uniformity: bool, facts: &BlockFacts, lay: &Layout) -> String {
    let nb = k.blocks.len();
    let legend = legend_items(has_uniformity);
    let legend_w = 380.0;
    let legend_h = 28.0 + legend.len() as f64 * 22.0 + if has_uniformity { 0.0 } else { 20.0 };
    let legend_x = lay.width + 28.0;
    let legend_y = MARGIN + TITLE_H;
    let width = legend_x + legend_w + MARGIN;
    let height = lay.height.max(legend_y + legend_h + MARGIN);
    let mut o = String::new();
    let _ = writeln!(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
    let _ = writeln!(
        o,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" \
         font-family=\"{FONT}\" font-size=\"{FONT_SIZE}\" class=\"kir-cfg\" data-kernel=\"{name}\">",
        w = f(width),
        h = f(height),
        name = escape(&k.name)
    );
    let _ = writeln!(o, "<title>@{} — control-flow graph</title>", escape(&k.name));
    o.push_str("<defs>\n");
    for (id, c) in [("arrow", C_EDGE), ("arrow-div", C_DIV), ("arrow-warp", C_WARP), ("arrow-back", C_BACK)] {
        let _ = writeln!(
            o,
            "<marker id=\"{id}\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerWidth=\"7\" markerHeight=\"7\" \
             orient=\"auto-start-reverse\"><path d=\"M0,0 L10,5 L0,10 z\" fill=\"{c}\"/></marker>"
        );
    }
    o.push_str("</defs>\n");
    let _ = writeln!(o, "<rect x=\"0\" y=\"0\" width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>", f(width), f(height));
    let _ = writeln!(
        o,
        "<text x=\"{}\" y=\"{}\" font-size=\"15\" font-weight=\"bold\" fill=\"#222\">@{} — control-flow graph</text>",
        f(MARGIN),
        f(MARGIN + 14.0),
        escape(&k.name)
    );
    // Edges first, so blocks are drawn over them.
    o.push_str("<g id=\"edges\">\n");
    // Incoming ports: forward edges into a block spread over its top, ordered by where they come from.
    let mut incoming: Vec<Vec<(f64, usize)>> = vec![Vec::new(); nb];
    for (i, e) in lay.edges.iter().enumerate() {
        if !e.back {
            let from = e.chain.last().copied().unwrap_or(e.from);
            incoming[e.to].push((lay.x[from], i));
        }
    }
    let mut in_port = vec![0.0f64; lay.edges.len()];
    for (b, list) in incoming.iter_mut().enumerate() {
        list.sort_by(|a, c| a.0.partial_cmp(&c.0).unwrap_or(std::cmp::Ordering::Equal).then(a.1.cmp(&c.1)));
        let n = list.len();
        let step = (lay.w[b] * 0.5 / n.max(1) as f64).min(24.0);
        for (j, &(_, i)) in list.iter().enumerate() {
            in_port[i] = lay.x[b] + (j as f64 - (n as f64 - 1.0) / 2.0) * step;
        }
    }
    for (i, e) in lay.edges.iter().enumerate() {
        let term = &k.block(BlockId(e.from as u32)).term;
        let is_br = matches!(term, Terminator::Br { .. });
        let level = facts.branch[e.from];
        let (class, colour, dash, marker) = edge_style(e.back, level);
        let nsucc = if is_br { 2.0 } else { 1.0 };
        let mut classes = vec!["edge"];
        if !class.is_empty() {
            classes.push(class);
        }
        if is_br {
            classes.push(if e.pos == 0 { "true" } else { "false" });
        }
        let src_bottom = lay.y[e.from] + lay.h[e.from];
        let d = if e.back {
            let sx = lay.x[e.from] + lay.w[e.from] / 2.0 - 14.0 - 8.0 * e.pos as f64;
            let tx = lay.x[e.to] + lay.w[e.to] / 2.0 - 14.0;
            let ty = lay.y[e.to];
            let rx = lay.back_x[i];
            // Below the source's whole layer, so the run never crosses a block of that layer.
            let lf = lay.layer[e.from];
            let below = lay.layer_top[lf] + lay.layer_h[lf] + 14.0 + 4.0 * (i % 3) as f64;
            let above = ty - 16.0;
            format!(
                "M{},{} L{},{} Q{},{} {},{} L{},{} Q{},{} {},{} L{},{} Q{},{} {},{} L{},{} Q{},{} {},{} L{},{}",
                f(sx),
                f(src_bottom),
                f(sx),
                f(below - 6.0),
                f(sx),
                f(below),
                f(sx + 6.0),
                f(below),
                f(rx - 6.0),
                f(below),
                f(rx),
                f(below),
                f(rx),
                f(below - 6.0),
                f(rx),
                f(above + 6.0),
                f(rx),
                f(above),
                f(rx - 6.0),
                f(above),
                f(tx + 6.0),
                f(above),
                f(tx),
                f(above),
                f(tx),
                f(above + 6.0),
                f(tx),
                f(ty),
            )
        } else {
            let sx = lay.x[e.from] + if is_br { (e.pos as f64 - (nsucc - 1.0) / 2.0) * 28.0 } else { 0.0 };
            let mut pts = vec![(sx, src_bottom)];
            for &dm in &e.chain {
                pts.push((lay.x[dm], lay.layer_top[lay.layer[dm]]));
                pts.push((lay.x[dm], lay.layer_top[lay.layer[dm]] + lay.layer_h[lay.layer[dm]]));
            }
            pts.push((in_port[i], lay.y[e.to]));
            let mut d = format!("M{},{}", f(pts[0].0), f(pts[0].1));
            for p in pts.windows(2) {
                let ((ax, ay), (bx, by)) = (p[0], p[1]);
                if (ax - bx).abs() < 0.05 {
                    let _ = write!(d, " L{},{}", f(bx), f(by));
                } else {
                    let my = (ay + by) / 2.0;
                    let _ = write!(d, " C{},{} {},{} {},{}", f(ax), f(my), f(bx), f(my), f(bx), f(by));
                }
            }
            d
        };
        let _ = write!(o, "<g id=\"e{}-{}-{}\" class=\"{}\">", e.from, e.to, e.pos, classes.join(" "));
        let width = if e.back || level != Level::Uniform { 1.8 } else { 1.3 };
        let dash_attr = if dash.is_empty() { String::new() } else { format!(" stroke-dasharray=\"{dash}\"") };
        let _ = write!(
            o,
            "<path d=\"{d}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"{width}\"{dash_attr} marker-end=\"url(#{marker})\"/>"
        );
        if is_br && !e.back {
            let sx = lay.x[e.from] + (e.pos as f64 - 0.5) * 28.0;
            let (tx, anchor) = if e.pos == 0 { (sx - 4.0, "end") } else { (sx + 4.0, "start") };
            let _ = write!(
                o,
                "<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"{anchor}\" fill=\"{colour}\">{}</text>",
                f(tx),
                f(src_bottom + 12.0),
                if e.pos == 0 { "T" } else { "F" }
            );
        } else if is_br {
            let sx = lay.x[e.from] + lay.w[e.from] / 2.0 - 14.0 - 8.0 * e.pos as f64;
            let _ = write!(
                o,
                "<text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"end\" fill=\"{colour}\">{}</text>",
                f(sx - 4.0),
                f(src_bottom + 12.0),
                if e.pos == 0 { "T" } else { "F" }
            );
        }
        o.push_str("</g>\n");
    }
    o.push_str("</g>\n<g id=\"blocks\">\n");
    for b in 0..nb {
        draw_block(&mut o, k, facts, lay, b);
    }
    o.push_str("</g>\n");
    draw_legend(&mut o, &legend, has_uniformity, legend_x, legend_y, legend_w, legend_h);
    o.push_str("</svg>\n");
    o
}

fn draw_block(o: &mut String, k: &Kernel, facts: &BlockFacts, lay: &Layout, b: usize) {
    let (cx, y, w, h) = (lay.x[b], lay.y[b], lay.w[b], lay.h[b]);
    let x = cx - w / 2.0;
    let mut classes = vec!["block"];
    let reach = facts.reachable[b];
    if facts.entry[b] {
        classes.push("entry");
    }
    if facts.exit[b] {
        classes.push("exit");
    }
    if facts.barrier[b] {
        classes.push("barrier");
    }
    match facts.branch[b] {
        Level::Varying => classes.push("divergent-branch"),
        Level::WarpUniform => classes.push("warp-branch"),
        Level::Uniform => {}
    }
    let partial = facts.control[b] != Level::Uniform;
    if partial {
        classes.push("partial");
    }
    if !reach {
        classes.push("unreachable");
    }
    let name = &k.block(BlockId(b as u32)).name;
    let _ = write!(o, "<g id=\"b{b}\" class=\"{}\" data-name=\"{}\">", classes.join(" "), escape(name));
    let _ = write!(o, "<title>{}</title>", escape(&facts.full[b]));
    let fill = if partial { C_PARTIAL_FILL } else { "#ffffff" };
    let (stroke, sw) = if !reach {
        (C_UNREACH, 1.2)
    } else if facts.entry[b] {
        (C_ENTRY, 2.4)
    } else if facts.exit[b] {
        (C_EXIT, 2.4)
    } else {
        ("#444444", 1.2)
    };
    let dash = if reach { "" } else { " stroke-dasharray=\"5,4\"" };
    let _ = write!(
        o,
        "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"4\" fill=\"{fill}\" stroke=\"{stroke}\" stroke-width=\"{sw}\"{dash}/>",
        f(x),
        f(y),
        f(w),
        f(h)
    );
    if facts.exit[b] && reach {
        // A double border for exits.
        let _ = write!(
            o,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"2\" fill=\"none\" stroke=\"{C_EXIT}\" stroke-width=\"0.8\"/>",
            f(x + 3.5),
            f(y + 3.5),
            f(w - 7.0),
            f(h - 7.0)
        );
    }
    if facts.barrier[b] {
        let _ = write!(
            o,
            "<rect x=\"{}\" y=\"{}\" width=\"6\" height=\"{}\" fill=\"{C_BARRIER}\"/>",
            f(x + 1.0),
            f(y + 1.0),
            f(h - 2.0)
        );
    }
    let text_x = x + PAD + 6.0;
    let text_fill = if reach { "#111111" } else { "#777777" };
    for (j, line) in facts.lines[b].iter().enumerate() {
        let ty = y + PAD + 11.0 + j as f64 * LINE_H;
        let (lx, weight) = if j == 0 { (text_x, " font-weight=\"bold\"") } else { (text_x + 12.0, "") };
        let elided = line.starts_with('…');
        let style = if elided { " font-style=\"italic\" fill=\"#777777\"" } else { "" };
        let fill_attr = if elided { String::new() } else { format!(" fill=\"{text_fill}\"") };
        let _ = write!(
            o,
            "<text x=\"{}\" y=\"{}\"{weight}{style}{fill_attr} xml:space=\"preserve\">{}</text>",
            f(lx),
            f(ty),
            escape(line)
        );
    }
    // Badges, right-aligned on the header line.
    let mut bx = x + w - PAD;
    for (text, colour) in facts.badges(b).iter().rev() {
        let bw = badge_width(text);
        bx -= bw;
        let _ = write!(
            o,
            "<g class=\"badge\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"14\" rx=\"7\" fill=\"{colour}\"/>\
             <text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\" fill=\"#ffffff\">{}</text></g>",
            f(bx),
            f(y + PAD),
            f(bw),
            f(bx + bw / 2.0),
            f(y + PAD + 10.5),
            escape(text)
        );
        bx -= 4.0;
    }
    o.push_str("</g>\n");
}

/// One legend line: (kind, label).
enum Swatch {
    Block { stroke: &'static str, width: f64, fill: &'static str, dashed: bool, stripe: bool, double: bool },
    Badge { text: &'static str, colour: &'static str },
    Edge { colour: &'static str, dashed: bool },
}

fn legend_items(has_uniformity: bool) -> Vec<(Swatch, &'static str)> {
    let mut v = vec![
        (
            Swatch::Block { stroke: C_ENTRY, width: 2.4, fill: "#ffffff", dashed: false, stripe: false, double: false },
            "entry block",
        ),
        (
            Swatch::Block { stroke: C_EXIT, width: 2.4, fill: "#ffffff", dashed: false, stripe: false, double: true },
            "exit: the block ends in `ret`",
        ),
        (
            Swatch::Block {
                stroke: "#444444",
                width: 1.2,
                fill: "#ffffff",
                dashed: false,
                stripe: true,
                double: false,
            },
            "holds a `barrier`",
        ),
    ];
    if has_uniformity {
        v.push((Swatch::Badge { text: "br V", colour: C_DIV }, "branch condition varies within a warp"));
        v.push((Swatch::Edge { colour: C_DIV, dashed: true }, "edge of a divergent (V) branch"));
        v.push((Swatch::Badge { text: "br W", colour: C_WARP }, "condition warp-uniform, varies between warps"));
        v.push((Swatch::Edge { colour: C_WARP, dashed: true }, "edge of a warp-uniform (W) branch"));
        v.push((
            Swatch::Block {
                stroke: "#444444",
                width: 1.2,
                fill: C_PARTIAL_FILL,
                dashed: false,
                stripe: false,
                double: false,
            },
            "run by only some threads (level W or V)",
        ));
    }
    v.push((Swatch::Edge { colour: C_BACK, dashed: false }, "loop back edge (closes a cycle)"));
    v.push((Swatch::Edge { colour: C_EDGE, dashed: false }, "other edge; T / F: branch sides"));
    v.push((
        Swatch::Block { stroke: C_UNREACH, width: 1.2, fill: "#ffffff", dashed: true, stripe: false, double: false },
        "unreachable from the entry",
    ));
    v
}

fn draw_legend(o: &mut String, items: &[(Swatch, &'static str)], has_u: bool, x: f64, y: f64, w: f64, h: f64) {
    let _ = write!(
        o,
        "<g id=\"legend\"><rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" rx=\"4\" fill=\"#fafafa\" stroke=\"#bbbbbb\"/>",
        f(x),
        f(y),
        f(w),
        f(h)
    );
    let _ = write!(o, "<text x=\"{}\" y=\"{}\" font-weight=\"bold\">Legend</text>", f(x + 10.0), f(y + 18.0));
    for (i, (sw, label)) in items.iter().enumerate() {
        let ly = y + 30.0 + i as f64 * 22.0;
        let sx = x + 10.0;
        o.push_str("<g class=\"legend-item\">");
        match sw {
            Swatch::Block { stroke, width, fill, dashed, stripe, double } => {
                let dash = if *dashed { " stroke-dasharray=\"5,4\"" } else { "" };
                let _ = write!(
                    o,
                    "<rect x=\"{}\" y=\"{}\" width=\"40\" height=\"15\" rx=\"3\" fill=\"{fill}\" stroke=\"{stroke}\" stroke-width=\"{width}\"{dash}/>",
                    f(sx),
                    f(ly)
                );
                if *double {
                    let _ = write!(
                        o,
                        "<rect x=\"{}\" y=\"{}\" width=\"34\" height=\"9\" rx=\"1\" fill=\"none\" stroke=\"{stroke}\" stroke-width=\"0.8\"/>",
                        f(sx + 3.0),
                        f(ly + 3.0)
                    );
                }
                if *stripe {
                    let _ = write!(
                        o,
                        "<rect x=\"{}\" y=\"{}\" width=\"6\" height=\"13\" fill=\"{C_BARRIER}\"/>",
                        f(sx + 1.0),
                        f(ly + 1.0)
                    );
                }
            }
            Swatch::Badge { text, colour } => {
                let bw = badge_width(text);
                let _ = write!(
                    o,
                    "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"14\" rx=\"7\" fill=\"{colour}\"/>\
                     <text x=\"{}\" y=\"{}\" font-size=\"10\" text-anchor=\"middle\" fill=\"#ffffff\">{}</text>",
                    f(sx),
                    f(ly + 1.0),
                    f(bw),
                    f(sx + bw / 2.0),
                    f(ly + 11.5),
                    escape(text)
                );
            }
            Swatch::Edge { colour, dashed } => {
                let dash = if *dashed { " stroke-dasharray=\"6,4\"" } else { "" };
                let _ = write!(
                    o,
                    "<path d=\"M{},{} L{},{}\" stroke=\"{colour}\" stroke-width=\"1.8\"{dash}/>",
                    f(sx),
                    f(ly + 7.5),
                    f(sx + 36.0),
                    f(ly + 7.5)
                );
                let _ = write!(
                    o,
                    "<path d=\"M{},{} L{},{} L{},{} z\" fill=\"{colour}\"/>",
                    f(sx + 34.0),
                    f(ly + 3.5),
                    f(sx + 41.0),
                    f(ly + 7.5),
                    f(sx + 34.0),
                    f(ly + 11.5)
                );
            }
        }
        let _ =
            write!(o, "<text x=\"{}\" y=\"{}\" font-size=\"11\">{}</text>", f(sx + 52.0), f(ly + 11.5), escape(label));
        o.push_str("</g>");
    }
    if !has_u {
        let ly = y + 30.0 + items.len() as f64 * 22.0;
        let _ = write!(
            o,
            "<text x=\"{}\" y=\"{}\" font-size=\"11\" fill=\"{C_DIV}\">no divergence marks: the kernel does not verify</text>",
            f(x + 10.0),
            f(ly + 8.0)
        );
    }
    o.push_str("</g>\n");
}
