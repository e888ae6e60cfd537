//! `kir::api`: binding by name, type checks and their messages, typed reads, f16, faults with their
//! location, PTX emission, pass pipelines.

use kir::api::{bf16, f16, ErrorKind, FaultKind, Module, SmVersion};

const RELU: &str = include_str!("../kernels/relu_backward.kir");

const HALF: &str = "\
kernel @twice(%x: ptr<global, f16>, %y: ptr<global, f16>, %n: u32) {
entry:
  %i = global_id.x
  %inb = lt.u32 %i, %n
  br %inb, body, exit
body:
  %v = load %x[%i]
  %r = add.f16 %v, %v
  store %y[%i], %r
  jmp exit
exit:
  ret
}
";

const RACY: &str = "\
kernel @racy(%p: ptr<global, u32>) {
entry:
  %t = tid.x
  store %p[0], %t
  ret
}
";

fn relu() -> Module {
    Module::parse_named("relu_backward.kir", RELU).expect("relu_backward.kir checks")
}

fn inputs(n: usize) -> (Vec<f32>, Vec<f32>) {
    let x = (0..n).map(|i| i as f32 - n as f32 / 2.0).collect();
    let dy = (0..n).map(|i| 0.25 * i as f32).collect();
    (x, dy)
}

#[test]
fn binds_by_name_in_any_order_and_reads_back() {
    let m = relu();
    let (x, dy) = inputs(1000);
    let out = m
        .kernel("relu_backward")
        .unwrap()
        .launch([4, 1, 1], [256, 1, 1])
        .arg("n", 1000u32)
        .arg("dx", vec![0.0f32; 1000])
        .arg("%dy", &dy)
        .arg("x", &x[..])
        .run()
        .unwrap();
    let dx: Vec<f32> = out.read("dx").unwrap();
    let want: Vec<f32> = x.iter().zip(&dy).map(|(x, g)| if *x > 0.0 { *g } else { 0.0 }).collect();
    assert_eq!(dx, want);
    // Inputs come back too, unchanged.
    assert_eq!(out.read::<f32>("x").unwrap(), x);
    assert_eq!(out.stats().blocks, 4);
    assert_eq!(out.stats().threads, 1024);
}

#[test]
fn argument_errors_name_the_parameter_and_types() {
    let m = relu();
    let k = m.kernel("relu_backward").unwrap();
    let (x, dy) = inputs(8);
    let dx = vec![0.0f32; 8];
    let err = |l: kir::api::Launch| {
        let e = l.run().unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Argument, "{e}");
        e.to_string()
    };

    assert_eq!(
        err(k.launch(1, 32).arg("y", &x)),
        "kernel @relu_backward has no parameter `y` (parameters: x: ptr<global, f32>, dy: ptr<global, f32>, dx: ptr<global, f32>, n: u32)"
    );
    assert_eq!(
        err(k.launch(1, 32).arg("x", &x).arg("dy", &dy).arg("dx", &dx)),
        "missing argument for parameter `n: u32` of @relu_backward"
    );
    assert_eq!(err(k.launch(1, 32).arg("x", &x).arg("x", &x)), "parameter `x` is given twice");
    let ints = vec![0u32; 8];
    assert_eq!(
        err(k.launch(1, 32).arg("x", &ints)),
        "argument `x`: parameter `x: ptr<global, f32>` takes a buffer of f32 (`&[f32]`), given a buffer of u32 (`&[u32]`)"
    );
    assert_eq!(
        err(k.launch(1, 32).arg("x", 1.0f32)),
        "argument `x`: parameter `x: ptr<global, f32>` takes a buffer of f32 (`&[f32]`), given a f32"
    );
    assert_eq!(
        err(k.launch(1, 32).arg("n", &ints)),
        "argument `n`: parameter `n: u32` takes a u32, given a buffer of u32 (`&[u32]`)"
    );
    assert_eq!(err(k.launch(1, 32).arg("n", 8u64)), "argument `n`: parameter `n: u32` takes a u32, given a u64");
    assert!(
        err(k.launch(1, 32).arg("n", 8)).ends_with("(an integer literal is i32 unless suffixed: write e.g. `1u32`)")
    );
    // The first mistake is the one reported.
    assert_eq!(err(k.launch(1, 32).arg("q", 1u32).arg("r", 1u32)).split('`').nth(1), Some("q"));
}

#[test]
fn reads_are_typed_and_by_buffer_name() {
    let m = relu();
    let (x, dy) = inputs(4);
    let out = m
        .kernel("relu_backward")
        .unwrap()
        .launch(1, 32)
        .arg("x", &x)
        .arg("dy", &dy)
        .arg("dx", &[0.0f32; 4])
        .arg("n", 4u32)
        .run()
        .unwrap();
    let e = out.read::<u32>("dx").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Read);
    assert_eq!(e.to_string(), "buffer `dx` of @relu_backward holds f32: read it as Vec<f32>, not Vec<u32>");
    assert_eq!(
        out.read::<f32>("n").unwrap_err().to_string(),
        "@relu_backward has no buffer parameter `n` (buffers: x, dy, dx)"
    );
    assert_eq!(out.buffer("%dx").unwrap().len(), 4);
}

#[test]
fn f16_round_trip() {
    let m = Module::parse(HALF).unwrap();
    let x: Vec<f16> = [0.5f32, -1.25, 1000.0, 65504.0, 3.0e-5].iter().map(|v| f16::from_f32(*v)).collect();
    let out = m
        .kernel("twice")
        .unwrap()
        .launch(1, 32)
        .arg("x", &x)
        .arg("y", vec![f16::ZERO; 5])
        .arg("n", 5u32)
        .run()
        .unwrap();
    let y: Vec<f16> = out.read("y").unwrap();
    let want: Vec<f16> = x.iter().map(|v| f16::from_f32(v.to_f32() * 2.0)).collect();
    assert_eq!(y, want);
    assert!(y[3].is_infinite(), "65504 * 2 overflows f16");
    assert_eq!(out.read::<f16>("x").unwrap(), x, "the input comes back bit for bit");
    // bf16 is another type: not accepted for an f16 parameter, not readable as one.
    let bx = vec![bf16::ONE; 5];
    let e = m.kernel("twice").unwrap().launch(1, 32).arg("x", &bx).run().unwrap_err();
    assert!(
        e.to_string().contains("takes a buffer of f16 (`&[half::f16]`), given a buffer of bf16 (`&[half::bf16]`)"),
        "{e}"
    );
    assert!(out.read::<bf16>("y").is_err());
}

#[test]
fn kernel_fault_is_an_error_with_its_location() {
    let m = relu();
    let (x, dy) = inputs(1000);
    // `n` larger than the buffers: threads 1000.. read past the end of x.
    let e = m
        .kernel("relu_backward")
        .unwrap()
        .launch(4, 256)
        .arg("x", &x)
        .arg("dy", &dy)
        .arg("dx", vec![0.0f32; 1000])
        .arg("n", 1024u32)
        .run()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::KernelFault(FaultKind::OutOfBounds));
    assert_eq!(e.fault(), Some(FaultKind::OutOfBounds));
    let line = RELU.lines().position(|l| l.contains("%xv = load %x[%i]")).unwrap() + 1;
    assert_eq!(e.location(), Some((line, 3)));
    let text = e.to_string();
    assert!(text.contains(&format!("relu_backward.kir:{line}:3")), "{text}");
    assert!(text.contains("kernel fault (out-of-bounds access)"), "{text}");
    assert!(text.contains("in block (3, 0, 0) thread (232, 0, 0)"), "{text}");
    // Debug (what `unwrap` prints) shows the same rendering.
    assert!(format!("{e:?}").contains(&text));
    let _: &dyn std::error::Error = &e;
}

#[test]
fn races_are_checked_by_default() {
    let m = Module::parse(RACY).unwrap();
    let k = m.kernel("racy").unwrap();
    let e = k.launch(1, 64).arg("p", vec![0u32; 1]).run().unwrap_err();
    assert_eq!(e.fault(), Some(FaultKind::DataRace), "{e}");
    assert_eq!(e.location(), Some((4, 3)));
    // Turned off, the launch runs (the last warp's write wins, deterministically).
    let out = k.launch(1, 64).arg("p", vec![0u32; 1]).races(false).run().unwrap();
    assert_eq!(out.read::<u32>("p").unwrap().len(), 1);
}

#[test]
fn parse_check_and_lookup_errors() {
    let e =
        Module::parse_named("bad.kir", "kernel @k(%x: u32) {\nentry:\n  %y = add.u32 %x, %zz\n  ret\n}\n").unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Parse | ErrorKind::Check), "{e:?}");
    assert!(e.to_string().contains("bad.kir:3:"), "{e}");
    assert!(e.message().contains("%zz"), "{}", e.message());

    // Barrier verification is part of the checks.
    let e = Module::parse(include_str!("filetests/barriers/bad_barrier_under_tid.kir")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Check);
    assert_eq!(e.message(), "barrier must be reached by all threads of the block");

    let m = relu();
    let e = m.kernel("relu").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::UnknownKernel);
    assert_eq!(e.to_string(), "no kernel @relu in relu_backward.kir (kernels: @relu_backward)");
    assert_eq!(m.kernel_names().collect::<Vec<_>>(), ["relu_backward"]);
    assert_eq!(m.kernel("@relu_backward").unwrap().params().len(), 4);

    let e = Module::from_file("no/such/file.kir").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io);
    assert!(e.to_string().starts_with("cannot read `no/such/file.kir`: "), "{e}");
}

#[test]
fn ptx_emission() {
    let m = relu();
    let ptx = m.ptx(SmVersion::Sm86).unwrap();
    assert!(ptx.contains(".target sm_86"));
    assert!(ptx.contains(".visible .entry relu_backward("));
    assert_eq!(ptx, m.ptx(SmVersion::Sm86).unwrap(), "deterministic");
    assert_eq!(m.kernel("relu_backward").unwrap().ptx(SmVersion::Sm86).unwrap(), ptx);
    // What `kir ptx` prints, and what compile_to_ptx returns for the file.
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/kernels/relu_backward.kir");
    let from_file = kir::api::compile_to_ptx(path, SmVersion::Sm86).unwrap();
    assert!(from_file.contains(".visible .entry relu_backward("));
    assert_eq!(
        from_file.lines().filter(|l| !l.contains("//")).count(),
        ptx.lines().filter(|l| !l.contains("//")).count()
    );
}

#[test]
fn pass_pipeline() {
    let src = "kernel @k(%p: ptr<global, u32>) {\nentry:\n  %a = add.u32 2, 3\n  %b = mul.u32 %a, 4\n  store %p[0], %b\n  ret\n}\n";
    let m = Module::parse(src).unwrap();
    let opt = m.run_passes("fold,dce").unwrap();
    assert!(opt.to_text().contains("store %p[0], 20"), "{}", opt.to_text());
    assert!(!opt.to_text().contains("add.u32"), "{}", opt.to_text());
    // Same results before and after.
    let run =
        |m: &Module| m.kernel("k").unwrap().launch(1, 1).arg("p", vec![0u32]).run().unwrap().read::<u32>("p").unwrap();
    assert_eq!(run(&m), [20]);
    assert_eq!(run(&opt), [20]);
    assert!(m.run_passes(kir_passes::DEFAULT_PIPELINE).is_ok());

    let e = m.run_passes("fold,no-such-pass").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Pass);
    assert!(e.to_string().starts_with("pass pipeline `fold,no-such-pass`: "), "{e}");
    assert!(e.to_string().contains("no-such-pass"), "{e}");
}

#[test]
fn launch_options_and_shapes() {
    let m = relu();
    let (x, dy) = inputs(64);
    let k = m.kernel("relu_backward").unwrap();
    fn with_args<'m>(l: kir::api::Launch<'m>, x: &[f32], dy: &[f32]) -> kir::api::Launch<'m> {
        l.arg("x", x).arg("dy", dy).arg("dx", vec![0.0f32; 64]).arg("n", 64u32)
    }
    let base = |l| with_args(l, &x, &dy);
    let a = base(k.launch((2, 1), (32, 1, 1))).threads(1).run().unwrap().read::<f32>("dx").unwrap();
    let b = base(k.launch(1, 64)).uninit(false).races(false).run().unwrap().read::<f32>("dx").unwrap();
    assert_eq!(a, b);
    let e = base(k.launch(1, 64)).fuel(10).run().unwrap_err();
    assert_eq!(e.fault(), Some(FaultKind::FuelExhausted), "{e}");
    let e = base(k.launch(1, 0)).run().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidLaunch, "{e}");
    // A raw interpreter Buffer is accepted too (any element type, checked the same way).
    let out = k
        .launch(1, 64)
        .arg("x", kir_interp_buffer(&x))
        .arg("dy", &dy)
        .arg("dx", vec![0.0f32; 64])
        .arg("n", 64u32)
        .run()
        .unwrap();
    assert_eq!(out.read::<f32>("dx").unwrap(), a);
}

fn kir_interp_buffer(v: &[f32]) -> kir_interp::Buffer {
    kir_interp::Buffer::from_f32(v)
}
