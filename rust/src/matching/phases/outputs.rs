//! `match._match_outputs`: the remaining outputs in order, among equal shapes (and first equal
//! opcodes); output `i` with output `i` first where both sides keep as many and the shapes are
//! shards of each other; in order, B's output in a slot where A repeats a tensor paired with
//! another is skipped. Balanced (shapes both sides have as many of) before all.

use crate::parse::text::FxMap;

use crate::matching::mappings::{Mappings, NONE, OUTPUTS};
use crate::matching::side::MatchSide;

impl Mappings<'_> {
    /// `match._match_outputs`.
    pub(crate) fn outputs(
        &mut self,
        sent_l: &[bool],
        sent_r: &[bool],
        resharded: bool,
        balanced_only: bool,
    ) {
        let (l, r) = (self.l, self.r);
        let slots = l.outputs.len() == r.outputs.len() && !r.outputs.is_empty();
        // Positions in `outputs` of each output (the last, as a dict comprehension keeps).
        let mut position: FxMap<u32, usize> = FxMap::default();
        if slots {
            for (i, &a) in l.outputs.iter().enumerate() {
                position.insert(a, i);
            }
        }
        // `sent` is looked up by name; outputs' flags are given by position.
        let sent = |side: &MatchSide, flags: &[bool]| -> FxMap<u32, bool> {
            side.outputs.iter().enumerate().filter(|&(k, _)| flags[k]).map(|(_, &o)| (o, true)).collect()
        };
        let (is_sent_l, is_sent_r) = (sent(l, sent_l), sent(r, sent_r));
        // `match._repeats_at`: B's outputs in the slots where A returns a tensor a second time.
        let mut repeats: FxMap<u32, Vec<u32>> = FxMap::default();
        if slots {
            let mut seen: FxMap<u32, ()> = FxMap::default();
            for (&a, &b) in l.outputs.iter().zip(&r.outputs) {
                if seen.insert(a, ()).is_some() {
                    repeats.entry(b).or_default().push(a);
                }
            }
        }
        for same_opcode in [true, false] {
            let free_right: Vec<u32> = r.outputs.iter().copied().filter(|&b| !self.rp(b)).collect();
            let free_left: Vec<u32> = l.outputs.iter().copied().filter(|&a| !self.lp(a)).collect();
            let at: FxMap<u32, usize> = free_right.iter().enumerate().map(|(k, &b)| (b, k)).collect();
            let mut skip: FxMap<u32, ()> = FxMap::default();
            if balanced_only {
                let mut count: FxMap<u32, (i64, i64)> = FxMap::default();
                for &b in &free_right {
                    count.entry(r.stripped[b as usize]).or_default().1 += 1;
                }
                for &a in &free_left {
                    count.entry(l.stripped[a as usize]).or_default().0 += 1;
                }
                for (s, (x, y)) in count {
                    if x != y {
                        skip.insert(s, ());
                    }
                }
            }
            let mut start = 0usize;
            for &a in &free_left {
                if self.lp(a) || is_sent_l.contains_key(&a) {
                    continue;
                }
                let (shape, opcode) = (l.stripped[a as usize], l.opcode[a as usize]);
                if slots {
                    let b = r.outputs[position[&a]];
                    if let Some(&k) = at.get(&b) {
                        if !self.rp(b) && !is_sent_r.contains_key(&b) {
                            let (shape_b, opcode_b) =
                                (r.stripped[b as usize], r.opcode[b as usize]);
                            let (da, db) = (
                                &l.dims_table[l.dims[a as usize] as usize],
                                &r.dims_table[r.dims[b as usize] as usize],
                            );
                            if opcode == opcode_b
                                && shape != shape_b
                                && sharded_alike(da, db)
                                && (resharded || da == db)
                            {
                                self.add(a, b, OUTPUTS);
                                start = start.max(k + 1);
                                continue;
                            }
                        }
                    }
                }
                if skip.contains_key(&shape) {
                    continue;
                }
                for (k, &b) in free_right.iter().enumerate().skip(start) {
                    if self.rp(b) || shape != r.stripped[b as usize] || is_sent_r.contains_key(&b) {
                        continue;
                    }
                    // A repeat paired with another: in order, A's outputs would shift onto its slot.
                    let held = |x: &u32| self.left[*x as usize] != NONE && self.left[*x as usize] != b;
                    if repeats.get(&b).is_some_and(|xs| xs.iter().any(held)) {
                        continue;
                    }
                    if same_opcode && opcode != r.opcode[b as usize] {
                        continue;
                    }
                    self.add(a, b, OUTPUTS);
                    start = k + 1;
                    break;
                }
            }
        }
    }
}

/// `match._sharded_alike` on dims already read (`match._dims`).
fn sharded_alike(x: &Option<Vec<i64>>, y: &Option<Vec<i64>>) -> bool {
    match (x, y) {
        (Some(x), Some(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|(&p, &q)| p == q || (p.min(q) > 1 && p.max(q).rem_euclid(p.min(q)) == 0))
        }
        _ => false,
    }
}
