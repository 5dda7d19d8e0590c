//! `match._match_parameters`: the remaining parameters by shape, in number order, then the rest
//! by number where both sides have as many left.

use crate::matching::mappings::{Mappings, PARAMETERS};
use crate::matching::side::MatchSide;

impl Mappings<'_> {
    /// `match._match_parameters`.
    pub(crate) fn parameters(&mut self) {
        let (l, r) = (self.l, self.r);
        // A side's parameters not paired yet (`paired`: `lp` or `rp`), in number order.
        let free = |side: &MatchSide, paired: &dyn Fn(u32) -> bool| -> Vec<(u32, i64)> {
            let mut v: Vec<(u32, i64)> = side.params.iter().copied().filter(|&(p, _)| !paired(p)).collect();
            v.sort_by_key(|&(_, n)| n);
            v
        };
        let free_left = free(l, &|p| self.lp(p));
        let free_right = free(r, &|p| self.rp(p));
        for &(a, _) in &free_left {
            for &(b, _) in &free_right {
                if !self.rp(b) && l.stripped[a as usize] == r.stripped[b as usize] {
                    self.add(a, b, PARAMETERS);
                    break;
                }
            }
        }
        let rest_left: Vec<u32> = free_left.iter().map(|p| p.0).filter(|&p| !self.lp(p)).collect();
        let rest_right: Vec<u32> = free_right.iter().map(|p| p.0).filter(|&p| !self.rp(p)).collect();
        if rest_left.len() == rest_right.len() {
            for (a, b) in rest_left.into_iter().zip(rest_right) {
                self.add(a, b, PARAMETERS);
            }
        }
    }
}
