//! `outputs-anchored` (`tests/oracles/match_anchored.py`): outputs of a shape both sides have as
//! many of (more than one), paired by what they read rather than by their slots. Updates run in another order come out in another
//! order; where the context cannot pair them (state computed from constants on a first step),
//! slots would pair a mean over 4 values with one over 16. Each output is described by its
//! anchors, the first instructions down each path that are paired already or an identical
//! subgraph both sides hold once (`h0`: constants included, parameters by shape); two outputs
//! pair where each is the other's strict best by anchors shared and the slot pairs they replace
//! share none. Ties are left to the slots. Then the same by `h0` for look-alikes one side has
//! one more of (one dropped or added), which have no slots: `h1` ranks the inputs of those after
//! the extra one one off, and `exact-h1` would pair each with its neighbour.

use crate::parse::text::FxMap;

use crate::matching::mappings::{Mappings, NONE, OUTPUTS_ANCHORED, R};
use crate::matching::side::MatchSide;

/// Visits over all the walks, per instruction of both sides: past it the phase pairs nothing.
const WALK_BUDGET: usize = 4;

/// A `memo` entry not asked yet (an anchor is an index or `NONE`).
const UNSEEN: u32 = u32::MAX - 1;

impl Mappings<'_> {
    /// `match_anchored.match_outputs_anchored`: outputs by shape, then look-alikes one dropped.
    pub(crate) fn outputs_anchored(&mut self) -> R<()> {
        let (l, r) = (self.l, self.r);
        let shape_l = |a: u32| -> R<i128> { Ok(i128::from(l.stripped[a as usize])) };
        let shape_r = |b: u32| -> R<i128> { Ok(i128::from(r.stripped[b as usize])) };
        // Only where `outputs-balanced` would pair by slot: a shape both sides have as many of,
        // more than one. Where one side has more, the data flow decides already.
        self.anchored_pass(shape_l, shape_r, |x, y| x == y && x > 1)?;
        // Look-alikes (equal `h0`) one side has one more of, both at least two: one was dropped
        // or added. `h1` ranks the inputs of those after it one off, and `exact-h1` would pair
        // each with its neighbour; what each reads that is paired already (its moments, its
        // gradient) names its counterpart, and the extra one ties and stays free.
        let h0_l = |a: u32| Self::hash(l, false, a);
        let h0_r = |b: u32| Self::hash(r, false, b);
        self.anchored_pass(h0_l, h0_r, |x, y| x.abs_diff(y) == 1 && x.min(y) > 1)
    }

    /// The free outputs whose `key` both sides hold as `eligible` counts, paired where each is
    /// the other's strict best by anchors shared (and, where the counts are equal, the slot
    /// pairs they replace share none).
    fn anchored_pass(
        &mut self,
        key_l: impl Fn(u32) -> R<i128>,
        key_r: impl Fn(u32) -> R<i128>,
        eligible: impl Fn(u32, u32) -> bool,
    ) -> R<()> {
        let (l, r) = (self.l, self.r);
        let free_l = free_outputs(l, &self.left);
        let free_r = free_outputs(r, &self.right);
        let kl: Vec<i128> = free_l.iter().map(|&a| key_l(a)).collect::<R<_>>()?;
        let kr: Vec<i128> = free_r.iter().map(|&b| key_r(b)).collect::<R<_>>()?;
        let mut count: FxMap<i128, (u32, u32)> = FxMap::default();
        for &k in &kl {
            count.entry(k).or_default().0 += 1;
        }
        for &k in &kr {
            count.entry(k).or_default().1 += 1;
        }
        // A side's free outputs and their keys, those of a key both sides hold as `eligible` only.
        let shared = |free: Vec<u32>, keys: Vec<i128>| -> (Vec<u32>, Vec<i128>) {
            let eligible_key = |k: i128| count.get(&k).is_some_and(|&(x, y)| eligible(x, y));
            free.into_iter().zip(keys).filter(|&(_, k)| eligible_key(k)).unzip()
        };
        let ((free_l, kl), (free_r, kr)) = (shared(free_l, kl), shared(free_r, kr));
        if free_l.is_empty() || free_r.is_empty() {
            return Ok(());
        }
        // Per side once (`MatchSide::lone_h0`): an `h0` both sides hold once is `once`.
        let (lone_l, lone_r) = (l.lone_h0(), r.lone_h0());
        let mut budget = WALK_BUDGET * (l.order.len() + r.order.len());
        // An instruction's anchor does not depend on the output whose walk meets it: asked once
        // per instruction (`UNSEEN` until then), however many walks overlap there.
        let mut memo = vec![UNSEEN; l.names.len()];
        let mut stamps = vec![0u32; l.names.len()];
        // Anchors as B's instructions, sorted.
        let mut fl: Vec<Vec<u32>> = Vec::with_capacity(free_l.len());
        for (walk, &a) in free_l.iter().enumerate() {
            let mut anchor = |x: u32| -> R<u32> {
                if memo[x as usize] != UNSEEN {
                    return Ok(memo[x as usize]);
                }
                let mut found = NONE;
                if self.left[x as usize] != NONE {
                    found = self.left[x as usize];
                } else if !operands(l, x).is_empty() {
                    let h = Self::hash(l, false, x)?;
                    if lone_l.contains_key(&h) {
                        found = lone_r.get(&h).copied().unwrap_or(NONE);
                    }
                }
                memo[x as usize] = found;
                Ok(found)
            };
            match anchors(l, a, &mut anchor, &mut stamps, walk as u32 + 1, &mut budget)? {
                Some(found) => fl.push(found),
                None => return Ok(()),
            }
        }
        let mut memo = vec![UNSEEN; r.names.len()];
        let mut stamps = vec![0u32; r.names.len()];
        let mut fr: Vec<Vec<u32>> = Vec::with_capacity(free_r.len());
        for (walk, &b) in free_r.iter().enumerate() {
            let mut anchor = |y: u32| -> R<u32> {
                if memo[y as usize] != UNSEEN {
                    return Ok(memo[y as usize]);
                }
                let mut found = NONE;
                if self.right[y as usize] != NONE {
                    found = y;
                } else if !operands(r, y).is_empty() {
                    let h = Self::hash(r, false, y)?;
                    if lone_l.contains_key(&h) && lone_r.contains_key(&h) {
                        found = y;
                    }
                }
                memo[y as usize] = found;
                Ok(found)
            };
            match anchors(r, b, &mut anchor, &mut stamps, walk as u32 + 1, &mut budget)? {
                Some(found) => fr.push(found),
                None => return Ok(()),
            }
        }
        // score[i][j]: anchors A's i-th and B's j-th share (-1: another key, not a candidate).
        let score: Vec<Vec<i64>> = kl
            .iter()
            .zip(&fl)
            .map(|(ka, x)| {
                kr.iter()
                    .zip(&fr)
                    .map(|(kb, y)| {
                        if ka == kb {
                            shared_count(x, y) as i64
                        } else {
                            -1
                        }
                    })
                    .collect()
            })
            .collect();
        // The pair `outputs-balanced` would make: the k-th of a key with the k-th (where the
        // counts are equal; else none, and no slot to guard).
        let mut slot = vec![None; free_l.len()];
        let mut back = vec![None; free_r.len()];
        let mut seen: FxMap<i128, Vec<usize>> = FxMap::default();
        for (j, &k) in kr.iter().enumerate() {
            seen.entry(k).or_default().push(j);
        }
        let mut taken: FxMap<i128, usize> = FxMap::default();
        for (i, &k) in kl.iter().enumerate() {
            let (x, y) = count[&k];
            if x != y {
                continue;
            }
            let n = taken.entry(k).or_default();
            let j = seen[&k][*n];
            *n += 1;
            slot[i] = Some(j);
            back[j] = Some(i);
        }
        for i in 0..free_l.len() {
            let Some(j) = best(score[i].iter().copied()) else {
                continue;
            };
            // Only against slots that share nothing: a slot pair reading anything in common stays.
            if best(score.iter().map(|row| row[j])) == Some(i)
                && slot[i].is_none_or(|s| score[i][s] == 0)
                && back[j].is_none_or(|b| score[b][j] == 0)
            {
                self.add(free_l[i], free_r[j], OUTPUTS_ANCHORED);
            }
        }
        Ok(())
    }
}

/// The outputs not paired yet, each once, in slot order.
fn free_outputs(side: &MatchSide, paired: &[u32]) -> Vec<u32> {
    let mut seen: FxMap<u32, ()> = FxMap::default();
    side.outputs
        .iter()
        .copied()
        .filter(|&o| paired[o as usize] == NONE && seen.insert(o, ()).is_none())
        .collect()
}

fn operands(side: &MatchSide, i: u32) -> &[u32] {
    side.operands(i).unwrap_or(&[])
}

/// The anchors found walking down from `out` (sorted), stopping at each; None once the walks
/// together visited more than `budget` allowed. `stamps[x] == walk` marks `x` seen in this walk
/// (each walk a number of its own, above zero).
fn anchors(
    side: &MatchSide,
    out: u32,
    anchor: &mut impl FnMut(u32) -> R<u32>,
    stamps: &mut [u32],
    walk: u32,
    budget: &mut usize,
) -> R<Option<Vec<u32>>> {
    let mut found: Vec<u32> = Vec::new();
    let mut stack = vec![out];
    while let Some(x) = stack.pop() {
        if stamps[x as usize] == walk {
            continue;
        }
        stamps[x as usize] = walk;
        if *budget == 0 {
            return Ok(None);
        }
        *budget -= 1;
        let a = anchor(x)?;
        if a != NONE {
            found.push(a);
        } else {
            stack.extend_from_slice(operands(side, x));
        }
    }
    found.sort_unstable();
    found.dedup();
    Ok(Some(found))
}

/// How many values two sorted lists share.
fn shared_count(x: &[u32], y: &[u32]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < x.len() && j < y.len() {
        match x[i].cmp(&y[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}

/// The position of the one highest score, above zero (None on a tie; -1 is no candidate).
fn best(scores: impl Iterator<Item = i64>) -> Option<usize> {
    let (mut top, mut at, mut ties) = (0i64, None, 0);
    for (k, s) in scores.enumerate() {
        if s > top {
            (top, at, ties) = (s, Some(k), 1);
        } else if s == top && top > 0 {
            ties += 1;
        }
    }
    if ties == 1 {
        at
    } else {
        None
    }
}
