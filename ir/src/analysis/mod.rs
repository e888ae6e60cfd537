//! Analyses over verified IR, each written once and shared by the verifier, the passes, the
//! interpreter and the fuzzer: [`cfg`] (the petgraph CFG, dominators and post-dominators with an
//! explicit exit policy), [`loops`] (natural loops per header, irreducibility), [`provenance`]
//! (which parameter or shared array a pointer derives from), [`callgraph`] (the call graph of a
//! module's functions and a callees-first order), [`effects`] (what kernels and launches do to
//! their buffers; a launch graph's dependency DAG), [`warps`] (the whole-warps launch precondition of
//! full-mask collectives), [`ranges`] (upper bounds of `u32` values, for no-wrap proofs), [`available`] (values recorded in
//! dominating blocks, for dominator-based reuse).

pub mod available;
pub mod callgraph;
pub mod cfg;
pub mod effects;
pub mod loops;
pub mod provenance;
pub mod ranges;
pub mod uniformity;
pub mod warps;
