//! `mappings.Mappings` by index: the pairing the phases (phases/) build in turn, the first to
//! claim a pair keeping it, and what each pair records (the phase that made it).

use crate::matching::side::MatchSide;

pub(crate) const NONE: u32 = u32::MAX;

pub(crate) const OUTPUTS_EXACT: u8 = 0;
pub(crate) const OUTPUTS: u8 = 1;
pub(crate) const TOP_DOWN: u8 = 2;
pub(crate) const TOP_DOWN_LENIENT: u8 = 3;
pub(crate) const EXACT: u8 = 4;
pub(crate) const EXACT_SHAPE: u8 = 5;
pub(crate) const BOTTOM_UP: u8 = 6;
pub(crate) const PARAMETERS: u8 = 7;
pub(crate) const OUTPUTS_CONTEXT: u8 = 8;
pub(crate) const OUTPUTS_ANCHORED: u8 = 9;
pub(crate) const SUM_TERMS: u8 = 10;
pub(crate) const TAGS: [&str; 11] = [
    "outputs-exact",
    "outputs",
    "top-down",
    "top-down-lenient",
    "exact",
    "exact-shape",
    "bottom-up",
    "parameters",
    "outputs-context",
    "outputs-anchored",
    "sum-terms",
];

/// A hash the Python would have looked up in a dictionary that lacks it (a KeyError there): the
/// matcher stops and the caller runs the Python reference, which raises as it always did.
pub(crate) struct Missing;
pub(crate) type R<T> = Result<T, Missing>;

/// `mappings.Mappings`, by index: the pairs made so far (`left` / `right`: each side's
/// counterpart, NONE where free), the phase that made each (`tag`), in order (`pairs`), and the
/// pairs strict top-down already expanded.
pub(crate) struct Mappings<'s> {
    pub(crate) l: &'s MatchSide,
    pub(crate) r: &'s MatchSide,
    pub(crate) left: Vec<u32>,
    pub(crate) right: Vec<u32>,
    pub(crate) tag: Vec<u8>,
    pub(crate) pairs: Vec<(u32, u32)>,
    pub(crate) expanded: Vec<bool>,
}

impl<'s> Mappings<'s> {
    pub(crate) fn add(&mut self, a: u32, b: u32, tag: u8) -> bool {
        if self.left[a as usize] != NONE || self.right[b as usize] != NONE {
            return false;
        }
        self.left[a as usize] = b;
        self.right[b as usize] = a;
        self.tag[a as usize] = tag;
        self.pairs.push((a, b));
        true
    }
    pub(crate) fn lp(&self, a: u32) -> bool {
        self.left[a as usize] != NONE
    }
    pub(crate) fn rp(&self, b: u32) -> bool {
        self.right[b as usize] != NONE
    }
    pub(crate) fn hash(side: &MatchSide, key_h1: bool, i: u32) -> R<i128> {
        if !side.has_h[i as usize] {
            return Err(Missing);
        }
        Ok(if key_h1 {
            side.h1[i as usize]
        } else {
            side.h0[i as usize]
        })
    }
    pub(crate) fn ops_l(&self, i: u32) -> R<&'s [u32]> {
        self.l.operands(i).ok_or(Missing)
    }
    pub(crate) fn ops_r(&self, i: u32) -> R<&'s [u32]> {
        self.r.operands(i).ok_or(Missing)
    }

    /// `match._complete`.
    pub(crate) fn complete(&self, left_side: bool) -> bool {
        let (side, paired, count) = if left_side {
            (self.l, &self.left, self.pairs.len())
        } else {
            (self.r, &self.right, self.pairs.len())
        };
        if count < side.order.len() {
            return false;
        }
        side.order.iter().all(|&i| paired[i as usize] != NONE)
            && side.params.iter().all(|&(i, _)| paired[i as usize] != NONE)
    }
}
