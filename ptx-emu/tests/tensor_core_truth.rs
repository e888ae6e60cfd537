//! The emulator's tensor-core arithmetic ([`kir_ptx_emu::tensor_core`]) against what real tensor
//! cores computed: `../shared/hardware-truth/tensor-cores/` beside the repository (5,000 dot
//! products per device and input format, measured on A100, H100, H200 and B200 by Khattak and
//! Mikaitis; BSD 2-Clause, its LICENCE file is beside the data; the README there states the format
//! and the model). The archives are read as they are (`lzma-rs`, and the few lines of ustar below),
//! never unpacked into the tree; nothing here writes to them.
//!
//! - `the_model_reproduces_every_fp16_bf16_tf32_row`: [`TensorCores::dot`] with the device's rule
//!   (A100: [`TensorCores::Sm80`], the others: [`TensorCores::Sm90`]) gives every `d_DEV_fp32` row
//!   bit for bit: 12 sets of 5,000. Each set is also computed with the other rule, which must miss
//!   some rows (the rules are told apart by the data).
//! - `mma_sync_reproduces_the_rows_through_the_instruction`: the same rows through a PTX kernel
//!   that the emulator runs: `mma.sync.aligned.m16n8k16` (16 products: H100/H200/B200 f16/bf16),
//!   `.m16n8k8` (8 products: A100 f16/bf16) and `.m16n8k8...tf32` (4 products, zero-padded to 8),
//!   `.target sm_80` for the A100's rows and `sm_90` for the others. One warp takes 8 rows: A's
//!   rows `i` and `i + 8` and B's column `i` are row i's vectors, C's `(i, i)` and `(i + 8, i)` its
//!   c, packed into each lane's registers by the PTX ISA's fragment layouts; D's `(i, i)` and
//!   `(i + 8, i)` must be the hardware's d, and all 128 D elements must be the model on the
//!   unpacked tile (the layout is checked off the diagonal too). The H100's f16 rows also run in
//!   an sm_80 module: with the default rule (from `.target`) some differ, with
//!   `Options::tensor_cores = Some(Sm90)` none does.
//!
//! Not checked, by choice: the fp8 rows (`E4M3`, `E5M2`: recorded with `wgmma`, they follow another
//! rule, which neither the model nor the emulator has), and `d_DEV_fp16.txt` (f16 accumulators: the
//! emulator has no `mma` with f16 C/D).
//!
//! Without the data (no `../shared` beside the repository) each test prints `skip:` and passes,
//! except with `CI=true`, where it fails: the policy of `kir_backend_ptx::tools::require_tool_or_skip`
//! for missing tools (CI runs with `shared/` beside the clone).

use kir_ptx_emu::tensor_core::{Format, TensorCores};
use kir_ptx_emu::{launch, Arg, LaunchConfig, Memory, Module, Options};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::OnceLock;

const DEVICES: [&str; 4] = ["A100", "H100", "H200", "B200"];
const FORMATS: [(&str, Format); 3] = [("fp16", Format::F16), ("bf16", Format::BF16), ("tf32", Format::TF32)];

fn truth_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/hardware-truth/tensor-cores")
}

fn rule(dev: &str) -> TensorCores {
    if dev == "A100" {
        TensorCores::Sm80
    } else {
        TensorCores::Sm90
    }
}

/// One measured set: row i is `d[i] = c[i] + Σ_k a[i][k] b[i][k]`; a and b as elements of the
/// format (f16/bf16 16-bit patterns, tf32 f32 patterns), c and d as f32 bits.
struct Rows {
    a: Vec<Vec<u32>>,
    b: Vec<Vec<u32>>,
    c: Vec<u32>,
    d: Vec<u32>,
}

type Truth = HashMap<(&'static str, &'static str), Rows>;

/// Every fp16, bf16 and tf32 set of the four archives, read once per test binary; `None` (after a
/// `skip:` line) when `../shared` is missing, a panic then with `CI=true`.
fn truth() -> Option<&'static Truth> {
    static T: OnceLock<Option<Truth>> = OnceLock::new();
    let t = T.get_or_init(|| {
        if !truth_dir().is_dir() {
            let msg = format!("{} is missing: the tensor-core truth is read from ../shared", truth_dir().display());
            if std::env::var("CI").is_ok_and(|v| v == "true") {
                panic!("{msg} (CI=true)");
            }
            eprintln!("skip: {msg}");
            return None;
        }
        let mut out = HashMap::new();
        for dev in DEVICES {
            let path = truth_dir().join(format!("{dev}.tar.xz"));
            let xz = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let mut tar = vec![];
            lzma_rs::xz_decompress(&mut std::io::Cursor::new(xz), &mut tar)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let files = untar(&tar);
            for (fmt, f) in FORMATS {
                let text = |name: String| {
                    let key = format!("{dev}/{fmt}/{name}");
                    let bytes = files.get(&key).unwrap_or_else(|| panic!("{}: no {key}", path.display()));
                    String::from_utf8(bytes.clone()).unwrap()
                };
                let vectors = |name: String| -> Vec<Vec<u32>> {
                    text(name)
                        .lines()
                        .map(|l| {
                            l.split_whitespace().map(|h| element(f, u32::from_str_radix(h, 16).unwrap())).collect()
                        })
                        .collect()
                };
                let scalars = |name: String| -> Vec<u32> {
                    text(name).lines().map(|l| u32::from_str_radix(l.trim(), 2).unwrap()).collect()
                };
                let rows = Rows {
                    a: vectors(format!("a_{dev}_{fmt}.txt")),
                    b: vectors(format!("b_{dev}_{fmt}.txt")),
                    c: scalars(format!("c_{dev}_fp32.txt")),
                    d: scalars(format!("d_{dev}_fp32.txt")),
                };
                let n = rows.d.len();
                assert_eq!((rows.a.len(), rows.b.len(), rows.c.len(), n), (5000, 5000, 5000, 5000), "{dev} {fmt}");
                out.insert((dev, fmt), rows);
            }
        }
        Some(out)
    });
    t.as_ref()
}

/// The regular files of an uncompressed ustar archive, by path.
fn untar(tar: &[u8]) -> HashMap<String, Vec<u8>> {
    let mut files = HashMap::new();
    let mut at = 0;
    while at + 512 <= tar.len() && tar[at..at + 512].iter().any(|&b| b != 0) {
        let h = &tar[at..at + 512];
        let field = |r: std::ops::Range<usize>| {
            let s = &h[r];
            String::from_utf8_lossy(&s[..s.iter().position(|&b| b == 0).unwrap_or(s.len())]).trim().to_string()
        };
        let (name, prefix) = (field(0..100), field(345..500));
        let size = usize::from_str_radix(&field(124..136), 8).unwrap();
        let path = if prefix.is_empty() { name } else { format!("{prefix}/{name}") };
        if matches!(h[156], b'0' | 0) {
            files.insert(path, tar[at + 512..at + 512 + size].to_vec());
        }
        at += 512 + size.div_ceil(512) * 512;
    }
    files
}

/// An input written as f32 bits, as an element of format `f` (it must be exactly representable).
fn element(f: Format, bits: u32) -> u32 {
    match f {
        Format::F16 => {
            let h = half::f16::from_f32(f32::from_bits(bits));
            assert_eq!(h.to_f32().to_bits(), bits, "{bits:08x} is not an f16");
            h.to_bits() as u32
        }
        Format::BF16 => {
            assert_eq!(bits & 0xffff, 0, "{bits:08x} is not a bf16");
            bits >> 16
        }
        Format::TF32 => {
            assert_eq!(bits & 0x1fff, 0, "{bits:08x} is not a tf32");
            bits
        }
    }
}

#[test]
fn the_model_reproduces_every_fp16_bf16_tf32_row() {
    let Some(truth) = truth() else { return };
    let mut report = vec![];
    for dev in DEVICES {
        for (fmt, f) in FORMATS {
            let rows = &truth[&(dev, fmt)];
            let other = if rule(dev) == TensorCores::Sm80 { TensorCores::Sm90 } else { TensorCores::Sm80 };
            let (mut same, mut other_same) = (0, 0);
            for i in 0..rows.d.len() {
                let got = rule(dev).dot(f, &rows.a[i], &rows.b[i], rows.c[i]);
                assert_eq!(
                    got,
                    rows.d[i],
                    "{dev} {fmt} row {i}: the model gives {got:08x} ({}), the GPU {:08x} ({})",
                    f32::from_bits(got),
                    rows.d[i],
                    f32::from_bits(rows.d[i])
                );
                same += 1;
                other_same += (other.dot(f, &rows.a[i], &rows.b[i], rows.c[i]) == rows.d[i]) as usize;
            }
            assert!(other_same < same, "{dev} {fmt}: the {other:?} rule fits every row too");
            report.push(format!(
                "{dev} {fmt}: {same} of {} rows bit for bit ({other:?} rule: {other_same})",
                rows.d.len()
            ));
        }
    }
    eprintln!("{}", report.join("\n"));
}

/// How set (`dev`, `fmt`) runs as an `mma.sync`: the instruction's k and PTX type.
fn shape(dev: &str, f: Format) -> (usize, &'static str) {
    match (f, dev) {
        (Format::TF32, _) => (8, "tf32"),
        (Format::F16, "A100") => (8, "f16"),
        (Format::BF16, "A100") => (8, "bf16"),
        (Format::F16, _) => (16, "f16"),
        (Format::BF16, _) => (16, "bf16"),
    }
}

/// Registers of A and B per lane.
fn frag_regs(k: usize, f: Format) -> (usize, usize) {
    if f == Format::TF32 {
        (k / 2, k / 4)
    } else {
        (k / 4, k / 8)
    }
}

fn kernel(sm: u32, k: usize, ty: &str, f: Format) -> String {
    let (na, nb) = frag_regs(k, f);
    let n = na + nb + 4;
    let loads: String = (0..n).map(|i| format!("    ld.global.u32 %v{i}, [%rd3+{}];\n", 4 * i)).collect();
    let regs = |from: usize, len: usize| (from..from + len).map(|i| format!("%v{i}")).collect::<Vec<_>>().join(", ");
    format!(
        r#".version 8.0
.target sm_{sm}
.address_size 64
.visible .entry k(.param .u64 frags, .param .u64 out)
{{
    .reg .b32 %r<4>; .reg .b32 %v<12>; .reg .f32 %d<4>; .reg .b64 %rd<8>;
    ld.param.u64 %rd1, [frags];
    ld.param.u64 %rd4, [out];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd4, %rd4;
    mov.u32 %r1, %tid.x;
    mov.u32 %r2, %ctaid.x;
    mad.lo.u32 %r3, %r2, 32, %r1;
    mul.wide.u32 %rd2, %r3, {stride};
    add.u64 %rd3, %rd1, %rd2;
{loads}    mma.sync.aligned.m16n8k{k}.row.col.f32.{ty}.{ty}.f32 {{%d0, %d1, %d2, %d3}}, {{{a}}}, {{{b}}}, {{{c}}};
    mul.wide.u32 %rd5, %r3, 16;
    add.u64 %rd6, %rd4, %rd5;
    st.global.f32 [%rd6], %d0;
    st.global.f32 [%rd6+4], %d1;
    st.global.f32 [%rd6+8], %d2;
    st.global.f32 [%rd6+12], %d3;
    ret;
}}
"#,
        stride = 4 * n,
        a = regs(0, na),
        b = regs(na, nb),
        c = regs(na + nb, 4),
    )
}

/// One warp's operands: A (16 x k, row-major), B (8 columns of k), C (16 x 8), elements as bits.
struct Tile {
    a: [[u32; 16]; 16],
    b: [[u32; 16]; 8],
    c: [[u32; 8]; 16],
}

/// The tile of rows `8w .. 8w + 8`: row `8w + i` in A's rows i and i + 8 and B's column i (zero
/// beyond its length), its c at C's (i, i) and (i + 8, i); C's other elements are other rows' c.
fn tile(rows: &Rows, w: usize) -> Tile {
    let mut t = Tile { a: [[0; 16]; 16], b: [[0; 16]; 8], c: [[0; 8]; 16] };
    for i in 0..8 {
        let r = (8 * w + i) % rows.d.len();
        for (kk, (&x, &y)) in rows.a[r].iter().zip(&rows.b[r]).enumerate() {
            t.a[i][kk] = x;
            t.a[i + 8][kk] = x;
            t.b[i][kk] = y;
        }
        for (row, c) in t.c.iter_mut().enumerate() {
            c[i] = rows.c[(8 * w + (row + 7 * i) % 8) % rows.d.len()];
        }
        t.c[i][i] = rows.c[r];
        t.c[i + 8][i] = rows.c[r];
    }
    t
}

/// Each lane's registers (A, B, C) as the PTX ISA lays the tile out (lane t, g = t / 4,
/// q = t % 4): f16/bf16 A register j holds (g + 8 (j % 2), 2q + 8 (j / 2) [+ 1]) and B register
/// j holds (2q + 8j [+ 1], g), the lower column or row in the low half; tf32 A register j holds
/// (g + 8 (j % 2), q + 4 (j / 2)) and B register j holds (q + 4j, g); C register i holds
/// (g + 8 (i / 2), 2q + i % 2).
fn pack(t: &Tile, k: usize, f: Format, out: &mut Vec<u32>) {
    let (na, nb) = frag_regs(k, f);
    for lane in 0..32 {
        let (g, q) = (lane / 4, lane % 4);
        for j in 0..na {
            let row = g + 8 * (j % 2);
            out.push(match f {
                Format::TF32 => t.a[row][q + 4 * (j / 2)],
                _ => t.a[row][2 * q + 8 * (j / 2)] | t.a[row][2 * q + 8 * (j / 2) + 1] << 16,
            });
        }
        for j in 0..nb {
            out.push(match f {
                Format::TF32 => t.b[g][q + 4 * j],
                _ => t.b[g][2 * q + 8 * j] | t.b[g][2 * q + 8 * j + 1] << 16,
            });
        }
        for i in 0..4 {
            out.push(t.c[g + 8 * (i / 2)][2 * q + i % 2]);
        }
    }
}

/// Runs set (`dev`, `fmt`) through `mma.sync` in a module for `sm_<sm>` with `opts`; every D
/// element off the measured positions must be the model with `expect_rule` on the unpacked tile.
/// Returns how many of the 10,000 measured positions (each row twice) equal the GPU's d.
#[allow(clippy::too_many_arguments)]
fn run_mma(truth: &Truth, dev: &str, fmt: &str, f: Format, sm: u32, opts: &Options, expect_rule: TensorCores) -> usize {
    let rows = &truth[&(dev, fmt)];
    let (k, ty) = shape(dev, f);
    let warps = rows.d.len().div_ceil(8);
    let tiles: Vec<Tile> = (0..warps).map(|w| tile(rows, w)).collect();
    let mut frags = vec![];
    for t in &tiles {
        pack(t, k, f, &mut frags);
    }
    let ptx = kernel(sm, k, ty, f);
    let m = Module::parse(&ptx).unwrap_or_else(|e| panic!("{e}\n{ptx}"));
    let mut mem = Memory::new();
    let fb: Vec<u8> = frags.iter().flat_map(|x| x.to_le_bytes()).collect();
    let fbuf = mem.alloc("frags", &fb).unwrap();
    let out = mem.alloc("out", &vec![0u8; warps * 32 * 16]).unwrap();
    let cfg = LaunchConfig::linear(warps as u32, 32);
    launch(&m, "k", &cfg, &[Arg::Buffer(fbuf), Arg::Buffer(out)], &mut mem, opts).unwrap_or_else(|e| panic!("{e}"));
    let d: Vec<u32> = mem.bytes(out).unwrap().chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect();
    let mut hits = 0;
    for (w, t) in tiles.iter().enumerate() {
        for lane in 0..32 {
            let (g, q) = (lane / 4, lane % 4);
            for e in 0..4 {
                let (row, col) = (g + 8 * (e / 2), 2 * q + e % 2);
                let got = d[(w * 32 + lane) * 4 + e];
                if row % 8 == col {
                    hits += (got == rows.d[(8 * w + col) % rows.d.len()]) as usize;
                } else {
                    let want = expect_rule.dot(f, &t.a[row][..k], &t.b[col][..k], t.c[row][col]);
                    assert_eq!(got, want, "{dev} {fmt} warp {w} lane {lane}: D ({row}, {col}) is not the model's");
                }
            }
        }
    }
    hits
}

#[test]
fn mma_sync_reproduces_the_rows_through_the_instruction() {
    let Some(truth) = truth() else { return };
    let mut report = vec![];
    for dev in DEVICES {
        let sm = if rule(dev) == TensorCores::Sm80 { 80 } else { 90 };
        for (fmt, f) in FORMATS {
            let hits = run_mma(truth, dev, fmt, f, sm, &Options::default(), rule(dev));
            assert_eq!(hits, 10_000, "{dev} {fmt}: {} of 10,000 D elements differ from the GPU's d", 10_000 - hits);
            report.push(format!("{dev} {fmt}: mma.sync m16n8k{} for sm_{sm}: 10,000 of 10,000", shape(dev, f).0));
        }
    }
    // The H100's rows in a module for sm_80: its `.target` picks the A100's rule unless the
    // options name the device.
    let as_sm80 = run_mma(truth, "H100", "fp16", Format::F16, 80, &Options::default(), TensorCores::Sm80);
    assert!(as_sm80 < 10_000, "the sm_80 rule reproduces the H100's rows: the target does not choose the rule");
    let opts = Options { tensor_cores: Some(TensorCores::Sm90), ..Options::default() };
    assert_eq!(run_mma(truth, "H100", "fp16", Format::F16, 80, &opts, TensorCores::Sm90), 10_000);
    report.push(format!(
        "H100 fp16 in an sm_80 module: {as_sm80} of 10,000 by its target's rule, 10,000 with tensor_cores = Sm90"
    ));
    eprintln!("{}", report.join("\n"));
}
