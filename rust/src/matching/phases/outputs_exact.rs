//! `match._match_outputs_exact`: outputs with equal structural hash (`h1`), paired in order with
//! their whole subgraphs. Look-alike outputs (equal `h0`) as many on both sides pair the k-th
//! with the k-th only: `h1` ranks inputs over the whole graph, so an input dropped before them
//! shifts every rank by one and equal `h1` would pair each look-alike with its neighbour (a
//! rotation); the later phases pair those by slot. Where one side has more of them (outputs
//! dropped or added), `h1`'s ranks shift past the ones missing, so equal `h1` pairs along the
//! shift: members the data-flow context pairs (`context`, either side) are left to
//! `outputs-context` (a dropped AdamW second moment, whose computation stays; two SGD updates
//! of a mixture's look-alike experts dropped, issue 37).

use std::collections::VecDeque;

use crate::parse::text::FxMap;

use crate::matching::mappings::{Mappings, NONE, OUTPUTS_EXACT, R};
use crate::matching::side::MatchSide;
use crate::matching::sum_terms::numbered;

/// Each output's place among the outputs of its `h0` (k-th look-alike), and each `h0`'s count.
fn look_alike_ranks(side: &MatchSide) -> R<(Vec<u32>, FxMap<i128, u32>)> {
    let mut count: FxMap<i128, u32> = FxMap::default();
    let mut ranks = Vec::with_capacity(side.outputs.len());
    for &o in &side.outputs {
        let n = count.entry(Mappings::hash(side, false, o)?).or_default();
        ranks.push(*n);
        *n += 1;
    }
    Ok((ranks, count))
}

impl Mappings<'_> {
    /// `match._written_elsewhere`: B's look-alikes of output `a` (its `h0`) that are, inputs by
    /// number included, another free look-alike of A as written, where `a` itself is none of
    /// B's: `h1` ranks inputs by a walk that a change elsewhere reorders (one of two towers
    /// regrouped), and would pair `a` with its twin's counterpart; the inputs as written say
    /// that one is its twin's.
    fn written_elsewhere(&self, a: u32) -> R<Vec<u32>> {
        let (l, r) = (self.l, self.r);
        let h = Self::hash(l, false, a)?;
        let family = |s: &MatchSide| -> R<Vec<u32>> {
            let mut fam: Vec<u32> = Vec::new();
            for &o in &s.outputs {
                if !fam.contains(&o) && Self::hash(s, false, o)? == h {
                    fam.push(o);
                }
            }
            Ok(fam)
        };
        let (fam_l, fam_r) = (family(l)?, family(r)?);
        let (Some(nl), Some(nr)) = (numbered(l, &fam_l)?, numbered(r, &fam_r)?) else {
            return Ok(Vec::new());
        };
        let own = fam_l.iter().position(|&o| o == a).map(|k| nl[k]);
        if own.map_or(true, |v| nr.contains(&v)) {
            return Ok(Vec::new());
        }
        let others: Vec<i128> = (fam_l.iter().zip(&nl))
            .filter(|&(&o, _)| o != a && !self.lp(o))
            .map(|(_, &v)| v)
            .collect();
        Ok((fam_r.iter().zip(&nr))
            .filter(|&(_, v)| others.contains(v))
            .map(|(&o, _)| o)
            .collect())
    }

    /// `match._match_outputs_exact`.
    pub(crate) fn outputs_exact(&mut self, context: &[(u32, u32)]) -> R<()> {
        let (l, r) = (self.l, self.r);
        let mut ctx_l = vec![false; l.names.len()];
        let mut ctx_r = vec![false; r.names.len()];
        for &(i, j) in context {
            ctx_l[l.outputs[i as usize] as usize] = true;
            ctx_r[r.outputs[j as usize] as usize] = true;
        }
        let (rank_l, count_l) = look_alike_ranks(l)?;
        let (rank_r, count_r) = look_alike_ranks(r)?;
        let decided = self.follow_parameters()?;
        let mut pool: FxMap<i128, VecDeque<(u32, u32)>> = FxMap::default();
        for (k, &b) in r.outputs.iter().enumerate() {
            pool.entry(Self::hash(r, true, b)?)
                .or_default()
                .push_back((b, rank_r[k]));
        }
        for (k, &a) in l.outputs.iter().enumerate() {
            // A look-alike one side has more of, decided by its own inputs (follow_params.rs).
            if let Some(&b) = decided.get(&a) {
                if b != NONE && !self.lp(a) && !self.rp(b) {
                    self.add(a, b, OUTPUTS_EXACT);
                    self.zip_subgraphs(a, b, true, OUTPUTS_EXACT)?;
                }
                continue;
            }
            let h = Self::hash(l, true, a)?;
            let Some(candidates) = pool.get_mut(&h) else {
                continue;
            };
            while let Some(&(c, _)) = candidates.front() {
                if self.right[c as usize] != NONE {
                    candidates.pop_front();
                } else {
                    break;
                }
            }
            if candidates.is_empty() || self.lp(a) {
                continue;
            }
            let h0 = Self::hash(l, false, a)?;
            let n = count_l.get(&h0).copied().unwrap_or(0);
            let m = count_r.get(&h0).copied().unwrap_or(0);
            let shifted = m > 0 && n != m;
            if shifted && ctx_l[a as usize] {
                continue; // the context pairs it (outputs-context)
            }
            let at = if shifted {
                // Free candidates the context pairs with another are left to it, and those
                // another look-alike is as written (`written_elsewhere`) to that one.
                let mine = self.written_elsewhere(a)?;
                candidates.iter().position(|&(c, _)| {
                    self.right[c as usize] == NONE && !ctx_r[c as usize] && !mine.contains(&c)
                })
            } else if n > 1 && m == n {
                // Free candidates of another place are left for the look-alike they belong to.
                candidates
                    .iter()
                    .position(|&(c, place)| place == rank_l[k] && self.right[c as usize] == NONE)
            } else {
                Some(0)
            };
            let Some(at) = at else {
                continue;
            };
            let (b, _) = candidates.remove(at).unwrap_or((NONE, 0));
            self.add(a, b, OUTPUTS_EXACT);
            self.zip_subgraphs(a, b, true, OUTPUTS_EXACT)?;
        }
        Ok(())
    }
}
