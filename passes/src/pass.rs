//! The pass interface: what a pass is given, what it reports, and how its options are read.
//!
//! Guarantees:
//! - A pass runs on one kernel at a time and says whether it changed it; a pass that returns
//!   `false` has left the kernel structurally unchanged (the pass manager's tests check this).
//! - A pass that must reject a kernel (an analysis such as barrier verification) reports error
//!   diagnostics in [`PassContext::diagnostics`]; the pass manager then stops the pipeline and
//!   keeps the IR from before the pass. Warnings are passed on to the caller.
//! - Statistics are named counters, kept in the order they were first bumped, so reports are
//!   deterministic.

use kir_ir::{Diagnostic, Kernel};

/// A transformation or analysis over one kernel.
pub trait Pass {
    /// The registered name (`fold`, `dce`, ...).
    fn name(&self) -> &'static str;
    /// Runs on `k`; returns whether `k` changed.
    fn run(&self, k: &mut Kernel, cx: &mut PassContext) -> bool;
    /// A module pass (launch fusion, which rewrites graphs and adds kernels) overrides this and
    /// returns `Some(changed)`; the pass manager then calls it once per step instead of
    /// [`Pass::run`] on each kernel. Kernel passes keep this default.
    fn run_module(&self, _m: &mut kir_ir::Module, _cx: &mut PassContext) -> Option<bool> {
        None
    }
}

/// Named counters a pass reports (`instructions folded: 12`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PassStats {
    counters: Vec<(&'static str, u64)>,
}

impl PassStats {
    /// Adds `n` to counter `name` (creating it, even when `n` is 0, so reports list it).
    pub fn add(&mut self, name: &'static str, n: u64) {
        match self.counters.iter_mut().find(|(k, _)| *k == name) {
            Some((_, v)) => *v += n,
            None => self.counters.push((name, n)),
        }
    }
    /// The value of a counter (0 when never bumped).
    pub fn get(&self, name: &str) -> u64 {
        self.counters.iter().find(|(k, _)| *k == name).map(|(_, v)| *v).unwrap_or(0)
    }
    /// Every counter in first-bumped order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        self.counters.iter().copied()
    }
    /// Adds every counter of `other` to this one.
    pub fn merge(&mut self, other: &PassStats) {
        for (k, v) in other.iter() {
            self.add(k, v);
        }
    }
}

/// What a pass may report besides changing the kernel.
#[derive(Debug, Default)]
pub struct PassContext {
    pub stats: PassStats,
    /// Errors stop the pipeline; warnings are kept in the report.
    pub diagnostics: Vec<Diagnostic>,
}

/// The options given to a pass in braces: `fold{approx}`, `name{key=value other}`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PassOptions {
    /// `(key, value)`; `value` is `None` for a bare flag.
    pub items: Vec<(String, Option<String>)>,
}

impl PassOptions {
    /// Fails on any option not in `known`, naming the ones accepted.
    pub fn expect_only(&self, pass: &str, known: &[&str]) -> Result<(), String> {
        for (k, _) in &self.items {
            if !known.contains(&k.as_str()) {
                let accepted = if known.is_empty() {
                    "it takes no options".to_string()
                } else {
                    format!("options: {}", known.join(", "))
                };
                return Err(format!("unknown option `{k}` for pass `{pass}` ({accepted})"));
            }
        }
        Ok(())
    }

    /// A boolean option: absent → `default`; `key` or `key=true` → true; `key=false` → false.
    pub fn flag(&self, pass: &str, key: &str, default: bool) -> Result<bool, String> {
        match self.items.iter().rev().find(|(k, _)| k == key) {
            None => Ok(default),
            Some((_, None)) => Ok(true),
            Some((_, Some(v))) => match v.as_str() {
                "true" | "1" => Ok(true),
                "false" | "0" => Ok(false),
                other => Err(format!("option `{key}` of pass `{pass}` takes true or false, not `{other}`")),
            },
        }
    }
}
