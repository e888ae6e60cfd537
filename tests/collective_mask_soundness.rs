//! Soundness of member-mask verification (issue 31) against the interpreter, on generated kernels.
//!
//! [`KERNELS`] kernels are built as `.kir` text around what decides whether a `shfl` / `vote` with
//! a member mask other than `0xffffffff` is well defined: up to three nested gates choosing which
//! lanes reach it (comparisons of `laneid` with constants, even lanes, `laneid` against a uniform
//! parameter, bit `laneid` of a uniform mask parameter, data-dependent predicates, `tid.x`, warp-
//! uniform `warpid` tests), early `ret`s, member masks that are constants (often exactly the gate's
//! lanes, sometimes not), a uniform parameter, or a ballot of the gate's predicate (before the gate,
//! or before a further divergent gate), shuffles of every mode with constant, lane-computed,
//! uniform or data-dependent deltas, and, for a third of the kernels, `reqntid` with partial last
//! warps. A fifth of them also load a length prefix from global memory (`%in[0]`) and loop that
//! many times around a barrier while writing `%in` at `1 + i` (provably elsewhere), at `i`
//! (conflicting), or not at all. Each kernel is launched [`LAUNCHES`] times: block sizes that are
//! and are not multiples of 32 (exactly the `reqntid` shape when declared), random parameters.
//!
//! Checked:
//! - Soundness: no accepted kernel's launch reports barrier divergence or a divergent warp
//!   collective. A launch the interpreter refuses as invalid (the whole-warps precondition) is
//!   not a fault; an accepted kernel refused for any other reason is a failure of the test.
//! - The property is not vacuous: many kernels with non-full masks are accepted and do run, and
//!   many rejected ones fault in the interpreter.
//! - Runs in about two seconds in the test profile.

use kir_interp::{Arg, Buffer, ErrorKind, FaultKind, LaunchConfig, Options};
use kir_ir::generate::Rng;
use kir_ir::{Constant, ScalarType};
mod verified_launch;
use verified_launch::launch;

/// Kernels checked.
const KERNELS: u64 = 4000;
/// Launches per kernel.
const LAUNCHES: u64 = 4;

/// One generated kernel: its text, whether it declares `reqntid` (the shape), whether it has a
/// collective with a mask other than the full one.
struct Gen {
    src: String,
    reqntid: Option<u32>,
    partial_mask: bool,
}

/// A gate: the condition text (defining `%cN`) and, when the lanes it admits are a function of
/// the lane alone, that set.
fn gate(rng: &mut Rng, n: usize, lines: &mut Vec<String>) -> Option<u32> {
    let c = format!("%c{n}");
    match rng.below(8) {
        0 => {
            let k = rng.below(34) as u32;
            lines.push(format!("  {c} = lt.u32 %l, {k}"));
            Some(if k >= 32 { u32::MAX } else { (1u32 << k).wrapping_sub(1) })
        }
        1 => {
            let k = rng.below(33) as u32;
            lines.push(format!("  {c} = ge.u32 %l, {k}"));
            Some(if k >= 32 { 0 } else { !((1u32 << k).wrapping_sub(1)) })
        }
        2 => {
            lines.push(format!("  %e{n} = and.u32 %l, 1\n  {c} = eq.u32 %e{n}, 0"));
            Some(0x5555_5555)
        }
        3 => {
            lines.push(format!("  {c} = lt.u32 %l, %p"));
            None
        }
        4 => {
            lines.push(format!("  %sh{n} = shr.u32 %m, %l\n  %bt{n} = and.u32 %sh{n}, 1\n  {c} = ne.u32 %bt{n}, 0"));
            None
        }
        5 => {
            let k = rng.below(8);
            lines.push(format!("  {c} = lt.u32 %v, {k}"));
            None
        }
        6 => {
            let k = rng.below(100);
            lines.push(format!("  {c} = lt.u32 %t, {k}"));
            None
        }
        _ => {
            lines.push(format!("  {c} = ne.u32 %w, 0"));
            None
        }
    }
}

fn generate(seed: u64) -> Gen {
    let mut rng = Rng::new(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x3A5C);
    let reqntid = if rng.below(3) == 0 { Some([20u32, 32, 48, 64, 100, 96][rng.below(6) as usize]) } else { None };
    let mut lines: Vec<String> = vec![];
    let attr = reqntid.map(|r| format!(" reqntid({r})")).unwrap_or_default();
    lines.push(format!(
        "kernel @k(%in: ptr<global, u32>, %out: ptr<global, u32>, %n: u32, %m: u32, %p: u32, %d: u32){attr} {{"
    ));
    let prefix = rng.below(5) == 0;
    if prefix {
        lines.push("  shared @s: u32[128]".into());
    }
    lines.push("entry:".into());
    lines.push("  %t = tid.x\n  %l = laneid\n  %w = warpid\n  %g = global_id.x\n  %gi = rem.u32 %g, %n".into());
    lines.push("  %v = load %in[%gi]".into());
    let mut block = 0;
    let mut fresh = |prefix: &str| {
        block += 1;
        format!("{prefix}{block}")
    };
    if prefix {
        // A length prefix read by every thread, a loop around a barrier that many times.
        let write = rng.below(3);
        let head = fresh("hd");
        let body = fresh("bd");
        let after = fresh("af");
        lines.push("  %hdr0 = load %in[0]\n  %hdr = and.u32 %hdr0, 3".into());
        match write {
            0 => lines.push("  %wi = cvt.u64.u32 %g\n  %wj = add.u64 %wi, 1\n  store %in[%wj], %t".into()),
            1 => lines.push("  %wi = cvt.u64.u32 %g\n  store %in[%wi], %t".into()),
            _ => {}
        }
        lines.push(format!("  jmp {head}(0)"));
        lines.push(format!("{head}(%it: u32):\n  %more = lt.u32 %it, %hdr\n  br %more, {body}, {after}"));
        lines.push(format!(
            "{body}:\n  %sp = addr @s\n  %ts = rem.u32 %t, 128\n  store %sp[%ts], %it\n  barrier\n  %it1 = add.u32 %it, 1\n  jmp {head}(%it1)"
        ));
        lines.push(format!("{after}:"));
    }
    // A ballot of a data predicate, taken by all lanes, possibly used as a mask later.
    lines.push("  %bp = lt.u32 %v, 4\n  %bal = vote.ballot %bp, 0xffffffff".into());
    let mut admitted: Option<u32> = Some(u32::MAX);
    let mut joins: Vec<String> = vec![];
    let mut ballot_gate = false;
    let gates = rng.below(4) as usize;
    for n in 0..gates {
        if rng.below(6) == 0 {
            // Early exit for the lanes that fail a gate.
            let c = gate(&mut rng, 10 + n, &mut lines);
            let go = fresh("go");
            let out = fresh("ex");
            lines.push(format!("  br %c{}, {go}, {out}\n{out}:\n  ret\n{go}:", 10 + n));
            admitted = match (admitted, c) {
                (Some(a), Some(c)) => Some(a & c),
                _ => None,
            };
            continue;
        }
        let use_ballot = n == 0 && rng.below(3) == 0;
        let c = if use_ballot {
            lines.push(format!("  %c{n} = mov.pred %bp"));
            ballot_gate = true;
            None
        } else {
            gate(&mut rng, n, &mut lines)
        };
        let inside = fresh("in");
        let join = fresh("jn");
        lines.push(format!("  br %c{n}, {inside}, {join}\n{inside}:"));
        joins.push(join);
        admitted = match (admitted, c) {
            (Some(a), Some(c)) => Some(a & c),
            _ => None,
        };
    }
    // The member mask.
    let mask = match rng.below(7) {
        0..=2 => format!("{:#010x}", admitted.unwrap_or(u32::MAX)),
        3 => ["0x0000ffff", "0xffff0000", "0x55555555", "0xffffffff", "0x0000000f"][rng.below(5) as usize].to_string(),
        4 => "%m".into(),
        5 if ballot_gate || rng.below(2) == 0 => "%bal".into(),
        _ => format!("{:#010x}", admitted.unwrap_or(0xffff)),
    };
    let partial_mask = mask != "0xffffffff";
    match rng.below(7) {
        0 => lines.push(format!("  %q = lt.u32 %v, 2\n  %r0 = vote.ballot %q, {mask}")),
        1 => lines.push(format!("  %q = lt.u32 %v, 2\n  %a = vote.any %q, {mask}\n  %r0 = select.u32 %a, 1, 0")),
        2 => lines.push(format!("  %q = lt.u32 %v, 2\n  %a = vote.all %q, {mask}\n  %r0 = select.u32 %a, 1, 0")),
        _ => {
            let mode = ["down", "up", "bfly", "idx"][rng.below(4) as usize];
            let delta = match rng.below(5) {
                0 | 1 => rng.below(32).to_string(),
                2 => "%x1".into(),
                3 => "%d".into(),
                _ => "%v".into(),
            };
            if delta == "%x1" {
                lines.push("  %x1 = xor.u32 %l, 1".into());
            }
            lines.push(format!("  %r0 = shfl.{mode}.u32 %v, {delta}, {mask}"));
        }
    }
    lines.push("  store %out[%gi], %r0".into());
    for join in joins.iter().rev() {
        lines.push(format!("  jmp {join}\n{join}:"));
    }
    lines.push("  ret\n}".into());
    Gen { src: lines.join("\n") + "\n", reqntid, partial_mask }
}

#[test]
fn accepted_mask_kernels_never_diverge() {
    let (mut accepted, mut accepted_partial_ran, mut rejected, mut rejected_faulting, mut refused) = (0, 0, 0, 0, 0);
    let mut unsound = vec![];
    let mut other = vec![];
    for seed in 0..KERNELS {
        let g = generate(seed);
        let m = kir_ir::parse(&g.src).unwrap_or_else(|d| panic!("seed {seed}: does not parse: {d:?}\n{}", g.src));
        let v = kir_ir::verify::verify_module(&m);
        assert!(
            !kir_ir::diag::has_errors(&v),
            "seed {seed}: does not verify: {}\n{}",
            kir_ir::diag::render(&v, "g.kir", &g.src, false),
            g.src
        );
        let k = &m.kernels[0];
        let diags = verify_barriers(k);
        let ok = diags.is_empty();
        if ok {
            accepted += 1;
        } else {
            rejected += 1;
        }
        let mut rng = Rng::new(seed ^ 0x7777);
        let mut faulted = false;
        for _ in 0..LAUNCHES {
            let block = match g.reqntid {
                Some(r) => r,
                None => [32, 64, 96, 48, 20, 100][rng.below(6) as usize],
            };
            let grid = 1 + rng.below(2) as u32;
            let n = block * grid;
            let ins: Vec<u64> = (0..n + 1).map(|_| rng.below(8)).collect();
            let mut buffers = vec![Buffer::from_bits(ScalarType::U32, ins), Buffer::zeros(ScalarType::U32, n as usize)];
            let mparam = match rng.below(3) {
                0 => u32::MAX,
                1 => (1u32 << rng.below(32)).wrapping_sub(1),
                _ => rng.next_u64() as u32,
            };
            let args = [
                Arg::Buffer(0),
                Arg::Buffer(1),
                Arg::Scalar(Constant::u32(n)),
                Arg::Scalar(Constant::u32(mparam)),
                Arg::Scalar(Constant::u32(rng.below(34) as u32)),
                Arg::Scalar(Constant::u32(rng.below(32) as u32)),
            ];
            let opts = Options { fuel: 1 << 22, threads: Some(1), ..Options::default() };
            match launch(k, &LaunchConfig::linear(grid, block), &args, &mut buffers, &opts) {
                Ok(_) => {
                    if ok && g.partial_mask {
                        accepted_partial_ran += 1;
                    }
                }
                Err(e) => match e.kind {
                    ErrorKind::KernelFault(FaultKind::BarrierDivergence | FaultKind::DivergentCollective) => {
                        faulted = true;
                        if ok {
                            unsound.push(format!("seed {seed} grid({grid}) block({block}): {}\n{}", e.message, g.src));
                        }
                    }
                    ErrorKind::InvalidLaunch if e.message.contains("needs whole warps") => refused += 1,
                    _ => other.push(format!("seed {seed}: {:?}: {}\n{}", e.kind, e.message, g.src)),
                },
            }
        }
        if faulted && !ok {
            rejected_faulting += 1;
        }
        if !faulted && !ok && std::env::var_os("KIR_SHOW_IMPRECISE").is_some() {
            eprintln!("rejected, never faulted: seed {seed}: {}\n{}", diags[0].message, g.src);
        }
    }
    eprintln!(
        "{KERNELS} mask kernels, {} launches: {accepted} accepted ({accepted_partial_ran} launches of accepted kernels \
         with a mask other than 0xffffffff ran), {rejected} rejected ({rejected_faulting} of them fault), {refused} \
         launches refused for partial warps",
        KERNELS * LAUNCHES
    );
    assert!(unsound.is_empty(), "{} unsound verdicts; first:\n{}", unsound.len(), unsound[0]);
    assert!(other.is_empty(), "launches failed for other reasons ({}): {}", other.len(), other[0]);
    assert!(accepted_partial_ran > KERNELS as usize / 20, "too few accepted partial-mask runs: {accepted_partial_ran}");
    assert!(rejected_faulting > KERNELS as usize / 10, "too few rejected kernels fault: {rejected_faulting}");
    assert!(refused > 0, "no launch was refused for partial warps");
}

/// Barrier verification of a module (`kir_ir::verify::check_barriers`), following calls.
fn verify_module_barriers(m: &kir_ir::Module) -> Vec<kir_ir::Diagnostic> {
    kir_ir::verify::check_barriers(m, |_| None)
}

/// Barrier verification of a module holding only `k`.
fn verify_barriers(k: &kir_ir::Kernel) -> Vec<kir_ir::Diagnostic> {
    verify_module_barriers(&kir_ir::Module { kernels: vec![k.clone()], ..kir_ir::Module::default() })
}
