//! `bottom_up.match_bottom_up`: an instruction whose operands are paired, with the best-scoring
//! user of their counterparts of the same opcode and rank.

use crate::matching::mappings::{Mappings, BOTTOM_UP, NONE, R};

impl Mappings<'_> {
    /// `bottom_up.match_bottom_up`.
    pub(crate) fn bottom_up(&mut self) -> R<()> {
        let (l, r) = (self.l, self.r);
        let mut mapped: Vec<u32> = Vec::new();
        for &b in &r.order {
            if self.rp(b) {
                continue;
            }
            let ob = self.ops_r(b)?;
            mapped.clear();
            mapped.extend(
                ob.iter()
                    .filter(|&&o| self.rp(o))
                    .map(|&o| self.right[o as usize]),
            );
            if mapped.is_empty() {
                continue;
            }
            let rank = r.rank[b as usize];
            let (mut best, mut best_score) = (NONE, 0u32);
            for &counterpart in &mapped {
                for &a in l.users(counterpart) {
                    if self.lp(a)
                        || l.opcode[a as usize] != r.opcode[b as usize]
                        || l.rank[a as usize] != rank
                    {
                        continue;
                    }
                    let oa = self.ops_l(a)?;
                    let agree = oa
                        .iter()
                        .zip(ob.iter())
                        .filter(|(&x, &y)| self.left[x as usize] == y)
                        .count() as u32;
                    let score = 2 * agree + u32::from(l.shape[a as usize] == r.shape[b as usize]);
                    if score > best_score {
                        best = a;
                        best_score = score;
                    }
                }
            }
            if best != NONE {
                self.add(best, b, BOTTOM_UP);
            }
        }
        Ok(())
    }
}
