//! `match._match_parameters`: the remaining parameters by shape, in number order, then the rest
//! by number where both sides have as many left.

use crate::matching::mappings::{Mappings, PARAMETERS};

impl Mappings<'_> {
    /// `match._match_parameters`.
    pub(crate) fn parameters(&mut self) {
        let (l, r) = (self.l, self.r);
        let mut free_left: Vec<(u32, i64)> = l
            .params
            .iter()
            .copied()
            .filter(|&(p, _)| !self.lp(p))
            .collect();
        let mut free_right: Vec<(u32, i64)> = r
            .params
            .iter()
            .copied()
            .filter(|&(p, _)| !self.rp(p))
            .collect();
        free_left.sort_by_key(|&(_, n)| n);
        free_right.sort_by_key(|&(_, n)| n);
        for &(a, _) in &free_left {
            for &(b, _) in &free_right {
                if !self.rp(b) && l.stripped[a as usize] == r.stripped[b as usize] {
                    self.add(a, b, PARAMETERS);
                    break;
                }
            }
        }
        let rest_left: Vec<u32> = free_left
            .iter()
            .map(|p| p.0)
            .filter(|&p| !self.lp(p))
            .collect();
        let rest_right: Vec<u32> = free_right
            .iter()
            .map(|p| p.0)
            .filter(|&p| !self.rp(p))
            .collect();
        if rest_left.len() == rest_right.len() {
            for (a, b) in rest_left.into_iter().zip(rest_right) {
                self.add(a, b, PARAMETERS);
            }
        }
    }
}
