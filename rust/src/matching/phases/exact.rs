//! `exact.py`: identical subgraphs anywhere (`match_exact`, for hashes seen once on each side),
//! and two equal subgraphs paired node by node (`zip_subgraphs`, which other phases use too).

use crate::parse::text::FxMap;

use crate::matching::mappings::{Mappings, EXACT, EXACT_SHAPE, NONE, OUTPUTS_CONTEXT, R};

impl Mappings<'_> {
    /// `exact.zip_subgraphs`.
    pub(crate) fn zip_subgraphs(&mut self, a: u32, b: u32, key_h1: bool, tag: u8) -> R<()> {
        let (l, r) = (self.l, self.r);
        let mut stack = vec![(a, b)];
        let mut sa: Vec<u32> = Vec::new();
        let mut sb: Vec<u32> = Vec::new();
        while let Some((x, y)) = stack.pop() {
            let (ox, oy) = (self.ops_l(x)?, self.ops_r(y)?);
            if ox.len() != oy.len() {
                continue;
            }
            sa.clear();
            sb.clear();
            sa.extend_from_slice(ox);
            sb.extend_from_slice(oy);
            if ox.len() > 1 && l.commutative[x as usize] {
                for &p in &sa {
                    Self::hash(l, key_h1, p)?;
                }
                for &q in &sb {
                    Self::hash(r, key_h1, q)?;
                }
                // Stable, by the hash's value, as `sorted(key=...)`.
                let hl = if key_h1 { &l.h1 } else { &l.h0 };
                let hr = if key_h1 { &r.h1 } else { &r.h0 };
                sa.sort_by_key(|&p| hl[p as usize]);
                sb.sort_by_key(|&q| hr[q as usize]);
            }
            for k in 0..sa.len() {
                let (p, q) = (sa[k], sb[k]);
                if Self::hash(l, key_h1, p)? == Self::hash(r, key_h1, q)?
                    && self.add(p, q, tag)
                    && !self.ops_l(p)?.is_empty()
                {
                    stack.push((p, q));
                }
            }
        }
        Ok(())
    }

    /// `exact._against_pairs`: an operand of `a` or of `b` that the data-flow context paired (an
    /// output, `outputs-context`) with one that is not an operand of the other. Equal `h1` is no
    /// evidence against the context: canonical numbers come from a walk over all outputs, and an
    /// output dropped shifts them by one along look-alikes (a dropped AdamW second moment's
    /// `sqrt(v)` would pair with the next moment's, whose `v` the context paired).
    fn against_pairs(&self, a: u32, b: u32) -> R<bool> {
        let (oa, ob) = (self.ops_l(a)?, self.ops_r(b)?);
        let context = |p: u32| self.tag[p as usize] == OUTPUTS_CONTEXT;
        let astray_l = oa.iter().any(|&p| {
            let q = self.left[p as usize];
            q != NONE && context(p) && !ob.contains(&q)
        });
        let astray_r = ob.iter().any(|&q| {
            let p = self.right[q as usize];
            p != NONE && context(p) && !oa.contains(&p)
        });
        Ok(astray_l || astray_r)
    }

    /// `exact.match_exact`.
    pub(crate) fn exact(&mut self, key_h1: bool) -> R<()> {
        let (l, r) = (self.l, self.r);
        let tag = if key_h1 { EXACT } else { EXACT_SHAPE };
        let mut candidates: FxMap<i128, (Vec<u32>, usize)> = FxMap::default();
        for &b in r.order.iter().rev() {
            if !self.rp(b) {
                candidates
                    .entry(Self::hash(r, key_h1, b)?)
                    .or_default()
                    .0
                    .push(b);
            }
        }
        let mut left_count: FxMap<i128, u32> = FxMap::default();
        for &a in &l.order {
            if !self.lp(a) {
                *left_count.entry(Self::hash(l, key_h1, a)?).or_default() += 1;
            }
        }
        for &name in l.order.iter().rev() {
            if self.lp(name) {
                continue;
            }
            let h = Self::hash(l, key_h1, name)?;
            let Some((pool, head)) = candidates.get_mut(&h) else {
                continue;
            };
            while *head < pool.len() && self.right[pool[*head] as usize] != NONE {
                *head += 1;
            }
            let left = pool.len() - *head;
            if left == 0 {
                continue;
            }
            if left > 1 || left_count.get(&h).copied().unwrap_or(0) > 1 {
                continue;
            }
            let other = pool[*head];
            if self.against_pairs(name, other)? {
                continue;
            }
            *head += 1;
            self.add(name, other, tag);
            self.zip_subgraphs(name, other, key_h1, tag)?;
        }
        Ok(())
    }
}
