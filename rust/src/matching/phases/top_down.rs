//! `top_down.py`: from paired instructions, their operands at the same position with the same
//! opcode (strict) or any opcode but leaves (lenient), commutative operands aligned first;
//! subgraphs with equal hashes are paired whole. Not along torch_xla's token chain of all-reduces
//! (`collective_chain.rs`).

use crate::matching::mappings::{Mappings, NONE, R, SUM_TERMS, TOP_DOWN, TOP_DOWN_LENIENT};
use crate::matching::side::{intern, MatchSide};
use crate::matching::sum_terms::numbered;

impl Mappings<'_> {
    /// `top_down._open_pairs`.
    fn open_pairs(&self) -> Vec<(u32, u32)> {
        let (l, r) = (self.l, self.r);
        let free_left: Vec<u32> = l.order.iter().copied().filter(|&a| !self.lp(a)).collect();
        let free_right: Vec<u32> = r.order.iter().copied().filter(|&b| !self.rp(b)).collect();
        if free_left.len() + free_right.len() >= self.pairs.len() {
            return self.pairs.clone();
        }
        // A side's paired instructions (`paired`: `lp` or `rp`) that read a free one.
        let reads_free = |side: &MatchSide, free: &[u32], paired: &dyn Fn(u32) -> bool| -> Vec<bool> {
            let mut flags = vec![false; side.names.len()];
            for &n in free {
                for &u in side.users(n) {
                    flags[u as usize] |= paired(u);
                }
            }
            flags
        };
        let with_free_left = reads_free(l, &free_left, &|u| self.lp(u));
        let with_free_right = reads_free(r, &free_right, &|u| self.rp(u));
        self.pairs
            .iter()
            .copied()
            .filter(|&(a, _)| {
                with_free_left[a as usize] && with_free_right[self.left[a as usize] as usize]
            })
            .collect()
    }

    /// `top_down.match_top_down`.
    pub(crate) fn top_down(&mut self, strict: bool) -> R<()> {
        let (l, r) = (self.l, self.r);
        let tag = if strict { TOP_DOWN } else { TOP_DOWN_LENIENT };
        let mut stack = self.open_pairs();
        let by_content = self.same_chains();
        if strict {
            stack.retain(|&(a, _)| !self.expanded[a as usize]);
        }
        while let Some((a, b)) = stack.pop() {
            if strict {
                if self.expanded[a as usize] {
                    continue;
                }
                self.expanded[a as usize] = true;
            }
            let (Some(oa), Some(ob)) = (l.operands(a), r.operands(b)) else {
                continue;
            };
            if oa.len() != ob.len() {
                continue;
            }
            let commutative = oa.len() > 1 && l.commutative[a as usize];
            let (oa, ob): (Vec<u32>, Vec<u32>) = if commutative {
                if oa.iter().all(|&x| self.lp(x)) || ob.iter().all(|&y| self.rp(y)) {
                    continue;
                }
                // The terms of a sum that changed places pair by content (sum_terms.rs), tagged
                // so that the diagnosis can name the reordering.
                if let Some(pairs) = self.reordered_terms(a, b)? {
                    for (x, y) in pairs {
                        if self.add(x, y, SUM_TERMS) {
                            self.descend(x, y, tag, &mut stack)?;
                        }
                    }
                    continue;
                }
                let free = oa.len() == 2
                    && !oa.iter().any(|&x| self.lp(x))
                    && !ob.iter().any(|&y| self.rp(y));
                let twins = if free {
                    self.twins_as_written(oa, ob)?
                } else {
                    None
                };
                match twins {
                    Some(v) => v,
                    None => self.align_commutative(oa, ob)?,
                }
            } else {
                (oa.to_vec(), ob.to_vec())
            };
            for (j, (&x, &y)) in oa.iter().zip(ob.iter()).enumerate() {
                if self.lp(x) || self.rp(y) {
                    continue;
                }
                // Where both graphs chain the same all-reduces, a token handed along the chain
                // says which was issued before, not which is which: they pair by what they reduce.
                if by_content && !commutative && (l.chained(a, j) || r.chained(b, j)) {
                    continue;
                }
                let (ox, oy) = (l.opcode[x as usize], r.opcode[y as usize]);
                if ox != oy {
                    if strict || l.leaf[x as usize] || r.leaf[y as usize] {
                        continue;
                    }
                    if l.stripped[x as usize] != r.stripped[y as usize] {
                        continue;
                    }
                }
                self.descend(x, y, tag, &mut stack)?;
            }
        }
        Ok(())
    }

    /// Pairs the free `x` and `y` (or keeps their pair) and, unless they are leaves, their equal
    /// subgraphs whole and their operands next.
    fn descend(&mut self, x: u32, y: u32, tag: u8, stack: &mut Vec<(u32, u32)>) -> R<()> {
        self.add(x, y, tag);
        if !self.ops_l(x)?.is_empty() {
            if Self::hash(self.l, true, x)? == Self::hash(self.r, true, y)? {
                self.zip_subgraphs(x, y, true, tag)?;
            }
            stack.push((x, y));
        }
        Ok(())
    }

    /// `top_down._same_chains`: both sides chain all-reduces of the same shapes (as many of
    /// each), in whatever order: the chain is the order alone. Where they chain others (a layer
    /// more, buckets regrouped), its positions are what pairs them, as before.
    fn same_chains(&self) -> bool {
        let all_reduce = intern("all-reduce");
        let shapes = |s: &MatchSide| {
            let mut v: Vec<u32> = (s.chain.iter())
                .filter(|&&(x, _)| s.opcode[x as usize] == all_reduce)
                .map(|&(x, _)| s.stripped[x as usize])
                .collect();
            v.sort_unstable();
            v
        };
        let (a, b) = (shapes(self.l), shapes(self.r));
        !a.is_empty() && a == b
    }

    /// The `h0` (`h1` where `key_h1`) of two operands of A and two of B, in that order.
    fn two_by_two(&self, oa: &[u32], ob: &[u32], key_h1: bool) -> R<[i128; 4]> {
        let (l, r) = (self.l, self.r);
        Ok([
            Self::hash(l, key_h1, oa[0])?,
            Self::hash(l, key_h1, oa[1])?,
            Self::hash(r, key_h1, ob[0])?,
            Self::hash(r, key_h1, ob[1])?,
        ])
    }

    /// `top_down._twins_as_written`: two look-alike operands (one `h0` for all four, none paired
    /// yet) that `h1` does not pair both ways (its ranks shifted: a change elsewhere reordered
    /// the walk that numbers the inputs) paired by the inputs they read as written, where those
    /// pair both; else None (the rules of `align_commutative`). `p24 * p23` on both sides is not
    /// two inputs crossed.
    fn twins_as_written(&self, oa: &[u32], ob: &[u32]) -> R<Option<(Vec<u32>, Vec<u32>)>> {
        let (l, r) = (self.l, self.r);
        let (x0, x1, y0, y1) = (oa[0], oa[1], ob[0], ob[1]);
        let h0 = self.two_by_two(oa, ob, false)?;
        if h0.iter().any(|&h| h != h0[0]) {
            return Ok(None);
        }
        let h1 = self.two_by_two(oa, ob, true)?;
        let both = (h1[0] == h1[2] && h1[1] == h1[3]) || (h1[0] == h1[3] && h1[1] == h1[2]);
        if h1[0] == h1[1] || both {
            return Ok(None); // h1 pairs both: `align_commutative` follows it
        }
        let (Some(nl), Some(nr)) = (numbered(l, &[x0, x1])?, numbered(r, &[y0, y1])?) else {
            return Ok(None);
        };
        Ok(if nl[0] == nl[1] {
            None
        } else if nl == nr {
            Some((vec![x0, x1], vec![y0, y1]))
        } else if nl[0] == nr[1] && nl[1] == nr[0] {
            Some((vec![x0, x1], vec![y1, y0]))
        } else {
            None
        })
    }

    /// `top_down._align_commutative` (and `_align_two`).
    fn align_commutative(&self, oa: &[u32], ob: &[u32]) -> R<(Vec<u32>, Vec<u32>)> {
        let (l, r) = (self.l, self.r);
        if oa.len() == 2 {
            let (x0, x1, y0, y1) = (oa[0], oa[1], ob[0], ob[1]);
            let straight = (vec![x0, x1], vec![y0, y1]);
            // The Python builds the three rules' keys before trying the first.
            let h = self.two_by_two(oa, ob, true)?;
            // Rule 0: already paired (None never equals a name).
            let (m0, m1) = (self.left[x0 as usize], self.left[x1 as usize]);
            let keys0 = [m0, m1, y0, y1];
            if let Some(v) = Self::order_two_by(keys0, |k| k != NONE, oa, ob) {
                return Ok(v);
            }
            if let Some(v) = Self::order_two_by(h, |_| true, oa, ob) {
                return Ok(v);
            }
            let h0 = self.two_by_two(oa, ob, false)?;
            if let Some(v) = Self::order_two_by(h0, |_| true, oa, ob) {
                return Ok(v);
            }
            let o = [
                l.opcode[x0 as usize],
                l.opcode[x1 as usize],
                r.opcode[y0 as usize],
                r.opcode[y1 as usize],
            ];
            if let Some(v) = Self::order_two_by(o, |_| true, oa, ob) {
                return Ok(v);
            }
            return Ok(straight);
        }
        let mut rest_a = oa.to_vec();
        let mut rest_b = ob.to_vec();
        let mut first_a = Vec::new();
        let mut first_b = Vec::new();
        for rule in 0..4 {
            let snapshot = rest_a.clone();
            for &x in &snapshot {
                let mut found = None;
                for &y in &rest_b {
                    let ok = match rule {
                        0 => self.left[x as usize] == y,
                        1 => Self::hash(l, true, x)? == Self::hash(r, true, y)?,
                        2 => Self::hash(l, false, x)? == Self::hash(r, false, y)?,
                        _ => l.opcode[x as usize] == r.opcode[y as usize],
                    };
                    if ok {
                        found = Some(y);
                        break;
                    }
                }
                if let Some(y) = found {
                    if let Some(p) = rest_a.iter().position(|&v| v == x) {
                        rest_a.remove(p);
                    }
                    if let Some(p) = rest_b.iter().position(|&v| v == y) {
                        rest_b.remove(p);
                    }
                    first_a.push(x);
                    first_b.push(y);
                }
            }
        }
        first_a.extend(rest_a);
        first_b.extend(rest_b);
        Ok((first_a, first_b))
    }

    /// One rule of `_align_two`, on keys `[k0, k1, v0, v1]` of the left and right operands: both
    /// sides' two operands ordered by the first of `k0 == v0`, `k0 == v1`, `k1 == v0`, `k1 == v1`
    /// that holds; None where none does. `valid` says whether a left key can equal anything (None
    /// cannot).
    fn order_two_by<T: PartialEq + Copy>(
        k: [T; 4],
        valid: impl Fn(T) -> bool,
        oa: &[u32],
        ob: &[u32],
    ) -> Option<(Vec<u32>, Vec<u32>)> {
        let (k0, k1, v0, v1) = (k[0], k[1], k[2], k[3]);
        let a = vec![oa[0], oa[1]];
        let sa = vec![oa[1], oa[0]];
        let b = vec![ob[0], ob[1]];
        let sb = vec![ob[1], ob[0]];
        if valid(k0) && k0 == v0 {
            return Some((a, b));
        }
        if valid(k0) && k0 == v1 {
            return Some((a, sb));
        }
        if valid(k1) && k1 == v0 {
            return Some((sa, b));
        }
        if valid(k1) && k1 == v1 {
            return Some((sa, sb));
        }
        None
    }
}
