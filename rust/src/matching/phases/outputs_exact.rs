//! `match._match_outputs_exact`: outputs with equal structural hash (`h1`), paired in order with
//! their whole subgraphs.

use std::collections::VecDeque;

use crate::parse::text::FxMap;

use crate::matching::mappings::{Mappings, NONE, OUTPUTS_EXACT, R};

impl Mappings<'_> {
    /// `match._match_outputs_exact`.
    pub(crate) fn outputs_exact(&mut self) -> R<()> {
        let (l, r) = (self.l, self.r);
        let mut pool: FxMap<i128, VecDeque<u32>> = FxMap::default();
        for &b in &r.outputs {
            pool.entry(Self::hash(r, true, b)?)
                .or_default()
                .push_back(b);
        }
        for &a in &l.outputs {
            let h = Self::hash(l, true, a)?;
            let Some(candidates) = pool.get_mut(&h) else {
                continue;
            };
            while let Some(&c) = candidates.front() {
                if self.right[c as usize] != NONE {
                    candidates.pop_front();
                } else {
                    break;
                }
            }
            if !candidates.is_empty() && !self.lp(a) {
                let b = candidates.pop_front().unwrap_or(NONE);
                self.add(a, b, OUTPUTS_EXACT);
                self.zip_subgraphs(a, b, true, OUTPUTS_EXACT)?;
            }
        }
        Ok(())
    }
}
