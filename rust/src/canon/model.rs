//! What canonicalization gives (`xlagraph/canonical/model.py`'s types, by instruction index),
//! and how it fails.

use crate::parse::text::Comp;

pub(crate) const NONE: u32 = u32::MAX;

pub enum Failure {
    /// What `canonicalize` must raise: message and the instruction's line (0-based in the text).
    Bad(String, u32),
}

pub(crate) type R<T> = Result<T, Failure>;

/// One computation in canonical form; instruction vectors are indexed like `Comp::insts`.
pub struct CompCanon {
    pub comp: usize,
    /// Live instructions, operands first.
    pub order: Vec<u32>,
    /// Live instructions in the order they were first entered (`operands`' key order).
    pub entered: Vec<u32>,
    /// Per instruction: NONE, or its forwarded operand list in `fops`.
    pub fidx: Vec<u32>,
    pub fops: Vec<Vec<u32>>,
    pub outputs: Vec<u32>,
    pub keys: Vec<u64>,
    pub h0: Vec<i128>,
    pub h1: Vec<i128>,
    /// Parameters (and wrapped tuple elements) in `order`, with their numbers.
    pub params: Vec<(u32, i64)>,
    /// `param_rank` in its key order.
    pub ranks: Vec<(u32, i64)>,
    pub layouts: Vec<(u32, String)>,
    pub walk: Vec<u32>,
    pub dead: Vec<u32>,
    pub plumbing: Vec<u32>,
    pub hash: i64,
    /// The instructions with a side effect among `dead` and `plumbing`, in that order, and what
    /// they do, hashed (effects.rs).
    pub effects: Vec<(u32, i128)>,
}

impl CompCanon {
    pub fn ops<'s>(&'s self, comp: &'s Comp, i: u32) -> &'s [u32] {
        let f = self.fidx[i as usize];
        if f == NONE {
            &comp.insts[i as usize].operands
        } else {
            &self.fops[f as usize]
        }
    }
}

pub struct ModuleCanon {
    /// Callees first, as the oracle's `_callees_first` orders them.
    pub comps: Vec<CompCanon>,
    pub fingerprint: String,
    pub order: String,
}
