//! `kir_ir::eval::dot` against what real tensor cores computed: `../shared/hardware-truth/tensor-cores/`
//! beside the repository (measurements by Khattak and Mikaitis, BSD 2-Clause, LICENCE there; its
//! README.md states the model and the file format). Each device's archive is unpacked at test time
//! (`tar xJf`) into a temporary directory; every fp16, bf16 and tf32 row (5,000 each) must equal
//! the device's rule bit for bit (A100: sm_80; H100, H200: sm_90; B200: sm_100), and the other
//! generation's rule must miss some rows of each set, so the data tells the rules apart.
//!
//! Row format: `a_DEV_FMT.txt` and `b_DEV_FMT.txt` hold K values per row as f32 bit patterns in hex
//! (each exactly representable in FMT), `c_DEV_fp32.txt` and `d_DEV_fp32.txt` one f32 per row as a
//! 32-character binary string. fp8 rows and f16 outputs (`d_DEV_fp16.txt`) are not modelled here.
//!
//! Without the data (no `../shared` beside the repository) or without `tar`, each test prints
//! `skip:` and passes, except with `CI=true`, where it fails (the policy of
//! `kir_backend_ptx::tools::require_tool_or_skip`).

use kir_ir::eval::{dot, TensorCoreInput, TensorCoreRule};
use std::path::{Path, PathBuf};
use std::process::Command;

fn truth_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/hardware-truth/tensor-cores")
}

fn skip_or_fail(why: &str) {
    if std::env::var("CI").map(|v| v == "true").unwrap_or(false) {
        panic!("{why} and CI=true");
    }
    eprintln!("skip: {why}");
}

/// A temporary directory removed on drop.
struct TempDir(PathBuf);
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Unpacks `DEV.tar.xz`'s fp16, bf16 and tf32 folders; `None` (after the skip line) when the data
/// or `tar` is missing.
fn unpack(dev: &str) -> Option<TempDir> {
    let archive = truth_dir().join(format!("{dev}.tar.xz"));
    if !archive.is_file() {
        skip_or_fail(&format!("{} is missing (the tensor-core truth is read from ../shared)", archive.display()));
        return None;
    }
    let dir = TempDir(std::env::temp_dir().join(format!("kir-ir-tensor-core-{dev}-{}", std::process::id())));
    let _ = std::fs::remove_dir_all(&dir.0);
    std::fs::create_dir_all(&dir.0).unwrap();
    let out = Command::new("tar")
        .arg("xJf")
        .arg(&archive)
        .arg("-C")
        .arg(&dir.0)
        .args(["fp16", "bf16", "tf32"].map(|f| format!("{dev}/{f}")))
        .output();
    match out {
        Err(e) => {
            skip_or_fail(&format!("cannot run tar ({e})"));
            None
        }
        Ok(o) if !o.status.success() => {
            panic!("tar xJf {} failed: {}", archive.display(), String::from_utf8_lossy(&o.stderr))
        }
        Ok(_) => Some(dir),
    }
}

fn lines(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines().map(str::to_owned).collect()
}

/// The rows of `a` or `b`: K f32 bit patterns each, as raw bits of `fmt`.
fn inputs(path: &Path, fmt: TensorCoreInput) -> Vec<Vec<u64>> {
    lines(path)
        .iter()
        .map(|l| {
            l.split_whitespace()
                .map(|h| {
                    let f = u32::from_str_radix(h, 16).unwrap_or_else(|e| panic!("{}: {h}: {e}", path.display()));
                    match fmt {
                        TensorCoreInput::F16 => {
                            let h = half::f16::from_f32(f32::from_bits(f));
                            assert_eq!(h.to_f32().to_bits(), f, "{}: {f:08x} is not an f16", path.display());
                            h.to_bits() as u64
                        }
                        TensorCoreInput::Bf16 => {
                            assert_eq!(f & 0xffff, 0, "{}: {f:08x} is not a bf16", path.display());
                            (f >> 16) as u64
                        }
                        TensorCoreInput::Tf32 => {
                            assert_eq!(f & 0x1fff, 0, "{}: {f:08x} is not a tf32", path.display());
                            f as u64
                        }
                    }
                })
                .collect()
        })
        .collect()
}

/// The rows of `c` or `d`: one f32 each, as a 32-character binary string.
fn f32s(path: &Path) -> Vec<u32> {
    lines(path)
        .iter()
        .map(|l| {
            let l = l.trim();
            assert_eq!(l.len(), 32, "{}: {l:?}", path.display());
            u32::from_str_radix(l, 2).unwrap_or_else(|e| panic!("{}: {l}: {e}", path.display()))
        })
        .collect()
}

/// Checks one device: every row of each format with `rule`, and that `other` misses some rows.
fn check_device(dev: &str, k16: usize, rule: TensorCoreRule, other: TensorCoreRule) {
    let Some(dir) = unpack(dev) else { return };
    for (name, fmt, k) in
        [("fp16", TensorCoreInput::F16, k16), ("bf16", TensorCoreInput::Bf16, k16), ("tf32", TensorCoreInput::Tf32, 4)]
    {
        let base = dir.0.join(dev).join(name);
        let a = inputs(&base.join(format!("a_{dev}_{name}.txt")), fmt);
        let b = inputs(&base.join(format!("b_{dev}_{name}.txt")), fmt);
        let c = f32s(&base.join(format!("c_{dev}_fp32.txt")));
        let d = f32s(&base.join(format!("d_{dev}_fp32.txt")));
        assert_eq!((a.len(), b.len(), c.len(), d.len()), (5000, 5000, 5000, 5000), "{dev}/{name}: row counts");
        let (mut ok, mut other_ok) = (0, 0);
        let mut first_miss = None;
        for i in 0..d.len() {
            assert_eq!((a[i].len(), b[i].len()), (k, k), "{dev}/{name} row {i}: K");
            let got = dot(rule, fmt, &a[i], &b[i], c[i]);
            if got == d[i] {
                ok += 1;
            } else if first_miss.is_none() {
                first_miss = Some(format!("row {i}: got {got:08x}, the GPU {:08x}", d[i]));
            }
            other_ok += (dot(other, fmt, &a[i], &b[i], c[i]) == d[i]) as usize;
        }
        eprintln!("{dev}/{name}: {ok} of {} with {rule:?}; {other_ok} with {other:?}", d.len());
        assert_eq!(ok, d.len(), "{dev}/{name} with {rule:?}: {ok} of {} ({})", d.len(), first_miss.unwrap());
        assert!(
            other_ok < d.len(),
            "{dev}/{name}: {other:?} matches every row too; the data cannot tell the rules apart"
        );
    }
}

#[test]
fn a100_sm80_rule() {
    check_device("A100", 8, TensorCoreRule::Sm80, TensorCoreRule::Sm90);
}

#[test]
fn h100_sm90_rule() {
    check_device("H100", 16, TensorCoreRule::Sm90, TensorCoreRule::Sm80);
}

#[test]
fn h200_sm90_rule() {
    check_device("H200", 16, TensorCoreRule::Sm90, TensorCoreRule::Sm80);
}

#[test]
fn b200_sm100_rule() {
    check_device("B200", 16, TensorCoreRule::Sm100, TensorCoreRule::Sm80);
}

/// The rule each measured device gets from its compute capability.
#[test]
fn rules_of_the_measured_devices() {
    assert_eq!(TensorCoreRule::from_compute_capability(80), TensorCoreRule::Sm80); // A100
    assert_eq!(TensorCoreRule::from_compute_capability(90), TensorCoreRule::Sm90); // H100, H200
    assert_eq!(TensorCoreRule::from_compute_capability(100), TensorCoreRule::Sm100);
    // B200
}
