//! `match_sum_terms.py`: the terms of a sum that changed places. A chain of one associative,
//! commutative opcode (`((a + b) + c)`) whose terms are the same multiset of subgraphs in another
//! order (`((b + c) + a)`, a dict of penalties iterated in another order) pairs term to term by
//! content, the chain's own nodes by depth: position would pair a term with another (other shapes,
//! other sizes baked into its constants) and hide the reordering behind a dozen changed values.
//! Terms alike by `h0` (the same computation over inputs of one shape: one per crop of a batch)
//! are told apart by the numbers of the inputs they read, where both sides number them alike.
//! The graphs still differ (the reordered chain's nodes read other operands), so nothing is called
//! identical here: the diagnosis names the reordering.

use std::sync::OnceLock;

use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::canon::python_hash::{int_hash, tuple_hash};
use crate::families::COMMUTATIVE;
use crate::matching::mappings::{Mappings, Missing, R};
use crate::matching::side::{intern, MatchSide};
use crate::parse::text::FxMap;

/// Whether chains of `op` may be regrouped and reordered: the commutative family (the one table,
/// families.rs), less `xor` (left out: the list) and the lazy IR's `aten::` names (never
/// in the HLO this matches). Interned once: `chains` asks for every instruction.
fn chained(op: u32) -> bool {
    static IDS: OnceLock<Vec<u32>> = OnceLock::new();
    IDS.get_or_init(|| {
        COMMUTATIVE
            .iter()
            .filter(|c| **c != "xor" && !c.starts_with("aten::"))
            .map(|c| intern(c))
            .collect()
    })
    .contains(&op)
}

/// The fewest terms a chain needs: two terms in another order are `align_commutative`'s.
const MIN_TERMS: usize = 3;

/// Whether operand `o` of `n` continues `n`'s chain: the same opcode and shape, binary, read by
/// `n` alone.
fn inner(s: &MatchSide, o: u32, n: u32) -> bool {
    let key = |i: u32| (s.opcode[i as usize], s.stripped[i as usize]);
    key(o) == key(n) && s.users(o) == [n] && s.operands(o).is_some_and(|x| x.len() == 2)
}

/// A chain's nodes (pre-order, `root` first) and its terms, left to right.
fn flatten(s: &MatchSide, root: u32) -> (Vec<u32>, Vec<u32>) {
    let (mut nodes, mut terms) = (Vec::new(), Vec::new());
    walk(s, root, &mut nodes, &mut terms);
    (nodes, terms)
}

fn walk(s: &MatchSide, n: u32, nodes: &mut Vec<u32>, terms: &mut Vec<u32>) {
    nodes.push(n);
    for &o in s.operands(n).unwrap_or(&[]) {
        if inner(s, o, n) {
            walk(s, o, nodes, terms);
        } else {
            terms.push(o);
        }
    }
}

/// Each chain of `order` with `MIN_TERMS` terms or more: its root (a binary node of a chained
/// opcode that continues no user's chain) and its terms, left to right.
pub(crate) fn chains(s: &MatchSide) -> Vec<(u32, Vec<u32>)> {
    s.order
        .iter()
        .copied()
        .filter(|&n| {
            chained(s.opcode[n as usize])
                && s.operands(n).is_some_and(|x| x.len() == 2)
                && !s.users(n).iter().any(|&u| inner(s, n, u))
        })
        .map(|n| (n, flatten(s, n).1))
        .filter(|(_, terms)| terms.len() >= MIN_TERMS)
        .collect()
}

type Names<'py> = Vec<Bound<'py, PyString>>;
type NamedChain<'py> = (Bound<'py, PyString>, Names<'py>, Names<'py>);

/// `chains` of a matcher side, for `match/reordered_terms.py`: each chain's root, its terms as
/// written and the values they stand for (`peeled`), by name.
#[pyfunction]
pub fn side_sum_chains<'py>(py: Python<'py>, side: &Bound<'py, MatchSide>) -> Vec<NamedChain<'py>> {
    let s = side.get();
    let name = |i: u32| s.names[i as usize].bind(py).clone();
    chains(s)
        .into_iter()
        .map(|(root, terms)| {
            let values = terms.iter().map(|&t| name(peeled(s, t))).collect();
            (name(root), terms.into_iter().map(name).collect(), values)
        })
        .collect()
}

/// A scalar constant, or a broadcast of one.
fn scalar_constant(s: &MatchSide, i: u32) -> bool {
    let constant = intern("constant");
    let op = s.opcode[i as usize];
    if op == constant {
        return s.rank[i as usize].1 == 0;
    }
    op == intern("broadcast")
        && matches!(s.operands(i), Some(&[o]) if s.opcode[o as usize] == constant
            && s.rank[o as usize].1 == 0)
}

/// What a term stands for: a term scaled by a scalar constant (torch's `alpha` of an add, a
/// weight of 1 that one position multiplies and another does not) is its value.
fn peeled(s: &MatchSide, t: u32) -> u32 {
    if s.opcode[t as usize] == intern("multiply") {
        if let Some(&[x, y]) = s.operands(t) {
            match (scalar_constant(s, x), scalar_constant(s, y)) {
                (false, true) => return x,
                (true, false) => return y,
                _ => {}
            }
        }
    }
    t
}

/// The most instructions look-alike terms' cones are walked to read which inputs each term
/// reads: past it (terms that hold half the graph) they stay look-alikes, as before.
const NUMBERED_LIMIT: usize = 4096;

/// Each term's content with its inputs by number, where `h0` knows them by shape alone: terms
/// alike by `h0` (one computation per crop of a batch) that read other inputs. None where their
/// cones hold more than `NUMBERED_LIMIT` instructions.
pub(crate) fn numbered(s: &MatchSide, terms: &[u32]) -> R<Option<Vec<i128>>> {
    let number: FxMap<u32, i64> = s.params.iter().copied().collect();
    let mut memo: FxMap<u32, i128> = FxMap::default();
    for &t in terms {
        let mut stack = vec![(t, false)];
        while let Some((i, ready)) = stack.pop() {
            if memo.contains_key(&i) {
                continue;
            }
            let ops = s.operands(i).unwrap_or(&[]);
            if !ready {
                stack.push((i, true));
                stack.extend(ops.iter().filter(|o| !memo.contains_key(o)).map(|&o| (o, false)));
                continue;
            }
            if !s.has_h[i as usize] {
                return Err(Missing);
            }
            let mut lanes = vec![
                int_hash(s.h0[i as usize]),
                number.get(&i).map_or(-1, |&n| int_hash(n as i128)),
            ];
            lanes.extend(ops.iter().map(|o| int_hash(memo[o])));
            memo.insert(i, tuple_hash(&lanes) as i128);
            if memo.len() > NUMBERED_LIMIT {
                return Ok(None);
            }
        }
    }
    Ok(Some(terms.iter().map(|t| memo[t]).collect()))
}

impl Mappings<'_> {
    /// The pairs of two chains rooted at the paired `a` and `b` whose terms changed places, in
    /// the order to add them (nodes by depth, then each term's value and, where both scale it,
    /// its scaling multiply); None where they are not such chains (fewer terms, another
    /// multiset by `h0`, two terms alike even by the inputs they read, or the same order).
    pub(crate) fn reordered_terms(&self, a: u32, b: u32) -> R<Option<Vec<(u32, u32)>>> {
        let (l, r) = (self.l, self.r);
        let op = l.opcode[a as usize];
        if op != r.opcode[b as usize] || !chained(op) {
            return Ok(None);
        }
        let ((nl, tl), (nr, tr)) = (flatten(l, a), flatten(r, b));
        if tl.len() < MIN_TERMS || tl.len() != tr.len() || nl.len() != nr.len() {
            return Ok(None);
        }
        // Each term's `h0`, as the value it stands for (`peeled`).
        let keys = |side: &MatchSide, terms: &[u32]| -> R<Vec<i128>> {
            terms.iter().map(|&t| Self::hash(side, false, peeled(side, t))).collect()
        };
        let (mut kl, mut kr) = (keys(l, &tl)?, keys(r, &tr)?);
        let sorted = |k: &[i128]| {
            let mut v = k.to_vec();
            v.sort_unstable();
            v
        };
        let (sl, sr) = (sorted(&kl), sorted(&kr));
        if sl != sr {
            return Ok(None);
        }
        // Look-alike terms (inputs of one shape) are told apart by the inputs they read, where
        // both sides number those alike; else they have no order of their own to tell (inputs
        // renumbered in the order the terms were traced).
        if sl.windows(2).any(|w| w[0] == w[1]) {
            let pl: Vec<u32> = tl.iter().map(|&t| peeled(l, t)).collect();
            let pr: Vec<u32> = tr.iter().map(|&t| peeled(r, t)).collect();
            let (Some(ul), Some(ur)) = (numbered(l, &pl)?, numbered(r, &pr)?) else {
                return Ok(None);
            };
            let (sl, sr) = (sorted(&ul), sorted(&ur));
            if sl != sr || sl.windows(2).any(|w| w[0] == w[1]) {
                return Ok(None);
            }
            (kl, kr) = (ul, ur);
        }
        if kl == kr {
            return Ok(None);
        }
        let mut pairs: Vec<(u32, u32)> = nl.iter().copied().zip(nr.iter().copied()).collect();
        let mut used = vec![false; tr.len()];
        for (i, &x) in tl.iter().enumerate() {
            let j = (0..tr.len()).find(|&j| !used[j] && kr[j] == kl[i]);
            let Some(j) = j else { continue };
            used[j] = true;
            let (y, px, py) = (tr[j], peeled(l, x), peeled(r, tr[j]));
            pairs.push((px, py));
            if px != x && py != y {
                pairs.push((x, y));
            }
        }
        Ok(Some(pairs))
    }
}
