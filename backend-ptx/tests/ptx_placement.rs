//! Where the emitter places the code that is not one kir instruction: a global pointer
//! parameter's `cvta.to.global` (in the block that dominates its uses, outside every loop, so
//! threads that leave early do not convert pointers they never use) and the zero guard of an
//! integer divisor (`setp`, the division by the divisor as it is, `selp` of all ones: PTX gives an
//! unspecified value for a zero divisor, so no substitute divisor is needed; signed `MIN / -1`
//! divides by 1), and a special register that `global_id` and the kernel both read (one `mov`).

use kir_backend_ptx::{emit_module, PtxOptions, SmVersion};

fn ptx(src: &str) -> String {
    let m = kir_ir::verify::check(kir_ir::parse(src).expect("parses")).unwrap_or_else(|d| panic!("{d}"));
    let opts = PtxOptions { sm: SmVersion::Sm80, source: None, comments: false };
    emit_module(&m, &opts).unwrap_or_else(|d| panic!("{d:?}"))
}

/// The lines of the body from label `label:` up to the next label.
fn block<'p>(ptx: &'p str, label: &str) -> Vec<&'p str> {
    let mut lines = ptx.lines().skip_while(|l| *l != format!("$L__{label}:"));
    assert!(lines.next().is_some(), "no block {label} in\n{ptx}");
    lines.take_while(|l| !l.starts_with("$L__")).map(str::trim).collect()
}

/// The lines before the entry label (parameter loads).
fn prologue(ptx: &str) -> Vec<&str> {
    let body = ptx.lines().skip_while(|l| !l.starts_with("\tld.param"));
    body.take_while(|l| !l.starts_with("$L__")).map(str::trim).collect()
}

const GUARDED: &str = "kernel @k(%x: ptr<global, f32>, %y: ptr<global, f32>, %n: u32) {
entry:
  %i = global_id.x
  %inb = lt.u32 %i, %n
  br %inb, body, exit
body:
  %v = load %x[%i]
  store %y[%i], %v
  jmp exit
exit:
  ret
}
";

#[test]
fn early_exit_threads_do_not_convert_pointers() {
    let p = ptx(GUARDED);
    assert!(!prologue(&p).iter().any(|l| l.starts_with("cvta")), "{p}");
    let body = block(&p, "body");
    assert!(body[0].starts_with("cvta.to.global.u64") && body[1].starts_with("cvta.to.global.u64"), "{p}");
    assert_eq!(p.matches("cvta.to.global").count(), 2, "{p}");
}

#[test]
fn a_pointer_used_in_the_entry_block_is_converted_there() {
    let src = "kernel @k(%x: ptr<global, f32>, %n: u32) {
entry:
  %v = load %x[0]
  %inb = lt.u32 %n, 4
  br %inb, body, exit
body:
  store %x[%n], %v
  jmp exit
exit:
  ret
}
";
    let p = ptx(src);
    assert!(prologue(&p).iter().any(|l| l.starts_with("cvta.to.global.u64")), "{p}");
    assert_eq!(p.matches("cvta.to.global").count(), 1, "{p}");
}

#[test]
fn a_pointer_used_in_a_loop_is_converted_before_the_loop() {
    let src = "kernel @k(%x: ptr<global, f32>, %n: u32) {
entry:
  %t = tid.x
  %inb = lt.u32 %t, 1
  br %inb, pre, exit
pre:
  jmp head(0)
head(%j: u32):
  %more = lt.u32 %j, %n
  br %more, step, exit
step:
  store %x[%j], 1.0
  %j.next = add.u32 %j, 1
  jmp head(%j.next)
exit:
  ret
}
";
    let p = ptx(src);
    let pre = block(&p, "pre");
    assert!(pre.iter().any(|l| l.starts_with("cvta.to.global.u64")), "{p}");
    assert_eq!(p.matches("cvta.to.global").count(), 1, "{p}");
}

#[test]
fn uses_in_two_branches_meet_at_their_common_dominator() {
    let src = "kernel @k(%x: ptr<global, u32>, %n: u32) {
entry:
  %t = tid.x
  %inb = lt.u32 %t, %n
  br %inb, split, exit
split:
  %odd = and.u32 %t, 1
  %is = eq.u32 %odd, 1
  br %is, a, b
a:
  store %x[%t], 1
  jmp exit
b:
  store %x[%t], 2
  jmp exit
exit:
  ret
}
";
    let p = ptx(src);
    assert!(block(&p, "split").iter().any(|l| l.starts_with("cvta.to.global.u64")), "{p}");
    assert_eq!(p.matches("cvta.to.global").count(), 1, "{p}");
}

#[test]
fn an_unused_pointer_is_not_loaded() {
    let src = "kernel @k(%unused: ptr<global, f32>, %x: ptr<global, f32>) {
entry:
  store %x[0], 1.0
  ret
}
";
    let p = ptx(src);
    assert!(!p.contains("[k_param_0]"), "{p}");
    assert!(p.contains(".param .u64 k_param_0"), "the parameter is still declared:\n{p}");
    assert!(p.contains("ld.param.u64 %rd") && p.contains("[k_param_1]"), "{p}");
}

fn divrem_lines(p: &str) -> Vec<&str> {
    let entry = block(p, "entry");
    let from = entry.iter().position(|l| l.starts_with("setp.eq")).unwrap_or_else(|| panic!("no guard in\n{p}"));
    let to = entry.iter().position(|l| l.starts_with("st.global")).unwrap_or_else(|| panic!("no store in\n{p}"));
    entry[from..to].to_vec()
}

#[test]
fn an_unsigned_division_divides_by_the_divisor_itself_and_selects_all_ones_for_zero() {
    let src = "kernel @k(%out: ptr<global, u32>, %a: u32, %b: u32) {
entry:
  %q = div.u32 %a, %b
  store %out[0], %q
  ret
}
";
    let p = ptx(src);
    let lines = divrem_lines(&p);
    assert_eq!(lines.len(), 3, "setp, div, selp:\n{p}");
    assert!(lines[0].starts_with("setp.eq.u32 %p") && lines[0].ends_with(", 0;"), "{p}");
    let div: Vec<&str> = lines[1].trim_end_matches(';').split([' ', ',']).filter(|s| !s.is_empty()).collect();
    assert_eq!(div[0], "div.u32", "{p}");
    assert!(div[2].starts_with("%r") && div[3].starts_with("%r"), "{p}");
    assert!(lines[2].starts_with("selp.b32") && lines[2].contains("0xFFFFFFFF"), "{p}");
    // The divisor register is the parameter's own register (no substitute).
    let b_reg = p.lines().find(|l| l.contains("[k_param_2]")).and_then(|l| l.split_whitespace().nth(1)).unwrap();
    assert_eq!(format!("{},", div[3]), b_reg, "{p}");
}

#[test]
fn a_division_and_a_remainder_by_the_same_divisor_share_one_guard() {
    let src = "kernel @k(%out: ptr<global, u32>, %a: u32, %b: u32) {
entry:
  %q = div.u32 %a, %b
  %r = rem.u32 %a, %b
  %s = add.u32 %q, %r
  store %out[0], %s
  ret
}
";
    let p = ptx(src);
    assert_eq!(p.matches("setp.eq.u32").count(), 1, "{p}");
    assert_eq!(p.matches("0xFFFFFFFF").count(), 2, "{p}");
}

#[test]
fn a_signed_division_divides_by_one_where_the_divisor_is_minus_one() {
    let src = "kernel @k(%out: ptr<global, s32>, %a: s32, %b: s32) {
entry:
  %q = div.s32 %a, %b
  store %out[0], %q
  ret
}
";
    let p = ptx(src);
    let lines = divrem_lines(&p);
    assert!(lines[0].starts_with("setp.eq.s32") && lines[0].ends_with(", 0;"), "{p}");
    assert!(lines[1].starts_with("setp.eq.s32") && lines[1].ends_with(", -1;"), "{p}");
    assert!(lines[2].starts_with("selp.b32") && lines[2].contains(", 1, "), "{p}");
    assert!(lines[3].starts_with("div.s32"), "{p}");
    assert!(lines.iter().any(|l| l.starts_with("neg.s32")), "MIN / -1 is -MIN = MIN:\n{p}");
    assert!(lines.last().unwrap().starts_with("selp.b32") && lines.last().unwrap().contains(", -1, "), "{p}");
    assert!(!p.contains("or.pred"), "{p}");
}

#[test]
fn a_special_register_read_by_global_id_and_by_the_kernel_is_read_once() {
    let src = "kernel @k(%x: ptr<global, u32>, %n: u32) {
entry:
  %i = global_id.x
  %nt = ntid.x
  %grid = nctaid.x
  %stride = mul.u32 %nt, %grid
  %v = add.u32 %i, %stride
  store %x[%i], %v
  ret
}
";
    let p = ptx(src);
    assert_eq!(p.matches("%ntid.x").count(), 1, "{p}");
    assert_eq!(p.matches("%nctaid.x").count(), 1, "{p}");
    // The one read comes before the `mad` of `global_id.x`, which uses its register.
    let entry = block(&p, "entry");
    let read = entry.iter().position(|l| l.contains("%ntid.x")).unwrap();
    let mad = entry.iter().position(|l| l.starts_with("mad.lo.s32")).unwrap();
    assert!(read < mad, "{p}");
    let nt_reg = entry[read].split_whitespace().nth(1).unwrap().trim_end_matches(',');
    assert!(entry[mad].contains(nt_reg), "{p}");
    assert!(entry.iter().any(|l| l.starts_with("mul.lo.u32") && l.contains(nt_reg)), "{p}");
}
