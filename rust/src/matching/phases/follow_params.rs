//! `match_follow.follow_parameters`: look-alike outputs (equal `h0`) one side has more of, both
//! at least two (a shared input, a learning rate, is then no member's own), paired by the parameters each reads alone (issue 37). Plain SGD
//! updates read only parameters: `h1` ranks those of the look-alikes after a dropped one one off,
//! and `outputs-exact` would pair each with its neighbour. Inputs aligned by shape from both ends
//! (what lies between is what one side lacks) name each one's counterpart; each extra one
//! must read only inputs the other side lacks or leaves unread (a block of layers trained from a
//! step on adds several), else nothing is decided here.

use crate::parse::text::FxMap;

use crate::matching::mappings::{Mappings, NONE, R};
use crate::matching::side::MatchSide;

/// Each `h0` in output order, and its outputs (each once) in order.
type Families = (Vec<i128>, FxMap<i128, Vec<u32>>);

/// Instructions one output's walk may visit: an update's cone is small; a loss's is not decided.
const CONE_BUDGET: usize = 64;

/// The parameters below `o` (sorted), or None over the budget.
fn cone_params(side: &MatchSide, is_param: &[bool], o: u32) -> Option<Vec<u32>> {
    let mut seen: Vec<u32> = vec![o];
    let mut stack = vec![o];
    let mut found = Vec::new();
    while let Some(x) = stack.pop() {
        if is_param[x as usize] {
            found.push(x);
            continue;
        }
        for &y in side.operands(x).unwrap_or(&[]) {
            if !seen.contains(&y) {
                if seen.len() == CONE_BUDGET {
                    return None;
                }
                seen.push(y);
                stack.push(y);
            }
        }
    }
    found.sort_unstable();
    Some(found)
}

/// Parameters in number order.
fn by_number(side: &MatchSide) -> Vec<u32> {
    let mut params = side.params.clone();
    params.sort_unstable_by_key(|&(_, n)| n);
    params.into_iter().map(|(i, _)| i).collect()
}

/// Each family's members with the parameters each reads alone (None: undecided).
fn members(side: &MatchSide, outs: &[u32], is_param: &[bool]) -> Option<Vec<(u32, Vec<u32>)>> {
    let mut cones = Vec::with_capacity(outs.len());
    let mut readers: FxMap<u32, u32> = FxMap::default();
    for &o in outs {
        let c = cone_params(side, is_param, o)?;
        for &p in &c {
            *readers.entry(p).or_default() += 1;
        }
        cones.push((o, c));
    }
    let own: Vec<(u32, Vec<u32>)> = cones
        .into_iter()
        .map(|(o, c)| (o, c.into_iter().filter(|p| readers[p] == 1).collect()))
        .collect();
    own.iter()
        .all(|(_, c): &(u32, Vec<u32>)| !c.is_empty())
        .then_some(own)
}

impl Mappings<'_> {
    /// The counterpart of each member of such a family on the left (`NONE`: the extra one).
    pub(crate) fn follow_parameters(&self) -> R<FxMap<u32, u32>> {
        let (l, r) = (self.l, self.r);
        let mut decided = FxMap::default();
        let (pl, pr) = (by_number(l), by_number(r));
        if pl.is_empty() || pr.is_empty() {
            return Ok(decided);
        }
        // Inputs aligned by shape: the common prefix, then the common suffix of the rest.
        let same = |a: u32, b: u32| l.stripped[a as usize] == r.stripped[b as usize];
        let n = pl.len().min(pr.len());
        let mut prefix = 0;
        while prefix < n && same(pl[prefix], pr[prefix]) {
            prefix += 1;
        }
        let mut suffix = 0;
        while prefix + suffix < n && same(pl[pl.len() - 1 - suffix], pr[pr.len() - 1 - suffix]) {
            suffix += 1;
        }
        let mut to_r: FxMap<u32, u32> = FxMap::default();
        let mut to_l: FxMap<u32, u32> = FxMap::default();
        let aligned = (0..prefix)
            .map(|k| (pl[k], pr[k]))
            .chain((0..suffix).map(|k| (pl[pl.len() - 1 - k], pr[pr.len() - 1 - k])));
        for (a, b) in aligned {
            to_r.insert(a, b);
            to_l.insert(b, a);
        }
        let mut is_l = vec![false; l.names.len()];
        let mut is_r = vec![false; r.names.len()];
        pl.iter().for_each(|&p| is_l[p as usize] = true);
        pr.iter().for_each(|&p| is_r[p as usize] = true);
        // Families by `h0`, members in output order (an output returned twice counted once).
        let family = |side: &MatchSide| -> R<Families> {
            let mut keys = Vec::new();
            let mut found: FxMap<i128, Vec<u32>> = FxMap::default();
            for &o in &side.outputs {
                let h = Self::hash(side, false, o)?;
                let v = found.entry(h).or_default();
                if !v.contains(&o) {
                    if v.is_empty() {
                        keys.push(h);
                    }
                    v.push(o);
                }
            }
            Ok((keys, found))
        };
        let (keys, fam_l) = family(l)?;
        let (_, fam_r) = family(r)?;
        for h in keys {
            let (xs, Some(ys)) = (&fam_l[&h], fam_r.get(&h)) else {
                continue;
            };
            let more = xs.len().abs_diff(ys.len());
            if more == 0 || xs.len().min(ys.len()) < 2 {
                continue;
            }
            let (Some(ml), Some(mr)) = (members(l, xs, &is_l), members(r, ys, &is_r)) else {
                continue;
            };
            // Each left member's own inputs as the right's, where all are aligned.
            let mapped = |c: &[u32]| -> Option<Vec<u32>> {
                let mut v: Vec<u32> = c
                    .iter()
                    .map(|p| to_r.get(p).copied())
                    .collect::<Option<_>>()?;
                v.sort_unstable();
                Some(v)
            };
            let partner: Vec<Option<usize>> = ml
                .iter()
                .map(|(_, c)| {
                    let m = mapped(c)?;
                    let hits: Vec<usize> = (0..mr.len()).filter(|&j| mr[j].1 == m).collect();
                    (hits.len() == 1).then(|| hits[0])
                })
                .collect();
            let mut taken = vec![0u32; mr.len()];
            partner.iter().flatten().for_each(|&j| taken[j] += 1);
            if taken.iter().any(|&t| t > 1) {
                continue;
            }
            // What the other side lacks or leaves unread.
            let gone_l = |p: &u32| to_r.get(p).is_none_or(|&b| r.users(b).is_empty());
            let gone_r = |p: &u32| to_l.get(p).is_none_or(|&a| l.users(a).is_empty());
            let extra_l: Vec<usize> = (0..ml.len()).filter(|&i| partner[i].is_none()).collect();
            let extra_r: Vec<usize> = (0..mr.len()).filter(|&j| taken[j] == 0).collect();
            let ok = if xs.len() > ys.len() {
                extra_r.is_empty() && extra_l.len() == more && extra_l.iter().all(|&i| ml[i].1.iter().all(gone_l))
            } else {
                extra_l.is_empty() && extra_r.len() == more && extra_r.iter().all(|&j| mr[j].1.iter().all(gone_r))
            };
            if !ok {
                continue;
            }
            for (i, (a, _)) in ml.iter().enumerate() {
                decided.insert(*a, partner[i].map_or(NONE, |j| mr[j].0));
            }
        }
        Ok(decided)
    }
}
