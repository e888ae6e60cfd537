//! Which device's tensor-core arithmetic a run predicts, and keeping the engines on the same one.
//!
//! Guarantees:
//! - [`parse_rule`] reads the `tensor-cores=` value of a `; run:` line and `kir run
//!   --tensor-cores`: `sm_80`, `sm_90` or `sm_100` (also without `sm_`); anything else is an error
//!   naming the accepted values.
//! - [`emulator_rule`] is the PTX emulator's rule with the same parameters as the interpreter's, so
//!   `kir test`'s `interp` and `ptx-emu` rows compute `mma` alike whatever `.target` the PTX names.
//! - [`rule_of_device`] is the rule of a GPU of the given target (`SmVersion` from its compute
//!   capability): what the interpreter must use when its outputs are compared with that GPU's.
//! - [`uses_tensor_cores`] is true exactly when some body of the module has an `mma`.

use kir_backend_ptx::SmVersion;
use kir_ir::eval::tensor_core::TensorCoreRule;
use kir_ir::{Module, Op};

/// The accepted spellings, for messages.
pub const RULES: &str = "sm_80, sm_90 or sm_100";

/// A rule by name: `sm_80`, `sm_90`, `sm_100` (or `80`, `90`, `100`).
pub fn parse_rule(s: &str) -> Result<TensorCoreRule, String> {
    match s.trim_start_matches("sm_") {
        "80" => Ok(TensorCoreRule::Sm80),
        "90" => Ok(TensorCoreRule::Sm90),
        "100" => Ok(TensorCoreRule::Sm100),
        _ => Err(format!("unknown tensor-core rule `{s}` (expected {RULES})")),
    }
}

/// The name [`parse_rule`] reads back.
pub fn rule_name(r: TensorCoreRule) -> &'static str {
    match r {
        TensorCoreRule::Sm80 => "sm_80",
        TensorCoreRule::Sm90 => "sm_90",
        TensorCoreRule::Sm100 => "sm_100",
    }
}

/// The PTX emulator's rule with the parameters of `r` (sm_100's are sm_90's).
pub fn emulator_rule(r: TensorCoreRule) -> kir_ptx_emu::TensorCores {
    match r {
        TensorCoreRule::Sm80 => kir_ptx_emu::TensorCores::Sm80,
        TensorCoreRule::Sm90 | TensorCoreRule::Sm100 => kir_ptx_emu::TensorCores::Sm90,
    }
}

/// The rule of a GPU whose PTX target is `sm` (kir's newest target, sm_90, stands for sm_90 and
/// newer devices, whose measured parameters are the same).
pub fn rule_of_device(sm: SmVersion) -> TensorCoreRule {
    let (major, minor) = sm.compute_capability();
    TensorCoreRule::from_compute_capability(major * 10 + minor)
}

/// Whether any kernel or function of `m` uses the tensor cores.
pub fn uses_tensor_cores(m: &Module) -> bool {
    m.kernels.iter().chain(&m.funcs).any(|k| k.placed_insts().any(|(_, i)| matches!(k.inst(i).op, Op::Mma(_))))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_read_back_and_reject_the_unknown() {
        for r in [TensorCoreRule::Sm80, TensorCoreRule::Sm90, TensorCoreRule::Sm100] {
            assert_eq!(parse_rule(rule_name(r)), Ok(r));
        }
        assert_eq!(parse_rule("90"), Ok(TensorCoreRule::Sm90));
        assert_eq!(
            parse_rule("sm_75").unwrap_err(),
            "unknown tensor-core rule `sm_75` (expected sm_80, sm_90 or sm_100)"
        );
    }

    #[test]
    fn devices_get_their_generation_s_rule() {
        assert_eq!(rule_of_device(SmVersion::Sm80), TensorCoreRule::Sm80);
        assert_eq!(rule_of_device(SmVersion::Sm89), TensorCoreRule::Sm80);
        assert_eq!(rule_of_device(SmVersion::Sm90), TensorCoreRule::Sm90);
        assert_eq!(emulator_rule(TensorCoreRule::Sm100), kir_ptx_emu::TensorCores::Sm90);
    }
}
