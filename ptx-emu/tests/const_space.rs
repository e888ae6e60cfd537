//! Module-level `.const` variables and `ld.const`: NaN constants loaded bit for bit (the form kir's
//! PTX emitter uses so that ptxas cannot constant-fold NaN immediates), the layout of scalars and
//! arrays (alignment, padding, zero fill, initializer forms), addresses taken with `mov` and made
//! generic with `cvta.const`, and the errors for what is wrong or not supported (with lines).
//! Every kernel that should run here was checked to assemble with `ptxas -arch=sm_90`.

use kir_ptx_emu::{launch, Arg, ErrorKind, FaultKind, LaunchConfig, Memory, Module, Options};

const HEADER: &str = ".version 8.0\n.target sm_90\n.address_size 64\n";

fn module(body: &str) -> Module {
    let text = format!("{HEADER}{body}");
    Module::parse(&text).unwrap_or_else(|e| panic!("parse error {e}\n{text}"))
}

fn run(m: &Module, entry: &str, threads: u32, out_bytes: usize, extra: &[Arg]) -> Vec<u8> {
    let mut mem = Memory::new();
    let out = mem.alloc_zeroed("out", out_bytes as u64).unwrap();
    let mut args = vec![Arg::Buffer(out)];
    args.extend_from_slice(extra);
    launch(m, entry, &LaunchConfig::linear(1, threads), &args, &mut mem, &Options::default())
        .unwrap_or_else(|e| panic!("{e}"));
    mem.bytes(out).unwrap().to_vec()
}

fn u16_at(b: &[u8], o: usize) -> u16 {
    u16::from_le_bytes(b[o..o + 2].try_into().unwrap())
}
fn u32_at(b: &[u8], o: usize) -> u32 {
    u32::from_le_bytes(b[o..o + 4].try_into().unwrap())
}
fn u64_at(b: &[u8], o: usize) -> u64 {
    u64::from_le_bytes(b[o..o + 8].try_into().unwrap())
}

/// The NaN constants as kir's emitter writes them, each loaded and fed to an instruction; the
/// kernel `regs` computes the same from `mov` immediates in registers (the reference).
fn nans() -> String {
    // One body, two ways of getting the NaNs into %fd15, %f3 and %h2.
    let kernel = |name: &str, get: &str| {
        format!(
            r#"
.visible .entry {name}(.param .u64 out)
{{
    .reg .b16 %h<4>;
    .reg .f32 %f<8>;
    .reg .f64 %fd<16>;
    .reg .b64 %rd<4>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
{get}
    mov.f64 %fd1, 0d3FF0000000000000;
    sub.rn.f64 %fd2, %fd1, %fd15;
    sub.rn.f64 %fd3, %fd15, %fd1;
    neg.f32 %f4, %f3;
    cvt.f32.f16 %f5, %h2;
    st.global.f64 [%rd2], %fd15;
    st.global.f64 [%rd2+8], %fd2;
    st.global.f64 [%rd2+16], %fd3;
    st.global.f32 [%rd2+24], %f3;
    st.global.f32 [%rd2+28], %f4;
    st.global.f32 [%rd2+32], %f5;
    st.global.b16 [%rd2+36], %h2;
    ret;
}}
"#
        )
    };
    let decls = ".const .align 8 .b64 kir_nan_f64_7FF8000000000001 = 0x7FF8000000000001;
.const .align 4 .b32 kir_nan_f32_7FC00001 = 0x7FC00001;
.const .align 2 .b16 kir_nan_f16_7E01 = 0x7E01;
";
    let loads = "\tld.const.f64 %fd15, [kir_nan_f64_7FF8000000000001];
\tld.const.f32 %f3, [kir_nan_f32_7FC00001];
\tld.const.b16 %h2, [kir_nan_f16_7E01];";
    let movs = "    mov.b64 %fd15, 0x7FF8000000000001;
    mov.b32 %f3, 0x7FC00001;
    mov.b16 %h2, 0x7E01;";
    format!("{decls}{}{}", kernel("nans", loads), kernel("regs", movs))
}

#[test]
fn nan_constants_load_bit_for_bit() {
    let m = module(&nans());
    let got = run(&m, "nans", 1, 40, &[]);
    // Plain loads keep the payloads.
    assert_eq!(u64_at(&got, 0), 0x7FF8_0000_0000_0001);
    assert_eq!(u32_at(&got, 24), 0x7FC0_0001);
    assert_eq!(u16_at(&got, 36), 0x7E01);
    // `neg` flips the sign bit only.
    assert_eq!(u32_at(&got, 28), 0xFFC0_0001);
    // The arithmetic on the loaded NaNs is what the same NaNs give from registers.
    let want = run(&m, "regs", 1, 40, &[]);
    assert_eq!(got, want);
    assert_eq!(u64_at(&got, 8), 0x7FF8_0000_0000_0001, "sub.rn.f64 1 - NaN keeps the NaN (as the H100 does)");
    assert_eq!(u64_at(&got, 16), 0x7FF8_0000_0000_0001, "sub.rn.f64 NaN - 1 keeps the NaN");
    assert!(f32::from_bits(u32_at(&got, 32)).is_nan());
}

/// Scalars and arrays of several types: default and explicit alignment (padding between
/// variables), hex/decimal/`U`/negative integers, float spellings, zero-initialized and partly
/// initialized arrays, an array sized by its initializer, `.visible` linkage, and vector loads.
const LAYOUT: &str = r#"
.const .b8 c_byte = 7;
.const .align 8 .u32 c_tbl[5] = {10, 20, 0x30, 40U, -1};
.visible .const .s16 c_neg = -2;
.const .f64 c_half = 0.5;
.const .f32 c_arr[3] = {0f3F800000, 1.5, 2.0};
.const .u64 c_zero[2];
.const .align 16 .u32 c_part[4] = {1, 2};
.const .s32 c_open[] = {-7, 8, 9};

.visible .entry layout(.param .u64 out)
{
    .reg .b16 %rs<4>;
    .reg .b32 %r<24>;
    .reg .f32 %f<4>;
    .reg .f64 %fd<2>;
    .reg .b64 %rd<6>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    ld.const.u8 %r1, [c_byte];
    ld.const.u32 %r2, [c_tbl+8];
    ld.const.v2.u32 {%r3, %r4}, [c_tbl];
    ld.const.u32 %r5, [c_tbl+16];
    ld.const.s16 %rs1, [c_neg];
    cvt.s32.s16 %r6, %rs1;
    ld.const.f64 %fd1, [c_half];
    ld.const.f32 %f1, [c_arr];
    ld.const.f32 %f2, [c_arr+4];
    ld.const.f32 %f3, [c_arr+8];
    ld.const.v2.u32 {%r7, %r8}, [c_zero+8];
    ld.const.v4.u32 {%r9, %r10, %r11, %r12}, [c_part];
    ld.const.u32 %r13, [c_open+8];
    ld.const.s32 %r14, [c_open];
    st.global.v4.u32 [%rd2], {%r1, %r2, %r3, %r4};
    st.global.v4.u32 [%rd2+16], {%r5, %r6, %r7, %r8};
    st.global.v4.u32 [%rd2+32], {%r9, %r10, %r11, %r12};
    st.global.v2.u32 [%rd2+48], {%r13, %r14};
    st.global.f64 [%rd2+56], %fd1;
    st.global.v2.f32 [%rd2+64], {%f1, %f2};
    st.global.f32 [%rd2+72], %f3;
    ret;
}
"#;

#[test]
fn scalars_and_arrays_are_laid_out_with_alignment_and_padding() {
    let m = module(LAYOUT);
    let got = run(&m, "layout", 1, 76, &[]);
    let words: Vec<u32> = (0..14).map(|i| u32_at(&got, 4 * i)).collect();
    assert_eq!(words, [7, 0x30, 10, 20, 0xFFFF_FFFF, (-2i32) as u32, 0, 0, 1, 2, 0, 0, 9, (-7i32) as u32]);
    assert_eq!(u64_at(&got, 56), 0.5f64.to_bits());
    assert_eq!([u32_at(&got, 64), u32_at(&got, 68), u32_at(&got, 72)], [1.0f32, 1.5, 2.0].map(f32::to_bits));
}

/// Padding between variables is really there: `c_pad` is 3 bytes, `c_tbl` starts at 8. The
/// address of `c_tbl` is taken with `mov` (its offset in the `.const` space) and read through a
/// register, per thread and with an extra offset from a parameter; `cvta.const` makes it a generic
/// address that a plain `ld` reads, and `cvta.to.const` turns back.
const ADDR: &str = r#"
.const .align 4 .b8 c_pad[3] = {1, 2, 3};
.const .align 8 .u32 c_tbl[6] = {100, 101, 102, 103, 104, 105};

.visible .entry addr(.param .u64 out, .param .u64 extra)
{
    .reg .b32 %r<6>;
    .reg .b64 %rd<12>;
    ld.param.u64 %rd1, [out];
    ld.param.u64 %rd9, [extra];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    mov.u64 %rd3, c_tbl;
    ld.const.u32 %r2, [%rd3+8];
    mul.wide.u32 %rd4, %r1, 4;
    add.s64 %rd5, %rd3, %rd4;
    add.s64 %rd5, %rd5, %rd9;
    ld.const.u32 %r3, [%rd5];
    cvta.const.u64 %rd6, %rd3;
    add.s64 %rd7, %rd6, %rd4;
    ld.u32 %r4, [%rd7+4];
    cvta.to.const.u64 %rd10, %rd7;
    ld.const.u32 %r5, [%rd10+4];
    add.s64 %rd8, %rd2, %rd4;
    st.global.u32 [%rd8], %r2;
    st.global.u32 [%rd8+64], %r3;
    st.global.u32 [%rd8+128], %r4;
    st.global.u32 [%rd8+192], %r5;
    ret;
}
"#;

#[test]
fn addresses_from_mov_and_cvta_const() {
    let m = module(ADDR);
    let got = run(&m, "addr", 5, 256, &[Arg::Scalar(0)]);
    let w = |o: usize| (0..5).map(|t| u32_at(&got, o + 4 * t)).collect::<Vec<_>>();
    assert_eq!(w(0), [102; 5]);
    assert_eq!(w(64), [100, 101, 102, 103, 104]);
    assert_eq!(w(128), [101, 102, 103, 104, 105]);
    assert_eq!(w(192), [101, 102, 103, 104, 105]);
    // A negative extra offset reaches back into `c_pad` and its padding (bytes 0..8).
    let got = run(&m, "addr", 1, 256, &[Arg::Scalar((-8i64) as u64)]);
    assert_eq!(u32_at(&got, 64), u32::from_le_bytes([1, 2, 3, 0]));
}

#[test]
fn reading_past_the_constant_memory_is_a_located_fault() {
    let m = module(ADDR);
    let mut mem = Memory::new();
    let out = mem.alloc_zeroed("out", 256).unwrap();
    // Thread 4 reads c_tbl[4 + 2] = byte 32: one element past the end of the image.
    let e = launch(
        &m,
        "addr",
        &LaunchConfig::linear(1, 5),
        &[Arg::Buffer(out), Arg::Scalar(8)],
        &mut mem,
        &Options::default(),
    )
    .unwrap_err();
    assert_eq!(e.kind, ErrorKind::Fault(FaultKind::OutOfBounds), "{e}");
    assert_eq!(e.line, Some(21), "{e}"); // `ld.const.u32 %r3, [%rd5];` (after the 3-line header)
    assert_eq!(e.thread, Some([4, 0, 0]), "{e}");
    assert!(
        e.message.contains("const offset 32 + 4 bytes (0 bytes past the end of `c_tbl` (24 bytes at offset 8))")
            && e.message.contains("outside the module's 32 bytes of constant memory"),
        "{e}"
    );
    // Far away (and an address that would overflow) is the same fault, not a panic.
    for extra in [1u64 << 40, u64::MAX - 11] {
        let e = launch(
            &m,
            "addr",
            &LaunchConfig::linear(1, 1),
            &[Arg::Buffer(out), Arg::Scalar(extra)],
            &mut mem,
            &Options::default(),
        )
        .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Fault(FaultKind::OutOfBounds), "{e}");
    }
}

#[test]
fn generic_stores_to_constant_memory_fault() {
    // Assembles with ptxas (the store is generic); the hardware's constant bank is read-only.
    let m = module(
        ".const .align 8 .u32 c_tbl[2] = {1, 2};\n\
         .visible .entry k(.param .u64 out)\n{\n    .reg .b32 %r<4>;\n    .reg .b64 %rd<4>;\n\
         \x20   mov.u64 %rd1, c_tbl;\n    cvta.const.u64 %rd2, %rd1;\n    mov.u32 %r1, 5;\n\
         \x20   st.u32 [%rd2+4], %r1;\n    ret;\n}\n",
    );
    let mut mem = Memory::new();
    let out = mem.alloc_zeroed("out", 4).unwrap();
    let e =
        launch(&m, "k", &LaunchConfig::linear(1, 1), &[Arg::Buffer(out)], &mut mem, &Options::default()).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Fault(FaultKind::OutOfBounds), "{e}");
    assert_eq!(e.line, Some(12), "{e}");
    assert!(e.message.contains("constant memory is read-only (a store to const offset 4, `c_tbl`+4)"), "{e}");
}

#[test]
fn entries_share_the_module_constants_and_functions_see_them() {
    let m = module(
        ".const .u32 c_a = 11;\n\
         .func (.param .u32 r) get()\n{\n    .reg .b32 %x;\n    ld.const.u32 %x, [c_a];\n    st.param.u32 [r], %x;\n    ret;\n}\n\
         .const .u32 c_b = 22;\n\
         .visible .entry k(.param .u64 out)\n{\n    .reg .b32 %r<4>;\n    .reg .b64 %rd<2>;\n\
         \x20   .param .u32 ret0;\n    ld.param.u64 %rd1, [out];\n    call.uni (ret0), get, ();\n\
         \x20   ld.param.u32 %r1, [ret0];\n    ld.const.u32 %r2, [c_b];\n\
         \x20   st.global.v2.u32 [%rd1], {%r1, %r2};\n    ret;\n}\n",
    );
    let got = run(&m, "k", 1, 8, &[]);
    assert_eq!([u32_at(&got, 0), u32_at(&got, 4)], [11, 22]);
}

#[test]
fn constant_memory_errors_are_located() {
    let k = |body: &str| format!(".visible .entry k()\n{{\n    .reg .b32 %r<2>;\n    {body}\n}}\n");
    let c = ".const .align 8 .u32 c_tbl[2] = {1, 2};\n";
    let big = format!(".const .b8 c_big[65536];\n.const .b8 c_more = 1;\n{}", k("ret;"));
    let cases: Vec<(String, (u32, u32), &str)> = vec![
        (k("ld.const.u32 %r1, [c_nope];"), (7, 24), "undeclared register or variable `c_nope`"),
        (format!("{c}{}", k("st.const.u32 [c_tbl], %r1;")), (8, 5), "constant memory is read-only"),
        (format!("{c}{}", k("ld.param.u32 %r1, [c_tbl];")), (8, 23), "`.param` access to a `.const` variable"),
        (
            ".visible .entry k(.param .u32 p)\n{\n    .reg .b32 %r<2>;\n    ld.const.u32 %r1, [p];\n}\n".into(),
            (7, 23),
            "`.const` access to a `.param` variable",
        ),
        (format!("{c}{}", k("ld.global.u32 %r1, [c_tbl];")), (8, 24), "`.global` access to a `.const` variable"),
        (format!("{c}{}", k("ld.u32 %r1, [c_tbl];")), (8, 17), "needs the state space on the instruction"),
        (
            ".const .b8 c_big[65537];\n".into(),
            (4, 12),
            "`.const` variable `c_big` (65537 bytes at offset 0) does not fit in the 65536 bytes (64 KiB)",
        ),
        (big, (5, 12), "`c_more` (1 bytes at offset 65536) does not fit in the 65536 bytes"),
        (".const .b8 c_huge[0xFFFFFFFFFFFFFFFF];\n".into(), (4, 12), "does not fit in the 65536 bytes"),
        (
            format!("{c}.const .u64 c_ptr = c_tbl;\n"),
            (5, 21),
            "`.const` initializers other than numeric literals (`c_tbl`)",
        ),
        (".const .u32 c_x[2] = {1, 2, 3};\n".into(), (4, 22), "more initializers than its 2 elements"),
        (".const .u8 c_x = 256;\n".into(), (4, 18), "initializer `256` does not fit in `.u8`"),
        (".const .f32 c_x = 2;\n".into(), (4, 19), "an integer initializer for a `.f32` variable"),
        (".const .u32 c_x = 1.5;\n".into(), (4, 19), "a floating-point initializer for a `.u32` variable"),
        (".const .f16 c_x;\n".into(), (4, 8), "declare them `.b16`"),
        (".const .u32 c_x[2][2];\n".into(), (4, 13), "multi-dimensional `.const` arrays"),
        (".const .u32 c_x[];\n".into(), (4, 13), "without a size needs an initializer"),
        (".const .u32 c_x = {1};\n".into(), (4, 19), "is not an array"),
        (".const .u32 c_x[2] = 1;\n".into(), (4, 22), "is an array: its initializer must be `{...}`"),
        (".extern .const .u32 c_x;\n".into(), (4, 1), "`.extern .const` variables"),
        (format!("{c}{c}"), (5, 22), "`c_tbl` is declared twice at module scope"),
        (".const .v2 .u32 c_x;\n".into(), (4, 8), "vector-typed `.const` variables"),
        (".const .u32 c_x = {1, 2\n".into(), (4, 19), "is not an array"),
        (".const .u32 c_x[2] = {1, 2\n".into(), (4, 26), "unexpected end of input"),
    ];
    for (body, (line, col), msg) in &cases {
        let e = Module::parse(&format!("{HEADER}{body}")).err().unwrap_or_else(|| panic!("accepted:\n{body}"));
        assert!(e.message.contains(msg), "{e} for\n{body}");
        assert_eq!((e.line, e.col), (*line, *col), "{e} for\n{body}");
    }
}
