//! The verifier on vectors, vector memory, tensor cores and async copies: the rules a user meets
//! (`docs/language.md`, "Vectors, tensor cores and async copies"), each with the message they read.

use kir_ir::verify::check;

/// Every error message (with its notes) of checking `src`: parse, verify, barrier verification.
fn errors(src: &str) -> Vec<String> {
    let m = match kir_ir::parse(src) {
        Ok(m) => m,
        Err(d) => return d.iter().map(|d| format!("{} [{}]", d.message, d.notes.join("; "))).collect(),
    };
    match check(m) {
        Ok(_) => vec![],
        Err(d) => Vec::<kir_ir::diag::Diagnostic>::from(d)
            .iter()
            .filter(|d| d.is_error())
            .map(|d| format!("{} [{}]", d.message, d.notes.join("; ")))
            .collect(),
    }
}

#[track_caller]
fn assert_error(src: &str, needle: &str) {
    let e = errors(src);
    assert!(e.iter().any(|m| m.contains(needle)), "expected an error containing {needle:?}, got {e:#?}\n{src}");
}

#[track_caller]
fn assert_clean(src: &str) {
    let e = errors(src);
    assert!(e.is_empty(), "expected no errors, got {e:#?}\n{src}");
}

/// A kernel with the usual parameters around `body` (one block, `ret` appended).
fn kernel(body: &str) -> String {
    format!(
        "kernel @k(%x: ptr<global, f32>, %y: ptr<global, f32>, %h: ptr<global, f16>, %u: ptr<global, u32>, %n: u32) {{\n  shared @t: f16[1024] align 16\n  shared @t4: f16[64] align 4\nentry:\n{body}\n  ret\n}}\n"
    )
}

#[test]
fn every_new_op_in_a_valid_kernel() {
    assert_clean(&kernel(
        "  %i = global_id.x\n  %j = shl.u32 %i, 2\n  %v = load.v4 %x[%j]\n  %e = extract.v4.f32 %v, 3\n  %w = insert.v4.f32 %v, 0, %e\n  store.v4 %y[%j], %w\n  %v2 = load.v2 %x[%j]\n  store.v2 %y[%j], %v2\n  %p = addr @t\n  %l = laneid\n  %r = shl.u32 %l, 3\n  %fa = ldmatrix.x4 %p[%r]\n  %fb = ldmatrix.x2.trans %p[%r]\n  %f1 = ldmatrix.x1 %p[%r]\n  %z = vec.v4.f32 0.0, 0.0, 0.0, 0.0\n  %d = mma.m16n8k16.f16 %fa, %fb, %z\n  %d2 = mma.m16n8k16.bf16 %fa, %fb, %d\n  %d3 = mma.m16n8k8.tf32 %fa, %fb, %d2\n  store.v4 %y[%j], %d3\n  cp.async.16 %p[%r], %h[%r], 16\n  cp.async.8 %p[%r], %h[%r], %n\n  cp.async.4 %p[%r], %h[%r], 0\n  cp.async.commit\n  cp.async.wait 0\n  barrier",
    ));
}

#[test]
fn vector_types_are_checked() {
    assert_error(
        "kernel @k(%x: ptr<global, f64>) {\nentry:\n  %v = load.v4 %x[0]\n  ret\n}\n",
        "is 256 bits; vectors are at most 128 bits",
    );
    assert_error("kernel @k(%v: vec<4, f32>) {\nentry:\n  ret\n}\n", "kernel parameters cannot be vectors");
    assert_error(
        "kernel @k() {\nentry:\n  jmp b(0)\nb(%v: vec<3, f32>):\n  ret\n}\n",
        "a vector has 2 or 4 elements, not 3",
    );
    assert_error(
        "kernel @k() {\nentry:\n  %v = vec.v4.pred true, true, true, true\n  ret\n}\n",
        "vectors of `pred` are not allowed",
    );
}

#[test]
fn lanes_are_constants_in_range() {
    assert_error(
        &kernel("  %v = load.v4 %x[0]\n  %e = extract.v4.f32 %v, 4"),
        "`extract.v4.f32` has lane 4, but a `v4` vector has lanes 0 to 3",
    );
    assert_error(
        &kernel("  %v = load.v4 %x[0]\n  %e = extract.v4.f32 %v, %n"),
        "the lane of `extract.v4.f32` must be a constant, but `%n` is a value",
    );
}

#[test]
fn stored_vectors_must_match_the_pointer() {
    assert_error(
        &kernel("  %v = load.v4 %x[0]\n  store.v2 %y[0], %v"),
        "`store.v2` through a `ptr<global, f32>` stores a `vec<2, f32>`, but `%v` has type `vec<4, f32>`",
    );
}

#[test]
fn static_misalignment_is_rejected() {
    assert_error(
        &kernel("  %v = load.v4 %x[2]"),
        "misaligned `load.v4`: index 2 is byte offset 8 from the pointer, not a multiple of the 16-byte access",
    );
    assert_error(
        &kernel("  %p = addr @t4\n  %l = laneid\n  %r = ldmatrix.x1 %p[%l]"),
        "misaligned `ldmatrix.x1`: `@t4` is aligned to 4 bytes, but the access needs 16",
    );
    assert_error(
        &kernel("  %p = addr @t\n  cp.async.16 %p[4], %h[0], 16"),
        "misaligned `cp.async.16`: index 4 is byte offset 8",
    );
}

#[test]
fn ldmatrix_reads_16_bit_shared_rows() {
    assert_error(
        &kernel("  %l = laneid\n  %r = ldmatrix.x4 %h[%l]"),
        "`ldmatrix.x4` reads rows of 16-bit elements from shared memory, but its address has type `ptr<global, f16>`",
    );
}

#[test]
fn async_copies_go_from_global_to_shared() {
    assert_error(
        &kernel("  %p = addr @t\n  cp.async.16 %h[0], %p[0], 16"),
        "`cp.async.16` copies from global to shared memory, but its destination points to global memory",
    );
    assert_error(
        &kernel("  %p = addr @t\n  cp.async.8 %p[0], %h[0], 9"),
        "`cp.async.8` copies 8 bytes, but its source size is 9",
    );
    assert_error(&kernel("  cp.async.wait %n"), "`cp.async.wait` takes a constant number of groups");
}

#[test]
fn fragments_have_the_ptx_types() {
    assert_error(
        &kernel("  %a = load.v4 %x[0]\n  %b = load.v2 %u[0]\n  %d = mma.m16n8k16.f16 %a, %b, %a"),
        "type mismatch: operand 1 of `mma.m16n8k16.f16` must be `vec<4, u32>`, but `%a` has type `vec<4, f32>`",
    );
}

#[test]
fn mma_under_divergence_is_rejected_like_a_full_mask_collective() {
    let src = "kernel @k(%u: ptr<global, u32>, %x: ptr<global, f32>) {\nentry:\n  %l = laneid\n  %c = lt.u32 %l, 16\n  br %c, then, done\nthen:\n  %a = load.v4 %u[0]\n  %b = load.v2 %u[0]\n  %z = load.v4 %x[0]\n  %d = mma.m16n8k16.f16 %a, %b, %z\n  store.v4 %x[0], %d\n  jmp done\ndone:\n  ret\n}\n";
    let e = errors(src);
    assert!(
        e.iter().any(|m| m.starts_with("`mma.m16n8k16.f16` must be executed by all 32 lanes of the warp together")
            && m.contains("every `mma` and `ldmatrix`")),
        "{e:#?}"
    );
    // The same mma outside the branch is fine.
    assert_clean(&src.replace("  br %c, then, done\nthen:\n", "  jmp then\nthen:\n"));
}

#[test]
fn mma_needs_whole_warps() {
    let m = kir_ir::parse("kernel @k(%u: ptr<global, u32>, %x: ptr<global, f32>) {\nentry:\n  %a = load.v4 %u[0]\n  %b = load.v2 %u[0]\n  %z = load.v4 %x[0]\n  %d = mma.m16n8k16.f16 %a, %b, %z\n  store.v4 %x[0], %d\n  ret\n}\n").unwrap();
    let k = &m.kernels[0];
    let v = kir_ir::analysis::warps::whole_warps_violation(&m.funcs, k, [48, 1, 1]).expect("a violation");
    assert_eq!(
        v.message(k, [48, 1, 1]),
        "kernel @k needs whole warps: its `mma.m16n8k16.f16` needs all 32 lanes of a warp, but block (48, 1, 1) has 48 threads, so warp 1 has only 16 lanes"
    );
    assert!(kir_ir::analysis::warps::whole_warps_violation(&m.funcs, k, [64, 1, 1]).is_none());
}

#[test]
fn printing_round_trips_the_new_syntax() {
    let src = kernel("  %p = addr @t\n  %l = laneid\n  %fa = ldmatrix.x4.trans %p[%l]\n  cp.async.16 %p[%l], %h[%l], 16\n  cp.async.commit\n  cp.async.wait 1\n  %v = load.v2 %x[%l]\n  %b = vec.v2.f32 1.0, 2.0\n  store.v2 %y[%l], %b");
    let m = kir_ir::parse(&src).unwrap();
    let printed = kir_ir::print_module(&m);
    for needle in [
        "ldmatrix.x4.trans %p[%l]",
        "cp.async.16 %p[%l], %h[%l], 16",
        "cp.async.wait 1",
        "%v = load.v2 %x[%l]",
        "vec.v2.f32 1.0, 2.0",
    ] {
        assert!(printed.contains(needle), "{needle}: {printed}");
    }
    assert!(kir_ir::parse(&printed).unwrap().structurally_eq(&m));
}
