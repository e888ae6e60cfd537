//! No register-to-register `mov`s for vector elements where none is needed (`kir_backend_ptx::assign`):
//! - the elements of a loaded vector are read in place by their `extract`s, and a `vec` of
//!   computed scalars is stored from the scalars' registers (the quad of relu_backward_v4.kir:
//!   no `mov` at all, as written and after the default pipeline);
//! - `ldmatrix` results feed `mma` through `extract` + `vec.v2` without copies, the accumulators
//!   carried by a loop are updated in place, and the epilogue stores their elements with `vec.v2`
//!   straight from the accumulators' registers (the shape of gemm_mma.kir: no `mov` at all);
//! - an `insert` into a vector that dies there names the vector's registers (no `mov`), and a
//!   `vec` of one constant four times is one `mov`;
//! - and where a copy is needed it stays: an `extract` still live after an in-place `insert`
//!   overwrites its element is copied out first, and elements rotated through `extract` + `vec`
//!   on a loop's back edge move through one temporary.
//!
//! Every kernel is also assembled by ptxas for sm_80 and sm_90 (skipped without ptxas, failing
//! with CI=true). What vector code computes is checked in the PTX emulator by the workspace's
//! tests/ptx_emu_vectors.rs and by `kir test kernels/`; these tests check the emitted form.

use kir_backend_ptx::{emit_module, tools, PtxOptions, SmVersion};

/// The PTX of `src` for `sm`, after `pipeline` (`""`: as written), without comments.
fn emit(src: &str, pipeline: &str, sm: SmVersion) -> String {
    let mut m = kir_ir::parse(src).unwrap_or_else(|d| panic!("parse: {d:?}\n{src}"));
    let p = kir_passes::parse_pipeline(pipeline).unwrap_or_else(|e| panic!("{e}"));
    kir_passes::run_pipeline_in_place(&mut m, &p, &kir_passes::RunConfig::default(), &mut std::io::sink())
        .unwrap_or_else(|e| panic!("{pipeline}: {e:?}\n{src}"));
    let m = kir_ir::verify::check(m).unwrap_or_else(|d| panic!("check: {d}\n{src}"));
    emit_module(&m, &PtxOptions { sm, source: None, comments: false })
        .unwrap_or_else(|d| panic!("emission failed: {d:?}\n{src}"))
}

/// The sm_80 PTX of `src` after `pipeline`; ptxas must accept it for sm_80 and sm_90.
fn assembled(src: &str, pipeline: &str) -> String {
    let have_ptxas = tools::require_tool_or_skip("ptxas").is_some();
    for sm in [SmVersion::Sm80, SmVersion::Sm90] {
        let ptx = emit(src, pipeline, sm);
        if have_ptxas {
            tools::run_ptxas(&ptx, sm).unwrap_or_else(|e| panic!("{}: {e}\n{ptx}", sm.name()));
        }
    }
    emit(src, pipeline, SmVersion::Sm80)
}

/// The instruction lines of `ptx` (trimmed, without the `;`).
fn instructions(ptx: &str) -> Vec<&str> {
    ptx.lines().map(str::trim).filter(|l| l.ends_with(';')).map(|l| l.trim_end_matches(';')).collect()
}

/// Whether `t` is a virtual register (`%f12`, `%rd3`; not `%tid.x`, not an immediate).
fn is_reg(t: &str) -> bool {
    let Some(rest) = t.strip_prefix('%') else { return false };
    let digits = rest.trim_start_matches(|c: char| c.is_ascii_lowercase());
    digits.len() < rest.len() && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// The `mov`s of one register to another: (destination, source).
fn reg_moves(ptx: &str) -> Vec<(String, String)> {
    instructions(ptx)
        .into_iter()
        .filter(|l| l.starts_with("mov."))
        .filter_map(|l| {
            let (d, s) = l.split_once(' ')?.1.split_once(", ")?;
            (is_reg(d) && is_reg(s)).then(|| (d.to_string(), s.to_string()))
        })
        .collect()
}

/// The register lists (`{...}`) of an instruction line, in order.
fn lists(line: &str) -> Vec<Vec<&str>> {
    line.split('{').skip(1).map(|r| r.split('}').next().unwrap_or("").split(", ").collect()).collect()
}

fn line<'a>(ptx: &'a str, head: &str) -> &'a str {
    instructions(ptx).into_iter().find(|l| l.starts_with(head)).unwrap_or_else(|| panic!("no `{head}` in\n{ptx}"))
}

const PIPELINES: [&str; 2] = ["", kir_passes::DEFAULT_PIPELINE];

const RELU_QUAD: &str = "
kernel @quad(%x: ptr<global, f32>, %dy: ptr<global, f32>, %dx: ptr<global, f32>) {
entry:
  %t = global_id.x
  %i = shl.u32 %t, 2
  %xv = load.v4 %x[%i]
  %gv = load.v4 %dy[%i]
  %x0 = extract.v4.f32 %xv, 0
  %x1 = extract.v4.f32 %xv, 1
  %x2 = extract.v4.f32 %xv, 2
  %x3 = extract.v4.f32 %xv, 3
  %g0 = extract.v4.f32 %gv, 0
  %g1 = extract.v4.f32 %gv, 1
  %g2 = extract.v4.f32 %gv, 2
  %g3 = extract.v4.f32 %gv, 3
  %p0 = gt.f32 %x0, 0.0
  %p1 = gt.f32 %x1, 0.0
  %p2 = gt.f32 %x2, 0.0
  %p3 = gt.f32 %x3, 0.0
  %r0 = select.f32 %p0, %g0, 0.0
  %r1 = select.f32 %p1, %g1, 0.0
  %r2 = select.f32 %p2, %g2, 0.0
  %r3 = select.f32 %p3, %g3, 0.0
  %r = vec.v4.f32 %r0, %r1, %r2, %r3
  store.v4 %dx[%i], %r
  ret
}
";

#[test]
fn loaded_elements_are_read_in_place_and_built_vectors_stored_from_their_scalars() {
    for pipeline in PIPELINES {
        let ptx = assembled(RELU_QUAD, pipeline);
        assert_eq!(reg_moves(&ptx), [], "`{pipeline}`:\n{ptx}");
        // The compares read the loaded registers; the store lists the selects' results.
        let loaded = &lists(line(&ptx, "ld.global.v4.f32"))[0];
        let stored = &lists(line(&ptx, "st.global.v4.f32"))[0];
        let sels: Vec<&str> =
            instructions(&ptx).into_iter().filter_map(|l| l.strip_prefix("selp.f32 ")?.split(',').next()).collect();
        assert_eq!(stored, &sels, "`{pipeline}`:\n{ptx}");
        let setps: Vec<&str> =
            instructions(&ptx).into_iter().filter_map(|l| l.strip_prefix("setp.gt.f32 ")?.split(", ").nth(1)).collect();
        assert_eq!(&setps, loaded, "`{pipeline}`:\n{ptx}");
    }
}

/// gemm_mma.kir's inner loop and epilogue on a smaller scale: two accumulators carried by a loop
/// with a run-time trip count, B fragments of two n-tiles from one `ldmatrix.x4.trans`.
const MMA_LOOP: &str = "
kernel @mma_loop(%c: ptr<global, f32>, %n: u32) {
  shared @sa: f16[1024] align 16
  shared @sb: f16[1024] align 16
entry:
  %lane = laneid
  %sap = addr @sa
  %sbp = addr @sb
  %l8 = shl.u32 %lane, 3
  %lc = shl.u32 %lane, 2
  %c0 = load.v4 %c[%lc]
  %lc1 = add.u32 %lc, 128
  %c1 = load.v4 %c[%lc1]
  jmp k(0, %c0, %c1)
k(%s: u32, %d0: vec<4, f32>, %d1: vec<4, f32>):
  %more = lt.u32 %s, %n
  br %more, body, done
body:
  %fa = ldmatrix.x4 %sap[%l8]
  %fb = ldmatrix.x4.trans %sbp[%l8]
  %u0 = extract.v4.u32 %fb, 0
  %u1 = extract.v4.u32 %fb, 1
  %u2 = extract.v4.u32 %fb, 2
  %u3 = extract.v4.u32 %fb, 3
  %fb0 = vec.v2.u32 %u0, %u1
  %fb1 = vec.v2.u32 %u2, %u3
  %e0 = mma.m16n8k16.f16 %fa, %fb0, %d0
  %e1 = mma.m16n8k16.f16 %fa, %fb1, %d1
  %s1 = add.u32 %s, 1
  jmp k(%s1, %e0, %e1)
done:
  %v0 = extract.v4.f32 %d0, 0
  %v1 = extract.v4.f32 %d0, 1
  %v2 = extract.v4.f32 %d0, 2
  %v3 = extract.v4.f32 %d0, 3
  %lo = vec.v2.f32 %v0, %v1
  store.v2 %c[%lc], %lo
  %hi = vec.v2.f32 %v2, %v3
  %lc2 = add.u32 %lc, 2
  store.v2 %c[%lc2], %hi
  %w1 = extract.v4.f32 %d1, 1
  %w0 = extract.v4.f32 %d1, 0
  %sw = vec.v2.f32 %w1, %w0
  store.v2 %c[%lc1], %sw
  ret
}
";

#[test]
fn mma_fragments_and_accumulators_need_no_moves() {
    for pipeline in PIPELINES {
        let ptx = assembled(MMA_LOOP, pipeline);
        assert_eq!(reg_moves(&ptx), [], "`{pipeline}`:\n{ptx}");
        let ins = instructions(&ptx);
        let fb = &lists(line(&ptx, "ldmatrix.sync.aligned.m8n8.x4.trans"))[0];
        let mmas: Vec<Vec<Vec<&str>>> = ins.iter().filter(|l| l.starts_with("mma.sync")).map(|l| lists(l)).collect();
        assert_eq!(mmas.len(), 2, "`{pipeline}`:\n{ptx}");
        for (m, b) in mmas.iter().zip([&fb[..2], &fb[2..]]) {
            assert_eq!(m[2], b, "B is the ldmatrix's registers: `{pipeline}`:\n{ptx}");
            assert_eq!(m[0], m[3], "the accumulator is updated in place: `{pipeline}`:\n{ptx}");
        }
        // The epilogue stores the accumulators' registers, in the order asked.
        let stores: Vec<Vec<&str>> =
            ins.iter().filter(|l| l.starts_with("st.global.v2.f32")).map(|l| lists(l).remove(0)).collect();
        let (d0, d1) = (&mmas[0][0], &mmas[1][0]);
        assert_eq!(stores, [vec![d0[0], d0[1]], vec![d0[2], d0[3]], vec![d1[1], d1[0]]], "`{pipeline}`:\n{ptx}");
    }
}

const INSERTS: &str = "
kernel @inserts(%p: ptr<global, f32>, %q: ptr<global, f32>) {
entry:
  %i = global_id.x
  %i4 = shl.u32 %i, 2
  %v = load.v4 %p[%i4]
  %x = load %q[%i]
  %w = insert.v4.f32 %v, 2, %x
  store.v4 %p[%i4], %w
  %z = vec.v4.f32 0.0, 0.0, 0.0, 0.0
  store.v4 %q[%i4], %z
  ret
}
";

#[test]
fn inserts_name_their_sources_and_a_repeated_constant_is_one_register() {
    let ptx = assembled(INSERTS, "");
    assert_eq!(reg_moves(&ptx), [], "{ptx}");
    let v = &lists(line(&ptx, "ld.global.v4.f32"))[0];
    let x = line(&ptx, "ld.global.f32 ").split(' ').nth(1).unwrap().trim_end_matches(',');
    let stores: Vec<&str> = instructions(&ptx).into_iter().filter(|l| l.starts_with("st.global.v4.f32")).collect();
    assert_eq!(lists(stores[0])[0], [v[0], v[1], x, v[3]], "{ptx}");
    let zero = &lists(stores[1])[0];
    assert!(zero.iter().all(|r| r == &zero[0]), "{ptx}");
    let imm_movs = instructions(&ptx).into_iter().filter(|l| l.starts_with("mov.f32") && l.ends_with("0f00000000"));
    assert_eq!(imm_movs.count(), 1, "{ptx}");
}

/// `%x0` is read after the `insert` that shares `%p`'s registers (a latch argument) overwrote
/// element 0, so it needs a copy; `%x1` is read after it too, but the `insert` leaves element 1
/// where it is, so it needs none.
const LIVE_PAST_INSERT: &str = "
kernel @live(%x: ptr<global, u32>, %out: ptr<global, u32>, %n: u32) {
entry:
  %i = global_id.x
  %i2 = shl.u32 %i, 1
  %v = load.v2 %x[%i2]
  jmp head(0, %v, 0)
head(%k: u32, %p: vec<2, u32>, %acc: u32):
  %more = lt.u32 %k, %n
  br %more, body, done
body:
  %x0 = extract.v2.u32 %p, 0
  %x1 = extract.v2.u32 %p, 1
  %w = insert.v2.u32 %p, 0, %k
  %y = add.u32 %x0, %acc
  %y3 = mad.u32 %y, 3, %x1
  %k1 = add.u32 %k, 1
  jmp head(%k1, %w, %y3)
done:
  store.v2 %out[%i2], %p
  ret
}
";

#[test]
fn an_extract_live_past_the_write_of_its_element_is_copied_first() {
    let ptx = assembled(LIVE_PAST_INSERT, "");
    let ins = instructions(&ptx);
    let p = &lists(line(&ptx, "ld.global.v2.u32"))[0];
    // Element 0 is saved, then overwritten by the insert (the counter); element 1 is read in place.
    let moves = reg_moves(&ptx);
    let (saved, _) = moves.iter().find(|(_, s)| s == p[0]).unwrap_or_else(|| panic!("no copy of {}:\n{ptx}", p[0]));
    let at = |l: &str| ins.iter().position(|i| *i == l).unwrap();
    let save = at(&format!("mov.b32 {saved}, {}", p[0]));
    let overwrite = ins.iter().position(|l| l.starts_with(&format!("mov.b32 {}, ", p[0]))).expect("the insert");
    assert!(save < overwrite, "{ptx}");
    let add = ins.iter().find(|l| l.starts_with("add.u32") && l.contains(saved.as_str())).expect("x0 + acc");
    assert!(!add.contains(&format!("{},", p[0])), "{ptx}");
    let mad = line(&ptx, "mad.lo.u32");
    assert!(mad.ends_with(&format!(", {}", p[1])), "{ptx}");
    assert_eq!(moves.len(), 2, "{ptx}");
}

const ROTATE: &str = "
kernel @rotate(%x: ptr<global, u32>, %n: u32) {
entry:
  %i = global_id.x
  %i2 = shl.u32 %i, 1
  %v = load.v2 %x[%i2]
  jmp head(0, %v)
head(%k: u32, %p: vec<2, u32>):
  %more = lt.u32 %k, %n
  br %more, body, done
body:
  %a = extract.v2.u32 %p, 0
  %b = extract.v2.u32 %p, 1
  %s = vec.v2.u32 %b, %a
  %k1 = add.u32 %k, 1
  jmp head(%k1, %s)
done:
  store.v2 %x[%i2], %p
  ret
}
";

#[test]
fn elements_swapped_on_a_back_edge_move_through_one_temporary() {
    let ptx = assembled(ROTATE, "");
    let p = &lists(line(&ptx, "ld.global.v2.u32"))[0];
    let moves = reg_moves(&ptx);
    assert_eq!(moves.len(), 3, "{ptx}");
    let t = &moves[0].0;
    assert!(!p.contains(&t.as_str()), "{ptx}");
    let expect = [(t.clone(), p[0].to_string()), (p[0].to_string(), p[1].to_string()), (p[1].to_string(), t.clone())];
    assert!(
        moves == expect
            || moves
                == [(t.clone(), p[1].to_string()), (p[1].to_string(), p[0].to_string()), (p[0].to_string(), t.clone())],
        "{moves:?}\n{ptx}"
    );
}
