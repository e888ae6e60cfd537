//! Device functions (`.func`) and `call`: the PTX calling convention run by the emulator (calls
//! run inlined, see `ptx-emu/src/parse.rs`). Results of functions with and without a result,
//! `.param` slots of every width, divergent `ret` reconverging after the call (checked with a
//! full-warp shuffle after it), barriers and shared memory inside functions, nested calls of a
//! function whose labels are inlined several times, functions defined after their callers, NVRTC's
//! own output, and the errors for what the emulator does not run (recursion, indirect calls,
//! mismatched calls).

use kir_ptx_emu::{launch, Arg, ErrorKind, FaultKind, LaunchConfig, Memory, Module, Options};

const HEADER: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

fn module(body: &str) -> Module {
    let text = format!("{HEADER}{body}");
    Module::parse(&text).unwrap_or_else(|e| panic!("parse error {e}\n{text}"))
}

fn u32s(mem: &Memory, id: kir_ptx_emu::BufferId) -> Vec<u32> {
    mem.bytes(id).unwrap().chunks(4).map(|c| u32::from_le_bytes(c.try_into().unwrap())).collect()
}

fn buf(mem: &mut Memory, name: &str, v: &[u32]) -> kir_ptx_emu::BufferId {
    let b: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    mem.alloc(name, &b).unwrap()
}

fn run(m: &Module, entry: &str, threads: u32, args: &[Arg], mem: &mut Memory) {
    launch(m, entry, &LaunchConfig::linear(1, threads), args, mem, &Options::default())
        .unwrap_or_else(|e| panic!("{e}"));
}

/// `out[t] = half(t) + warp_total` where `half` returns early (divergently) for odd lanes, so the
/// shuffle after the call needs every lane back.
const DIVERGENT_RET: &str = r#"
.func (.param .b32 func_retval0) half(.param .b32 half_param_0)
{
    .reg .pred %p<2>; .reg .b32 %r<4>;
    ld.param.u32 %r1, [half_param_0];
    and.b32 %r2, %r1, 1;
    setp.ne.u32 %p1, %r2, 0;
    @!%p1 bra EVEN;
    st.param.b32 [func_retval0], 1000;
    ret;
EVEN:
    shr.u32 %r3, %r1, 1;
    st.param.b32 [func_retval0], %r3;
    ret;
}
.visible .entry k(.param .u64 out)
{
    .reg .b32 %r<8>; .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    mov.u32 %r1, %tid.x;
    {
    .param .b32 param0;
    st.param.b32 [param0], %r1;
    .param .b32 retval0;
    call.uni (retval0), half, (param0);
    ld.param.b32 %r2, [retval0];
    }
    shfl.sync.bfly.b32 %r3, %r2, 16, 31, -1;
    add.u32 %r4, %r2, %r3;
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r4;
    ret;
}
"#;

#[test]
fn a_divergent_ret_reconverges_after_the_call() {
    let m = module(DIVERGENT_RET);
    let mut mem = Memory::new();
    let out = buf(&mut mem, "out", &[0; 32]);
    run(&m, "k", 32, &[Arg::Buffer(out)], &mut mem);
    let half = |t: u32| if t % 2 == 1 { 1000 } else { t / 2 };
    let want: Vec<u32> = (0..32).map(|t| half(t) + half(t ^ 16)).collect();
    assert_eq!(u32s(&mem, out), want);
}

/// A void function given a shared pointer and a global pointer: it stages a value in shared
/// memory, waits at a barrier and reads its neighbour's. Plus a function touching a module-level
/// `.shared` array directly (as NVRTC's output does).
const SHARED: &str = r#"
.shared .align 4 .b8 counts[4];
.func exchange(.param .b64 s, .param .b64 src, .param .b64 dst, .param .b32 i)
{
    .reg .b32 %r<4>; .reg .b64 %rd<8>; .reg .f32 %f<3>;
    ld.param.u64 %rd1, [s];
    ld.param.u64 %rd2, [src];
    ld.param.u64 %rd3, [dst];
    ld.param.u32 %r1, [i];
    mul.wide.u32 %rd4, %r1, 4;
    add.s64 %rd5, %rd2, %rd4;
    ld.global.f32 %f1, [%rd5];
    add.s64 %rd6, %rd1, %rd4;
    st.shared.f32 [%rd6], %f1;
    bar.sync 0;
    xor.b32 %r2, %r1, 1;
    mul.wide.u32 %rd7, %r2, 4;
    add.s64 %rd7, %rd1, %rd7;
    ld.shared.f32 %f2, [%rd7];
    add.s64 %rd5, %rd3, %rd4;
    st.global.f32 [%rd5], %f2;
    ret;
}
.func bump()
{
    .reg .b32 %r<2>;
    atom.shared.add.u32 %r1, [counts], 1;
    ret;
}
.visible .entry k(.param .u64 x, .param .u64 out, .param .u64 n)
{
    .shared .align 4 .b8 tile[256];
    .reg .pred %p<2>; .reg .b32 %r<4>; .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [x];
    ld.param.u64 %rd2, [out];
    ld.param.u64 %rd5, [n];
    mov.u32 %r1, %tid.x;
    setp.ne.u32 %p1, %r1, 0;
    @%p1 bra GO;
    st.shared.u32 [counts], 0;
GO:
    bar.sync 0;
    mov.u64 %rd3, tile;
    {
    .param .b64 param0;
    st.param.b64 [param0], %rd3;
    .param .b64 param1;
    st.param.b64 [param1], %rd1;
    .param .b64 param2;
    st.param.b64 [param2], %rd2;
    .param .b32 param3;
    st.param.b32 [param3], %r1;
    call.uni exchange, (param0, param1, param2, param3);
    }
    call.uni bump, ();
    bar.sync 0;
    @%p1 bra DONE;
    ld.shared.u32 %r2, [counts];
    st.global.u32 [%rd5], %r2;
DONE:
    ret;
}
"#;

#[test]
fn barriers_and_shared_memory_inside_functions() {
    let m = module(SHARED);
    let mut mem = Memory::new();
    let x: Vec<u32> = (0..64).map(|i| (i as f32).to_bits()).collect();
    let xb = buf(&mut mem, "x", &x);
    let out = buf(&mut mem, "out", &[0; 64]);
    let n = buf(&mut mem, "n", &[0]);
    let s = launch(
        &m,
        "k",
        &LaunchConfig::linear(1, 64),
        &[Arg::Buffer(xb), Arg::Buffer(out), Arg::Buffer(n)],
        &mut mem,
        &Options::default(),
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let want: Vec<u32> = (0..64u32).map(|i| ((i ^ 1) as f32).to_bits()).collect();
    assert_eq!(u32s(&mem, out), want);
    assert_eq!(u32s(&mem, n), [64]);
    assert_eq!(s.barriers, 3);
}

/// Nested calls; `sum_to` has a loop (labels) and is inlined three times; functions are defined
/// after the entry that calls them (prototypes first); narrow and wide `.param` slots.
const NESTED: &str = r#"
.func (.param .b32 func_retval0) twice_sum(.param .b32 a, .param .b32 b);
.func (.param .b64 func_retval0) widen(.param .b32 a, .param .b32 neg);
.visible .entry k(.param .u64 out, .param .u64 wide)
{
    .reg .b32 %r<6>; .reg .b64 %rd<6>; .reg .b16 %rs<2>;
    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd4, [wide];
    mov.u32 %r1, %tid.x;
    {
    .param .b32 param0;
    st.param.b32 [param0], %r1;
    .param .b32 param1;
    st.param.b32 [param1], 3;
    .param .b32 retval0;
    call.uni (retval0), twice_sum, (param0, param1);
    ld.param.b32 %r2, [retval0];
    }
    mul.wide.u32 %rd2, %r1, 4;
    add.s64 %rd3, %rd1, %rd2;
    st.global.u32 [%rd3], %r2;
    cvt.u16.u32 %rs1, %r1;
    {
    .param .b32 param0;
    cvt.s32.s16 %r3, %rs1;
    st.param.b32 [param0], %r3;
    .param .b32 param1;
    st.param.b32 [param1], 1;
    .param .b64 retval0;
    call (retval0), widen, (param0, param1);
    ld.param.b64 %rd5, [retval0];
    }
    mul.wide.u32 %rd2, %r1, 8;
    add.s64 %rd3, %rd4, %rd2;
    st.global.u64 [%rd3], %rd5;
    ret;
}
.func (.param .b32 func_retval0) sum_to(.param .b32 n)
{
    .reg .pred %p<2>; .reg .b32 %r<4>;
    ld.param.u32 %r1, [n];
    mov.u32 %r2, 0;
    mov.u32 %r3, 0;
LOOP:
    setp.gt.u32 %p1, %r3, %r1;
    @%p1 bra DONE;
    add.u32 %r2, %r2, %r3;
    add.u32 %r3, %r3, 1;
    bra.uni LOOP;
DONE:
    st.param.b32 [func_retval0], %r2;
    ret;
}
.func (.param .b32 func_retval0) twice_sum(.param .b32 a, .param .b32 b)
{
    .reg .b32 %r<6>;
    ld.param.u32 %r1, [a];
    ld.param.u32 %r2, [b];
    {
    .param .b32 param0;
    st.param.b32 [param0], %r1;
    .param .b32 retval0;
    call.uni (retval0), sum_to, (param0);
    ld.param.b32 %r3, [retval0];
    }
    {
    .param .b32 param0;
    st.param.b32 [param0], %r2;
    .param .b32 retval0;
    call.uni (retval0), sum_to, (param0);
    ld.param.b32 %r4, [retval0];
    }
    add.u32 %r5, %r3, %r4;
    st.param.b32 [func_retval0], %r5;
    ret;
}
.func (.param .b64 func_retval0) widen(.param .b32 a, .param .b32 neg)
{
    .reg .pred %p<2>; .reg .b16 %rs<2>; .reg .b32 %r<3>; .reg .b64 %rd<3>;
    ld.param.s16 %rs1, [a];
    ld.param.u8 %r1, [neg];
    cvt.s64.s16 %rd1, %rs1;
    setp.ne.u32 %p1, %r1, 0;
    @!%p1 bra POS;
    neg.s64 %rd1, %rd1;
    {
    .param .b32 param0;
    st.param.b32 [param0], 2;
    .param .b32 retval0;
    call.uni (retval0), sum_to, (param0);
    ld.param.b32 %r2, [retval0];
    }
    cvt.u64.u32 %rd2, %r2;
    sub.s64 %rd1, %rd1, %rd2;
POS:
    st.param.b64 [func_retval0], %rd1;
    ret;
}
"#;

#[test]
fn nested_calls_loops_in_functions_and_functions_defined_after_their_callers() {
    let m = module(NESTED);
    let mut mem = Memory::new();
    let out = buf(&mut mem, "out", &[0; 40]);
    let wide = mem.alloc_zeroed("wide", 40 * 8).unwrap();
    run(&m, "k", 40, &[Arg::Buffer(out), Arg::Buffer(wide)], &mut mem);
    let tri = |n: u32| n * (n + 1) / 2;
    assert_eq!(u32s(&mem, out), (0..40).map(|t| tri(t) + tri(3)).collect::<Vec<_>>());
    let w: Vec<i64> = mem.bytes(wide).unwrap().chunks(8).map(|c| i64::from_le_bytes(c.try_into().unwrap())).collect();
    assert_eq!(w, (0..40).map(|t| -(t as i64) - 3).collect::<Vec<_>>());
}

/// NVRTC 12.9's output for `__noinline__` device functions (three of them, as NVRTC wrote them;
/// the entry trimmed, its last call's argument negated and its store moved past the first 32
/// floats).
const NVRTC: &str = r#"
.func  (.param .b32 func_retval0) _Z8warp_sumf(
	.param .b32 _Z8warp_sumf_param_0
)
{
	.reg .pred 	%p<2>;
	.reg .f32 	%f<4>;
	.reg .b32 	%r<6>;


	ld.param.f32 	%f1, [_Z8warp_sumf_param_0];
	mov.b32 	%r1, %f1;
	mov.u32 	%r2, 31;
	mov.u32 	%r3, 16;
	mov.u32 	%r4, -1;
	shfl.sync.bfly.b32 	%r5|%p1, %r1, %r3, %r2, %r4;
	mov.b32 	%f2, %r5;
	add.f32 	%f3, %f2, %f1;
	st.param.f32 	[func_retval0+0], %f3;
	ret;

}
.func _Z6store1Pfjf(
	.param .b64 _Z6store1Pfjf_param_0,
	.param .b32 _Z6store1Pfjf_param_1,
	.param .b32 _Z6store1Pfjf_param_2
)
{
	.reg .f32 	%f<2>;
	.reg .b32 	%r<2>;
	.reg .b64 	%rd<5>;


	ld.param.u64 	%rd1, [_Z6store1Pfjf_param_0];
	ld.param.u32 	%r1, [_Z6store1Pfjf_param_1];
	ld.param.f32 	%f1, [_Z6store1Pfjf_param_2];
	cvta.to.global.u64 	%rd2, %rd1;
	mul.wide.u32 	%rd3, %r1, 4;
	add.s64 	%rd4, %rd2, %rd3;
	st.global.f32 	[%rd4], %f1;
	ret;

}
.func  (.param .b32 func_retval0) _Z5isnegbf(
	.param .b32 _Z5isnegbf_param_0,
	.param .b32 _Z5isnegbf_param_1
)
{
	.reg .pred 	%p<4>;
	.reg .b16 	%rs<2>;
	.reg .f32 	%f<2>;
	.reg .b32 	%r<2>;


	ld.param.s8 	%rs1, [_Z5isnegbf_param_0];
	ld.param.f32 	%f1, [_Z5isnegbf_param_1];
	setp.ne.s16 	%p1, %rs1, 0;
	setp.lt.f32 	%p2, %f1, 0f00000000;
	and.pred  	%p3, %p1, %p2;
	selp.u32 	%r1, 1, 0, %p3;
	st.param.b32 	[func_retval0+0], %r1;
	ret;

}
	// .globl	k
.visible .entry k(
	.param .u64 k_param_0,
	.param .u8 k_param_1
)
{
	.reg .pred 	%p<2>;
	.reg .b16 	%rs<5>;
	.reg .f32 	%f<6>;
	.reg .b32 	%r<11>;
	.reg .b64 	%rd<3>;


	ld.param.s8 	%rs1, [k_param_1];
	ld.param.u64 	%rd2, [k_param_0];
	cvta.to.global.u64 	%rd1, %rd2;
	mov.u32 	%r1, %tid.x;
	cvt.rn.f32.u32 	%f1, %r1;
	{ // callseq 0, 0
	.reg .b32 temp_param_reg;
	.param .b32 param0;
	st.param.f32 	[param0+0], %f1;
	.param .b32 retval0;
	call.uni (retval0), 
	_Z8warp_sumf, 
	(
	param0
	);
	ld.param.f32 	%f2, [retval0+0];
	} // callseq 0
	{ // callseq 1, 0
	.reg .b32 temp_param_reg;
	.param .b64 param0;
	st.param.b64 	[param0+0], %rd2;
	.param .b32 param1;
	st.param.b32 	[param1+0], %r1;
	.param .b32 param2;
	st.param.f32 	[param2+0], %f2;
	call.uni 
	_Z6store1Pfjf, 
	(
	param0, 
	param1, 
	param2
	);
	} // callseq 1
	cvt.s32.s16 	%r2, %rs1;
	neg.f32 	%f3, %f2;
	{ // callseq 2, 0
	.reg .b32 temp_param_reg;
	.param .b32 param0;
	st.param.b32 	[param0+0], %r2;
	.param .b32 param1;
	st.param.f32 	[param1+0], %f3;
	.param .b32 retval0;
	call.uni (retval0), 
	_Z5isnegbf, 
	(
	param0, 
	param1
	);
	ld.param.b32 	%r3, [retval0+0];
	} // callseq 2
	cvt.u16.u32 	%rs2, %r3;
	setp.eq.s16 	%p1, %rs2, 0;
	@%p1 bra 	$L__BB6_2;
	mul.wide.u32 	%rd2, %r1, 4;
	add.s64 	%rd2, %rd1, %rd2;
	st.global.f32 	[%rd2+128], %f3;

$L__BB6_2:
	ret;

}
"#;

#[test]
fn nvrtc_output_with_device_functions_runs() {
    let m = module(NVRTC);
    for flag in [0u64, 1] {
        let mut mem = Memory::new();
        let out = mem.alloc_zeroed("out", 64 * 4).unwrap();
        run(&m, "k", 32, &[Arg::Buffer(out), Arg::Scalar(flag)], &mut mem);
        let got: Vec<f32> = u32s(&mem, out).into_iter().map(f32::from_bits).collect();
        for t in 0..32u32 {
            let s = t as f32 + (t ^ 16) as f32;
            assert_eq!(got[t as usize], s, "thread {t}");
            // isneg(flag, -s): stores -s when the flag is set and s > 0.
            let want = if flag == 1 && s > 0.0 { -s } else { 0.0 };
            assert_eq!(got[32 + t as usize], want, "flag {flag} thread {t}");
        }
    }
}

#[test]
fn faults_inside_functions_name_the_functions_line() {
    let src = r#"
.func put(.param .b64 p)
{
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [p];
    st.global.u32 [%rd1+4096], 1;
    ret;
}
.visible .entry k(.param .u64 out)
{
    .reg .b64 %rd<2>;
    ld.param.u64 %rd1, [out];
    {
    .param .b64 param0;
    st.param.b64 [param0], %rd1;
    call.uni put, (param0);
    }
    ret;
}
"#;
    let m = module(src);
    let mut mem = Memory::new();
    let out = buf(&mut mem, "out", &[0; 4]);
    let e = launch(&m, "k", &LaunchConfig::linear(1, 1), &[Arg::Buffer(out)], &mut mem, &Options::default())
        .expect_err("out of bounds");
    assert_eq!(e.kind, ErrorKind::Fault(FaultKind::OutOfBounds), "{e}");
    assert_eq!(e.line, Some(9), "{e}");
}

#[test]
fn what_the_emulator_does_not_run_is_a_located_error() {
    let call_f = "{\n    .param .b32 param0;\n    st.param.b32 [param0], 1;\n    .param .b32 retval0;\n    call.uni (retval0), f, (param0);\n    }\n";
    let entry = |body: &str| format!(".visible .entry k()\n{{\n    .reg .b32 %r<2>;\n{body}    ret;\n}}\n");
    let f = |body: &str| {
        format!(".func (.param .b32 func_retval0) f(.param .b32 a)\n{{\n    .reg .b32 %r<2>;\n{body}    ret;\n}}\n")
    };
    let cases: Vec<(String, &str)> = vec![
        (format!("{}{}", f(call_f), entry(call_f)), "recursive call (f -> f)"),
        (
            format!(
                ".func (.param .b32 func_retval0) g(.param .b32 a);\n{}{}{}",
                f(&call_f.replace(", f, ", ", g, ")),
                ".func (.param .b32 func_retval0) g(.param .b32 a)\n{\n    .reg .b32 %r<2>;\n    {\n    .param .b32 param0;\n    st.param.b32 [param0], 1;\n    .param .b32 retval0;\n    call.uni (retval0), f, (param0);\n    }\n    ret;\n}\n",
                entry(call_f)
            ),
            "recursive call (f -> g -> f)",
        ),
        (format!("{}{}", f(""), entry(&call_f.replace("(param0);", "(param0, param0);"))), "takes 1 argument(s)"),
        (entry(call_f), "call to undefined function `f`"),
        (format!("{}{}", f("    .shared .b32 s;\n"), entry(call_f)), "`.shared` variables inside a function"),
        (
            format!("{}{}", f(""), entry(&call_f.replace("(param0);", "(param0), proto;"))),
            "indirect calls",
        ),
        (format!("{}{}", f(""), entry(&call_f.replace("(param0);", "(%r1);"))), "must be `.param` variables"),
        (format!("{}{}", f(""), entry(&call_f.replace("call.uni", "@%p1 call.uni"))), "guarded calls"),
        (format!("{}{}", f(""), entry(&call_f.replace("(param0);", "(param0)"))), "expected `;`"),
    ];
    for (body, msg) in cases {
        let e = Module::parse(&format!("{HEADER}{body}")).err().unwrap_or_else(|| panic!("accepted:\n{body}"));
        assert!(e.message.contains(msg), "{e} (wanted `{msg}`) for\n{body}");
        assert!(e.line > 3, "{e}");
    }
}

#[test]
fn exponential_call_trees_are_an_error_not_a_hang() {
    // f1 calls f0 twice, f2 calls f1 twice, ...: 2^40 calls if all were inlined.
    let call = |f: &str| format!("    {{\n    call.uni {f}, ();\n    }}\n");
    let mut text = String::from(".func f0()\n{\n    ret;\n}\n");
    for i in 1..=40 {
        let prev = format!("f{}", i - 1);
        text.push_str(&format!(".func f{i}()\n{{\n{}{}    ret;\n}}\n", call(&prev), call(&prev)));
    }
    text.push_str(&format!(".visible .entry k()\n{{\n{}    ret;\n}}\n", call("f40")));
    let t = std::time::Instant::now();
    let e = Module::parse(&format!("{HEADER}{text}")).err().expect("too large");
    assert!(e.message.contains("too much code"), "{e}");
    assert!(t.elapsed() < std::time::Duration::from_secs(20), "{:?}", t.elapsed());
}
