//! The `ptx-emu` column of `kir test` can fail: each test corrupts the PTX kir emits for a kernel of
//! `kernels/` (or of `tests/spelled_out/`, the softmax and gradient-clipping kernels with their
//! reductions written out, see its README) on purpose (through `kir_test::Context::emu_ptx_hook`, which rewrites the PTX only on
//! its way into the emulator) and runs `kir test`'s checks on the file (`kir_test::test_file`).
//!
//! Guarantees:
//! - Every corruption is applied to text that must be present: a hook panics when the instruction
//!   it edits is missing (or not unique in its entry), so no test passes vacuously after an
//!   emitter change.
//! - For each corruption, exactly the `ptx-emu` rows of the corrupted kernel's directives fail,
//!   labelled `kernels/FILE.kir:LINE @kernel grid(..) block(..) ptx-emu`; the file row, every
//!   `interp` row and the `ptx-emu` rows of the other kernels of the file stay `ok`.
//! - Each failure says why, checked here: for a mismatch the buffer that differs (and how), for a
//!   fault its kind, the PTX line (checked against the corrupted PTX), the instruction and the
//!   thread, for unloadable PTX the PTX line and the instruction.
//!
//! What each corruption shows:
//! - a lost loop-carried update (`gemm_tiled`'s accumulator, which the last fma of a tile step
//!   writes in place: a mismatch; `squared_sum`'s grid-stride counter: an endless loop, a fuel
//!   fault);
//! - dropped `.rn`: from `div.rn.f32` the PTX no longer loads (PTX requires a rounding or
//!   `.approx`/`.full`); from a `mul.rn.f32` feeding an `add.rn.f32` the emulator contracts the two
//!   into one fma as ptxas would, which changes `silu_backward`'s results by 1 ulp in about one
//!   element in ten — invisible under the directive's `tol=abs:4e-6` (every mul+add pair of
//!   `kernels/` is in a kernel whose tolerance covers `ex2.approx`, or on a path no directive
//!   runs), visible in a kernel of exactly rounded ops whose directive asks for `tol=ulp:0`; from a `cvt` that
//!   requires it (`cvt.f32.u32`, `cvt.f16.f32`) the PTX no longer loads, as ptxas rejects it too;
//! - a constant offset one tile too far (`gemm_tiled`'s unrolled inner loop reads past the shared
//!   tiles: a fault);
//! - an address shifted by one element (a global store past the end of `c`: a fault; the shared
//!   loads `red[tid + s]` one slot up in `squared_sum`'s unrolled tree: reads never-written shared
//!   memory, which the emulator fills with 0xff bytes, NaN: a mismatch);
//! - dropped `bar.sync`s (`squared_sum`'s reduction tree, `gemm_tiled`'s tile load: mismatches).
//!   Dropping `squared_sum`'s first barrier is (correctly) not detected: for blocks of at most 512
//!   threads the tree's first step is a no-op followed by a barrier, so the kernel stays race-free.
//!
//! That the uncorrupted files pass is `tests/kir_test.rs`'s `the_kernel_library_passes`.

use kir_harness::kir_test::{self, Outcome, Row};
use std::cell::RefCell;
use std::path::Path;
use std::rc::Rc;

/// What `kir test`'s checks reported for a file whose emulator PTX was corrupted.
struct Corrupted {
    rows: Vec<Row>,
    /// The PTX the emulator loaded (after the corruption).
    ptx: String,
}

impl Corrupted {
    /// The failing rows as (label, message), after checking that only `ptx-emu` rows fail.
    fn failures(&self) -> Vec<(&str, &str)> {
        let mut out = Vec::new();
        for r in self.rows.iter().filter(|r| !r.label.ends_with(" gpu")) {
            match &r.outcome {
                Outcome::Fail(msg) if r.label.ends_with(" ptx-emu") => out.push((r.label.as_str(), msg.as_str())),
                Outcome::Ok | Outcome::Unverified => {}
                other => panic!("{}: {other:?}: only ptx-emu rows may fail", r.label),
            }
        }
        out
    }

    /// The failing rows, which must be exactly the ptx-emu rows `labels`, in order; their messages.
    fn failing(&self, labels: &[&str]) -> Vec<&str> {
        let fails = self.failures();
        let got: Vec<&str> = fails.iter().map(|f| f.0).collect();
        assert_eq!(got, labels, "failing rows: {fails:#?}");
        fails.into_iter().map(|f| f.1).collect()
    }

    /// The 1-based line of the corrupted PTX, inside `.entry NAME`, whose text (trimmed) is `text`,
    /// which must be unique there.
    fn line_of(&self, entry: &str, text: &str) -> usize {
        let head = format!(".entry {entry}(");
        let lines: Vec<&str> = self.ptx.lines().collect();
        let start = lines.iter().position(|l| l.contains(&head)).unwrap_or_else(|| panic!("no `{head}`"));
        let end = start + lines[start..].iter().position(|l| *l == "}").expect("the entry ends");
        let found: Vec<usize> = (start..end).filter(|&i| lines[i].trim() == text).map(|i| i + 1).collect();
        assert_eq!(found.len(), 1, "`{text}` in entry {entry}:\n{}", lines[start..end].join("\n"));
        found[0]
    }
}

/// Runs `kir test`'s checks (without ptxas) on `path`, the emulator loading `corrupt(ptx)` instead of
/// the emitted PTX; `fuel` replaces the emulator's default fuel.
fn run_corrupted(path: &str, fuel: Option<u64>, corrupt: impl Fn(&str) -> String + 'static) -> Corrupted {
    let seen = Rc::new(RefCell::new(None::<String>));
    let keep = Rc::clone(&seen);
    let mut ctx = kir_test::Context::detect(false);
    ctx.ptxas = None;
    if let Some(fuel) = fuel {
        ctx.emu.fuel = fuel;
    }
    ctx.emu_ptx_hook = Some(Box::new(move |ptx: &str| {
        let out = corrupt(ptx);
        assert_ne!(out, ptx, "the corruption changed nothing");
        *keep.borrow_mut() = Some(out.clone());
        out
    }));
    let mut rows = Vec::new();
    kir_test::test_file(Path::new(path), &mut ctx, &mut |r| rows.push(r));
    let ptx = seen.borrow_mut().take().unwrap_or_else(|| panic!("the hook never ran: {rows:#?}"));
    Corrupted { rows, ptx }
}

/// Applies `edit` to the lines of `.entry NAME`'s body in `ptx`.
fn edit_entry(ptx: &str, entry: &str, edit: impl FnOnce(&mut Vec<String>)) -> String {
    let head = format!(".entry {entry}(");
    let start = ptx.find(&head).unwrap_or_else(|| panic!("no `{head}` in:\n{ptx}"));
    let end = start + ptx[start..].find("\n}").expect("the entry ends");
    let mut lines: Vec<String> = ptx[start..end].lines().map(String::from).collect();
    edit(&mut lines);
    format!("{}{}{}", &ptx[..start], lines.join("\n"), &ptx[end..])
}

/// Index of the one line of `lines` whose text (trimmed) is `text`.
fn unique_line(lines: &[String], text: &str, entry: &str) -> usize {
    let found: Vec<usize> = lines.iter().enumerate().filter(|(_, l)| l.trim() == text).map(|(i, _)| i).collect();
    assert_eq!(found.len(), 1, "`{text}` must occur once in entry {entry}:\n{}", lines.join("\n"));
    found[0]
}

/// A hook replacing, in entry `entry`, the consecutive instruction lines `from` (which must occur
/// exactly once there) by `to` (each one instruction, without indentation).
fn replace(entry: &'static str, from: &'static [&'static str], to: &'static [&'static str]) -> impl Fn(&str) -> String {
    move |ptx| {
        edit_entry(ptx, entry, |lines| {
            let at = unique_line(lines, from[0], entry);
            for (k, f) in from.iter().enumerate() {
                assert_eq!(lines.get(at + k).map(|l| l.trim()), Some(*f), "after `{}` in {entry}", from[0]);
            }
            lines.splice(at..at + from.len(), to.iter().map(|t| format!("\t{t}")));
        })
    }
}

/// A hook deleting, in entry `entry`, the instruction `inst` that comes right after the line
/// `anchor` (kir's `// LINE: ...` comments in between are skipped; `anchor` must be unique).
fn drop_after(entry: &'static str, anchor: &'static str, inst: &'static str) -> impl Fn(&str) -> String {
    move |ptx| {
        edit_entry(ptx, entry, |lines| {
            let mut at = unique_line(lines, anchor, entry) + 1;
            while lines.get(at).is_some_and(|l| l.trim().starts_with("//")) {
                at += 1;
            }
            assert_eq!(lines.get(at).map(|l| l.trim()), Some(inst), "the instruction after `{anchor}` in {entry}");
            lines.remove(at);
        })
    }
}

/// Asserts `msg` is a kernel fault of `kind` at the PTX line holding `inst` in the corrupted PTX.
fn assert_fault(run: &Corrupted, entry: &str, msg: &str, kind: &str, inst: &str) {
    assert!(msg.starts_with(&format!("ptx-emu: kernel fault ({kind}): ")), "{msg}");
    let at = format!(" at PTX line {} `{inst}` in block (", run.line_of(entry, inst));
    assert!(msg.contains(&at), "expected `{at}` in: {msg}");
}

const GEMM_13: &str = "kernels/gemm_tiled.kir:18 @gemm_tiled grid(3,2) block(16,16) ptx-emu";
const GEMM_14: &str = "kernels/gemm_tiled.kir:20 @gemm_tiled grid(4,4) block(16,16) ptx-emu";
const GEMM_15: &str = "kernels/gemm_tiled.kir:22 @gemm_tiled grid(1) block(16,16) ptx-emu";
const SQSUM_33: &str = "tests/spelled_out/grad_clip.kir:33 @squared_sum grid(8) block(256) ptx-emu";
const SQSUM_34: &str = "tests/spelled_out/grad_clip.kir:34 @squared_sum grid(3) block(100) ptx-emu";

/// `gemm_tiled`'s accumulator is carried around the tile loop in one register, which the last fma
/// of each (unrolled) tile step writes in place (the block argument shares the parameter's
/// register, so there is no move on the back edge). With that fma writing a scratch register
/// instead, the accumulator never leaves 0.0, so every element of `c` comes back 0.0.
#[test]
fn lost_update_of_the_loop_carried_accumulator_is_a_mismatch() {
    let run = run_corrupted(
        "kernels/gemm_tiled.kir",
        None,
        replace("gemm_tiled", &["fma.rn.f32 %f0, %f50, %f51, %f49;"], &["fma.rn.f32 %f49, %f50, %f51, %f49;"]),
    );
    let msgs = run.failing(&[GEMM_13, GEMM_14, GEMM_15]);
    for (msg, len) in msgs.iter().zip([925, 4096, 3]) {
        let head = format!("buffer `c` differs from the interpreter (tol exact, derived): {len} elements differ\n");
        assert!(msg.starts_with(&head), "{msg}");
        assert!(msg.contains("\n    [0] expected ") && msg.contains(", got 0.0 ("), "{msg}");
    }
}

/// `squared_sum`'s grid-stride counter `%i += %stride` (updated in place, in the register the loop
/// carries it in) turned into `%i += 0`: `%i` never advances, so the loop never ends and the
/// emulator runs out of fuel inside it (the fuel is lowered to keep the test fast; the default is 2^32
/// thread-instructions, about 35 s here). The other kernels of the file still pass with that fuel.
#[test]
fn lost_update_of_the_loop_counter_runs_out_of_fuel() {
    let fuel = 1 << 22;
    let run = run_corrupted(
        "tests/spelled_out/grad_clip.kir",
        Some(fuel),
        replace("squared_sum", &["add.u32 %r1, %r1, %r6;"], &["add.u32 %r1, %r1, 0;"]),
    );
    let (loop_start, loop_end) = (run.line_of("squared_sum", "$L__loop:"), run.line_of("squared_sum", "$L__reduce:"));
    for msg in run.failing(&[SQSUM_33, SQSUM_34]) {
        let head = format!(
            "ptx-emu: kernel fault (fuel exhausted): the launch executed more than {fuel} thread-instructions \
             (an endless loop?) at PTX line "
        );
        assert!(msg.starts_with(&head), "{msg}");
        // The fault is located inside the loop, at the instruction the PTX has on that line.
        let line: usize = msg[head.len()..].split(' ').next().unwrap().parse().unwrap();
        assert!(loop_start < line && line < loop_end, "line {line} is outside the loop: {msg}");
        let inst = run.ptx.lines().nth(line - 1).unwrap().trim();
        assert!(msg.contains(&format!("at PTX line {line} `{inst}` in block (0, 0, 0) thread (0, 0, 0)")), "{msg}");
    }
}

/// `div.f32` without a rounding: PTX requires `.rn` (or another rounding), `.approx` or `.full`
/// there (ptxas: "Rounding modifier or '.approx' modifier required"), so the emulator refuses the
/// module and every ptx-emu row of the file fails, naming the PTX line and the instruction.
#[test]
fn dropped_rn_on_div_makes_the_ptx_unloadable() {
    let run = run_corrupted(
        "tests/spelled_out/softmax.kir",
        None,
        replace("softmax_rows", &["div.rn.f32 %f54, %f53, %f5;"], &["div.f32 %f54, %f53, %f5;"]),
    );
    let msgs = run.failing(&[
        "tests/spelled_out/softmax.kir:27 @softmax_rows grid(13) block(64) ptx-emu",
        "tests/spelled_out/softmax.kir:29 @softmax_rows grid(4) block(32) ptx-emu",
        "tests/spelled_out/softmax.kir:31 @softmax_rows grid(3) block(256) ptx-emu",
        "tests/spelled_out/softmax.kir:33 @softmax_naive grid(1) block(32) ptx-emu",
    ]);
    let line = run.line_of("softmax_rows", "div.f32 %f54, %f53, %f5;");
    for msg in msgs {
        assert_eq!(
            msg,
            format!(
                "the emulator cannot load the PTX: PTX line {line}:2: unsupported instruction `div.f32`: float `div` \
                 needs `.approx`, `.full` (f32) or a rounding modifier (`div.f32 %f54, %f53, %f5;`)"
            )
        );
    }
}

/// `silu_backward`'s `%t2 = mul.f32 %xs, %sb` feeding `%gp = add.f32 %s, %t2`, both without
/// `.rn`: ptxas (and the emulator) contract them into one fma, rounded once.
fn contract_silu_backward(ptx: &str) -> String {
    replace(
        "silu_backward",
        &["mul.rn.f32 %f11, %f10, %f9;", "// 154: %gp = add.f32 %s, %t2", "add.rn.f32 %f12, %f8, %f11;"],
        &["mul.f32 %f11, %f10, %f9;", "// 154: %gp = add.f32 %s, %t2", "add.f32 %f12, %f8, %f11;"],
    )(ptx)
}

/// Dropping the `.rn` of a mul+add pair changes the results by about an ulp, which the library's
/// directives do not see: every mul+add pair in `kernels/` is in a kernel using `ex2.approx`,
/// whose tolerance (`silu_backward`: `tol=abs:4e-6`) is far above 1 ulp (and the emulator's
/// `ex2.approx` follows the H100's, not the interpreter's correctly rounded one). A kernel with only
/// exactly rounded ops and `tol=ulp:0` shows the contraction.
#[test]
fn dropped_rn_on_a_mul_add_pair_contracts_it_into_an_fma() {
    // As written: not detected (the rows are ok).
    let run = run_corrupted("kernels/activations.kir", None, contract_silu_backward);
    assert_eq!(run.failing(&[]), Vec::<&str>::new());
    assert!(run.rows.iter().any(|r| r.label == "kernels/activations.kir:41 @silu_backward grid(8) block(128) ptx-emu"
        && r.outcome == Outcome::Ok));

    // y = a * b + c, exactly rounded twice, compared bit for bit.
    let source = "; run: @axpb grid(4) block(256) a=rand:f32:1000:6 b=rand:f32:1000:7 c=rand:f32:1000:8 y=zeros:f32:1000 n=1000 tol=ulp:0\n\
kernel @axpb(%a: ptr<global, f32>, %b: ptr<global, f32>, %c: ptr<global, f32>, %y: ptr<global, f32>, %n: u32) {\n\
entry:\n  %i = global_id.x\n  %inb = lt.u32 %i, %n\n  br %inb, body, exit\n\
body:\n  %av = load %a[%i]\n  %bv = load %b[%i]\n  %cv = load %c[%i]\n  %p = mul.f32 %av, %bv\n  %s = add.f32 %p, %cv\n  store %y[%i], %s\n  jmp exit\n\
exit:\n  ret\n}\n";
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("ptx_emu_faults-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let copy = dir.join("axpb.kir");
    std::fs::write(&copy, source).unwrap();
    let copy = copy.to_str().unwrap().to_string();

    let clean = run_corrupted(&copy, None, |ptx| format!("{ptx}\n"));
    assert_eq!(clean.failing(&[]), Vec::<&str>::new(), "the uncorrupted PTX meets ulp:0");
    let label = format!("{copy}:1 @axpb grid(4) block(256) ptx-emu");
    let run = run_corrupted(&copy, None, |ptx| {
        edit_entry(ptx, "axpb", |lines| {
            for op in ["mul.rn.f32", "add.rn.f32"] {
                let at: Vec<usize> = (0..lines.len()).filter(|&i| lines[i].trim_start().starts_with(op)).collect();
                assert_eq!(at.len(), 1, "one `{op}` in axpb");
                lines[at[0]] = lines[at[0]].replacen(op, &op.replace(".rn", ""), 1);
            }
        })
    });
    std::fs::remove_dir_all(&dir).ok();
    let msgs = run.failing(&[&label]);
    let msg = msgs[0];
    assert!(msg.starts_with("buffer `y` differs from the interpreter (tol ulp:0, given): "), "{msg}");
    assert!(msg.contains(" (1 ulp)"), "{msg}");
}

/// Dropping `.rn` from an integer-to-float or narrowing `cvt` leaves PTX that ptxas rejects
/// ("Rounding modifier required for instruction 'cvt'", PTX ISA: the rounding is required for
/// int-to-float and narrowing float-to-float conversions), and so does the emulator: every
/// ptx-emu row of the file fails to load, naming the PTX line and the instruction.
#[test]
fn dropped_rn_on_cvt_makes_the_ptx_unloadable() {
    for (from, to) in [("cvt.rn.f32.u32 %f2, %r1;", "cvt.f32.u32 %f2, %r1;"), ("cvt.rn.f16.f32", "cvt.f16.f32")] {
        let run = run_corrupted("kernels/rmsnorm.kir", None, move |ptx| {
            // The first instruction (not a `//` comment quoting the .kir line) with `from`.
            let mut done = false;
            let out: Vec<String> = ptx
                .lines()
                .map(|l| {
                    if !done && !l.trim_start().starts_with("//") && l.contains(from) {
                        done = true;
                        l.replacen(from, to, 1)
                    } else {
                        l.to_string()
                    }
                })
                .collect();
            assert!(done, "no instruction `{from}` in:\n{ptx}");
            out.join("\n") + "\n"
        });
        let msgs = run.failing(&[
            "kernels/rmsnorm.kir:42 @persistent_decoder grid(3) block(128) ptx-emu",
            "kernels/rmsnorm.kir:44 @persistent_decoder grid(2) block(64) ptx-emu",
            "kernels/rmsnorm.kir:46 @persistent_decoder grid(4) block(32) ptx-emu",
            "kernels/rmsnorm.kir:48 @rmsnorm_naive grid(1) block(32) ptx-emu",
        ]);
        for msg in msgs {
            assert!(msg.starts_with("the emulator cannot load the PTX: PTX line "), "{msg}");
            assert!(msg.contains(&format!("`{to}")), "{msg}");
        }
    }
}

/// `gemm_tiled`'s inner loop is unrolled: its 16th step reads `bs[15 * 16 + tx]` at a constant
/// offset of 960 bytes from `bs + 4 tx`. One more tile row (1024) reads `bs[256 + tx]`, past the
/// block's 2048 bytes of shared memory (the two 1 KiB tiles), as a 17th step would.
#[test]
fn constant_offset_one_row_too_far_reads_past_the_shared_tiles() {
    let run = run_corrupted(
        "kernels/gemm_tiled.kir",
        None,
        replace("gemm_tiled", &["ld.shared.f32 %f51, [%rd6+960];"], &["ld.shared.f32 %f51, [%rd6+1024];"]),
    );
    for msg in run.failing(&[GEMM_13, GEMM_14, GEMM_15]) {
        assert_fault(&run, "gemm_tiled", msg, "out-of-bounds access", "ld.shared.f32 %f51, [%rd6+1024];");
        assert!(
            msg.contains(
                "out-of-bounds load: shared offset 2048 + 4 bytes is outside the block's 2048 bytes of shared \
                 memory (2048 static, 0 dynamic)"
            ),
            "{msg}"
        );
        assert!(
            msg.ends_with(
                " in block (0, 0, 0) thread (0, 0, 0) (emitted for .kir line 79: `%y.15 = load %bsp.tx[240]`)"
            ),
            "{msg}"
        );
    }
}

/// `gemm_tiled`'s store of `c[row * n + col]` shifted by one element: the thread owning the last
/// element of `c` stores just past its end.
#[test]
fn address_shifted_by_one_element_stores_past_the_buffer() {
    let run = run_corrupted(
        "kernels/gemm_tiled.kir",
        None,
        replace("gemm_tiled", &["st.global.f32 [%rd20], %f0;"], &["st.global.f32 [%rd20+4], %f0;"]),
    );
    let msgs = run.failing(&[GEMM_13, GEMM_14, GEMM_15]);
    // The last element of c [m, n] is computed by thread (n-1 mod 16, m-1 mod 16) of block
    // ((n-1) / 16, (m-1) / 16).
    let cases = [
        (3700, "(2, 1, 0) thread (4, 8, 0)"),
        (16384, "(3, 3, 0) thread (15, 15, 0)"),
        (12, "(0, 0, 0) thread (0, 2, 0)"),
    ];
    for (msg, (bytes, thread)) in msgs.into_iter().zip(cases) {
        assert_fault(&run, "gemm_tiled", msg, "out-of-bounds access", "st.global.f32 [%rd20+4], %f0;");
        assert!(msg.contains(&format!(" is 0 bytes past the end of buffer `c` ({bytes} bytes) at PTX line ")), "{msg}");
        assert!(msg.contains("out-of-bounds store: global address 0x"), "{msg}");
        assert!(
            msg.ends_with(&format!(" in block {thread} (emitted for .kir line 93: `store %c[%ci], %acc`)")),
            "{msg}"
        );
    }
}

/// `squared_sum`'s tree is unrolled: each level loads `red[tid + s]` at the constant offset `4 s`
/// from `red + 4 tid`. Every one of those loads shifted by one element stays inside the shared
/// array, but the last fold of the first active level reads `red[nt]`, which no thread wrote; the
/// emulator's shared memory starts as 0xff bytes (a NaN as f32), so every partial sum comes back
/// NaN.
#[test]
fn address_shifted_by_one_element_reads_unwritten_shared_memory() {
    let run = run_corrupted("tests/spelled_out/grad_clip.kir", None, |ptx| {
        edit_entry(ptx, "squared_sum", |lines| {
            let mut shifted = 0;
            for l in lines.iter_mut() {
                let t = l.trim();
                if let Some(off) = t.strip_prefix("ld.shared.f32 ").and_then(|r| r.split("[%rd3+").nth(1)) {
                    let bytes: u32 = off.trim_end_matches("];").parse().expect("a byte offset");
                    *l = l.replace(&format!("[%rd3+{bytes}]"), &format!("[%rd3+{}]", bytes + 4));
                    shifted += 1;
                }
            }
            assert_eq!(shifted, 10, "one `red[tid + s]` load per level of the tree");
        })
    });
    for (msg, len) in run.failing(&[SQSUM_33, SQSUM_34]).into_iter().zip([8, 3]) {
        let head =
            format!("buffer `partials` differs from the interpreter (tol exact, derived): {len} elements differ\n");
        assert!(msg.starts_with(&head), "{msg}");
        assert!(msg.contains(", got NaN("), "{msg}");
    }
}

/// The barrier after each level of `squared_sum`'s (unrolled) shared-memory tree dropped: a warp reads
/// `red[tid + s]` before the warp owning it has folded the previous level into it, so the
/// partial sums come back too small. (The emulator's warp schedule is deterministic, so the result
/// is too.)
#[test]
fn dropped_barrier_in_the_reduction_tree_is_a_mismatch() {
    let run = run_corrupted("tests/spelled_out/grad_clip.kir", None, |ptx| {
        (0..10).fold(ptx.to_string(), |p, level| {
            let label: &'static str = Box::leak(format!("$L__sync${level}:").into_boxed_str());
            drop_after("squared_sum", label, "bar.sync 0;")(&p)
        })
    });
    for (msg, len) in run.failing(&[SQSUM_33, SQSUM_34]).into_iter().zip([8, 3]) {
        let head =
            format!("buffer `partials` differs from the interpreter (tol exact, derived): {len} elements differ\n");
        assert!(msg.starts_with(&head), "{msg}");
    }

    // The barrier between the stores of the thread values and the tree is redundant for blocks of
    // at most 512 threads (the first level, s = 512, folds nothing and ends with a barrier), so
    // dropping it is rightly not detected.
    let run = run_corrupted(
        "tests/spelled_out/grad_clip.kir",
        None,
        drop_after("squared_sum", "st.shared.f32 [%rd3], %f0;", "bar.sync 0;"),
    );
    assert_eq!(run.failing(&[]), Vec::<&str>::new());
}

/// The barrier between storing `gemm_tiled`'s A and B tiles and reading them dropped: threads read
/// tile slots other warps have not written yet, which start as 0xff bytes (NaN).
#[test]
fn dropped_barrier_before_reading_the_tiles_is_a_mismatch() {
    let run = run_corrupted(
        "kernels/gemm_tiled.kir",
        None,
        drop_after("gemm_tiled", "st.shared.f32 [%rd18], %f2;", "bar.sync 0;"),
    );
    for msg in run.failing(&[GEMM_13, GEMM_14, GEMM_15]) {
        assert!(msg.starts_with("buffer `c` differs from the interpreter (tol exact, derived): "), "{msg}");
        assert!(msg.contains(", got NaN("), "{msg}");
    }
}
