//! The command line for graphs and fusion: `kir run FILE --graph G --stats`, `kir opt --passes fuse
//! --print-fusion`, and their errors.

mod cli;
use cli::kir;

const ACT_ARGS: [&str; 10] = [
    "--arg",
    "x=rand:f32:1000:1",
    "--arg",
    "dy=rand:f32:1000:2",
    "--arg",
    "dx=zeros:f32:1000",
    "--arg",
    "n=1000",
    "--arg",
    "s=0.125",
];

#[test]
fn run_graph_with_stats_before_and_after_fuse() {
    let mut a = vec!["run", "kernels/graph_act_chain.kir", "--graph", "act_chain", "--stats"];
    a.extend(ACT_ARGS);
    let (code, before, err) = kir(&a);
    assert_eq!(code, 0, "{err}");
    assert!(before.contains("stats: 3 launches, global memory 16000 bytes read, 12000 bytes written"), "{before}");
    let dir = std::env::temp_dir().join(format!("kir-fusion-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let fused = dir.join("fused.kir");
    let (code, _, err) = kir(&[
        "opt",
        "kernels/graph_act_chain.kir",
        "--passes",
        "fuse,simplify-cfg,dce",
        "-o",
        fused.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    let mut a = vec!["run", fused.to_str().unwrap(), "--graph", "@act_chain", "--stats"];
    a.extend(ACT_ARGS);
    let (code, after, err) = kir(&a);
    assert_eq!(code, 0, "{err}");
    assert!(after.contains("stats: 1 launches, global memory 8000 bytes read, 4000 bytes written"), "{after}");
    // Same output summary line for %dx.
    assert_eq!(before.lines().next(), after.lines().next());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn print_fusion_explains_every_refusal() {
    let (code, _, err) = kir(&["opt", "kernels/graph_gemm_bwd.kir", "--passes", "fuse", "--print-fusion"]);
    assert_eq!(code, 0, "{err}");
    insta::assert_snapshot!(err);
}

#[test]
fn graph_errors_are_clear() {
    let (code, _, err) = kir(&["run", "kernels/graph_act_chain.kir", "--graph", "nope"]);
    assert_eq!(code, 1);
    assert!(err.contains("no graph `@nope` (graphs here: @act_chain)"), "{err}");
    let (code, _, err) = kir(&["run", "kernels/graph_act_chain.kir", "--graph", "act_chain", "--arg", "x=rand:f32:10"]);
    assert_eq!(code, 2);
    assert!(err.contains("missing argument for graph parameter `dy: ptr<global, f32>`"), "{err}");
    let (code, _, err) = kir(&["run", "kernels/graph_act_chain.kir", "--graph", "act_chain", "--grid", "1"]);
    assert_eq!(code, 2, "{err}");
    // A buffer too short for n faults inside a launch, and the note names the launch.
    let mut a = vec!["run", "kernels/graph_act_chain.kir", "--graph", "act_chain"];
    a.extend([
        "--arg",
        "x=rand:f32:100:1",
        "--arg",
        "dy=rand:f32:1000:2",
        "--arg",
        "dx=zeros:f32:1000",
        "--arg",
        "n=1000",
        "--arg",
        "s=1",
    ]);
    let (code, _, err) = kir(&a);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("in launch 0 (@relu_deriv) of graph @act_chain"), "{err}");
}

/// A producer whose store is inside a device function, and its consumer.
const CALLING_GRAPH: &str = include_str!("fixtures/fusion_through_call.kir");

#[test]
fn fusion_sees_through_calls_and_keeps_the_results() {
    let dir = std::env::temp_dir().join(format!("kir-fusion-calls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let input = dir.join("calls.kir");
    std::fs::write(&input, CALLING_GRAPH).unwrap();
    let fused = dir.join("fused.kir");
    let (code, _, err) =
        kir(&["opt", input.to_str().unwrap(), "--passes", "fuse", "--print-fusion", "-o", fused.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    // The store inside @put makes the pair vertical: the consumer reads what the call wrote.
    assert!(err.contains("fused launch 0 @produce + launch 1 @consume (vertical) into @produce.consume"), "{err}");
    let text = std::fs::read_to_string(&fused).unwrap();
    let fused_kernel = text.split("kernel @produce.consume(").nth(1).expect("the fused kernel");
    assert!(!fused_kernel.split("\ngraph").next().unwrap().contains("call @"), "{text}");
    // The original kernel keeps its call; the function stays.
    assert!(text.contains("  call @put(%d, %i, %r)\n") && text.starts_with("func @put("), "{text}");
    let args =
        ["--graph", "g", "--arg", "x=rand:f32:1000:3", "--arg", "out=zeros:f32:1000", "--arg", "n=1000", "--stats"];
    let mut a = vec!["run", input.to_str().unwrap()];
    a.extend(args);
    let (code, before, err) = kir(&a);
    assert_eq!(code, 0, "{err}");
    let mut a = vec!["run", fused.to_str().unwrap()];
    a.extend(args);
    let (code, after, err) = kir(&a);
    assert_eq!(code, 0, "{err}");
    assert!(after.contains("stats: 1 launches"), "{after}");
    assert_eq!(before.lines().next(), after.lines().next(), "{before}\n{after}");
    std::fs::remove_dir_all(&dir).ok();
}
