//! What instructions name: PTX type suffixes, the symbols an entry declares (registers, shared,
//! local, parameter and module `.const` variables) in nested `{ }` scopes, and the placement of the `.extern
//! .shared` array. The parser ([`crate::parse`]) fills the scopes as it reads declarations; the
//! decoder ([`crate::decode`]) resolves operands against them: the parser calls the decoder, and
//! the decoder needs only this module, so the two import each other in no circle.
//!
//! Guarantees: a name is declared at most once per scope ([`Scopes::declare`] refuses a second
//! declaration with its line and column); lookup finds the innermost declaration.

use crate::prog::RegId;
use crate::{ParseError, ScalarType};
use std::collections::HashMap;

/// The scalar type of a PTX type suffix without its dot (`f32`, `pred`).
pub fn scalar_type(s: &str) -> Option<ScalarType> {
    use ScalarType::*;
    Some(match s {
        "b8" => B8,
        "b16" => B16,
        "b32" => B32,
        "b64" => B64,
        "u8" => U8,
        "u16" => U16,
        "u32" => U32,
        "u64" => U64,
        "s8" => S8,
        "s16" => S16,
        "s32" => S32,
        "s64" => S64,
        "f16" => F16,
        "bf16" => BF16,
        "f32" => F32,
        "f64" => F64,
        "pred" => Pred,
        _ => return None,
    })
}

/// A named thing in an entry's scope.
#[derive(Clone, Copy, Debug)]
pub enum Sym {
    Reg(RegId),
    /// A shared variable at this offset of the block's shared memory.
    Shared(u32),
    /// A local variable at this offset of the thread's local memory.
    Local(u32),
    /// A kernel parameter at this offset of the parameter space.
    Param(u32),
    /// A module-level `.const` variable at this offset of the module's constant memory.
    Const(u32),
    /// A `.param` variable declared in a body (a call's argument or return slot), or a callee's
    /// parameter naming one: at this offset of the thread's local memory.
    CallParam(u32),
}

/// Name resolution for one entry: nested `{ }` scopes of registers and variables.
pub struct Scopes {
    pub scopes: Vec<HashMap<String, Sym>>,
    pub nregs: u32,
    /// Module-level `.global` variables: declared (and skipped), not emulated; an instruction
    /// naming one is refused, saying so.
    pub unsupported_globals: Vec<String>,
}

impl Scopes {
    /// The error for name `n` that no scope declares.
    pub fn undeclared(&self, n: &str, what: &str) -> String {
        if self.unsupported_globals.iter().any(|g| g == n) {
            format!("module-level `.global` variable `{n}` is not supported by the emulator (it is used here)")
        } else {
            format!("undeclared {what} `{n}`")
        }
    }
}

impl Scopes {
    pub fn lookup(&self, name: &str) -> Option<Sym> {
        self.scopes.iter().rev().find_map(|s| s.get(name).copied())
    }

    pub fn declare(&mut self, name: String, sym: Sym, line: u32, col: u32) -> Result<(), ParseError> {
        let top = self.scopes.last_mut().expect("a scope is always open");
        if top.contains_key(&name) {
            return Err(ParseError { line, col, message: format!("`{name}` is declared twice in this scope") });
        }
        top.insert(name, sym);
        Ok(())
    }
}

/// What decoding needs to know about the entry's shared memory.
pub struct SharedInfo {
    /// Offset of the `.extern .shared` array with the declarations seen so far.
    pub dynamic_offset: u32,
}

/// Offset placeholder of the `.extern .shared` array: resolved at launch to the kernel's
/// `dynamic_shared_offset`.
pub const DYNAMIC_SHARED: u32 = u32::MAX;
