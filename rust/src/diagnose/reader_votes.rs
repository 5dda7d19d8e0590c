//! `pairing`'s reader votes, compiled: the matcher's pairs of inputs, each moved to the input most
//! of its matched readers read on the other side, and which inputs a matched user reads at the
//! same operand position as their pair (the evidence `pair_parameters` asks of some 2,600 inputs a
//! diff: 0.6 CPU-s of a report's worker in Python). The rule is the readable one of
//! tests/oracles/reader_votes_reference.py, step for step (read it, and `pairing`'s docstrings,
//! for why each part is what it is); the test holds the two equal on every fixture pair.

use std::sync::Arc;

use pyo3::exceptions::{PyKeyError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFrozenSet, PyTuple};

use crate::canon::handle::{compared_shapes, CanonHandle};
use crate::canon::indexed::Canon;
use crate::matching::pair_map::PairMap;
use crate::matching::side::MatchSide;

const NONE: u32 = u32::MAX;
/// A left instruction paired with a name the right side does not hold.
const UNKNOWN: u32 = u32::MAX - 1;
/// Per left instruction its twin in `pair_left` (`Matching.left`; `NONE`: unpaired) and whether a
/// phase of `blind` paired it (`Matching.matcher`): from the core's mappings where they are over
/// these two computations, else read from the dictionaries.
fn twins(
    l: &Arc<Canon>,
    r: &Arc<Canon>,
    pair_left: &Bound<'_, PyAny>,
    matcher: &Bound<'_, PyAny>,
    blind_phases: &Bound<'_, PyAny>,
) -> PyResult<(Vec<u32>, Vec<bool>)> {
    let n = l.names.len();
    let mut twin = vec![NONE; n];
    let mut blind = vec![false; n];
    let fast = pair_left.downcast::<PairMap>().ok().and_then(|m| {
        let (keyed, valued, _, to) = m.get().parts()?;
        (Arc::ptr_eq(keyed, l) && Arc::ptr_eq(valued, r)).then(|| to.to_vec())
    });
    match fast {
        Some(to) => twin = to,
        None => {
            for item in pair_left.call_method0("items")?.try_iter()? {
                let (k, v): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item?.extract()?;
                if let Some(a) = l.find(&k)? {
                    twin[a] = r.find(&v)?.map_or(UNKNOWN, |b| b as u32);
                }
            }
        }
    }
    if let Ok(m) = matcher.downcast::<PairMap>() {
        if let Some((keyed, to, tag, names)) = m.get().phases() {
            if Arc::ptr_eq(keyed, l) {
                let py = matcher.py();
                let mut is_blind = Vec::with_capacity(names.len());
                for t in names {
                    is_blind.push(blind_phases.contains(t.bind(py))?);
                }
                for i in 0..n {
                    blind[i] = to[i] != NONE && is_blind[tag[i] as usize];
                }
                return Ok((twin, blind));
            }
        }
    }
    for item in matcher.call_method0("items")?.try_iter()? {
        let (k, v): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item?.extract()?;
        if let Some(a) = l.find(&k)? {
            blind[a] = blind_phases.contains(v)?;
        }
    }
    Ok((twin, blind))
}

/// `(matched, supported)` of `left` (a computation's handle and the matcher's copy of it) against
/// `right` (the matcher's copy) under the matching `pair_left` / `matcher`, `blind` being
/// `pairing._BLIND` (phases that pair without reading the users): `matched` as
/// `_matched_inputs` gives it (a dictionary in `param_number`'s order), `supported` the left
/// inputs `a` with `_supported(a, matched[a])`. A matched reader whose twin has no operands entry
/// is a `KeyError` (its twin's name), as the Python's lookup is.
#[pyfunction]
pub fn reader_votes<'py>(
    py: Python<'py>,
    left: &Bound<'py, CanonHandle>,
    left_side: &Bound<'py, MatchSide>,
    right_side: &Bound<'py, MatchSide>,
    pair_left: &Bound<'py, PyAny>,
    matcher: &Bound<'py, PyAny>,
    blind: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    let (h, l, r) = (left.get(), left_side.get(), right_side.get());
    if !Arc::ptr_eq(&h.canon, &l.canon) {
        return Err(PyValueError::new_err("the handle is not the left side's"));
    }
    let (twin, blind) = twins(&l.canon, &r.canon, pair_left, matcher, blind)?;
    let mut is_param = vec![false; r.names.len()];
    for &(p, _) in &r.params {
        is_param[p as usize] = true;
    }
    let right_ops = |u: u32, v: u32| twin_operands(py, l, r, pair_left, u, v);
    let left_ops = |u: u32| l.operands(u).unwrap_or(&[]);
    // The matcher's pairs of inputs (both parameters).
    let pairs: Vec<(u32, u32)> = l
        .params
        .iter()
        .filter_map(|&(a, _)| {
            let b = twin[a as usize];
            (b < UNKNOWN && is_param[b as usize]).then_some((a, b))
        })
        .collect();
    // Reader votes, not for scalars (a learning rate is read by ops alike all over the graph).
    let shapes = compared_shapes(h);
    let mut moved: Vec<(u32, u32)> = Vec::new();
    let mut votes: Vec<(u32, u32)> = Vec::new(); // (input of B, votes), in the order first voted for
    for &(a, b) in &pairs {
        if shapes[h.shape[a as usize] as usize].ends_with("[]") {
            continue;
        }
        votes.clear();
        for &u in l.users(a) {
            let v = twin[u as usize];
            if v == NONE || blind[u as usize] {
                continue;
            }
            let ov = right_ops(u, v)?;
            for (k, &x) in left_ops(u).iter().enumerate() {
                if x != a || k >= ov.len() || !is_param[ov[k] as usize] {
                    continue;
                }
                match votes.iter_mut().find(|(y, _)| *y == ov[k]) {
                    Some((_, c)) => *c += 1,
                    None => votes.push((ov[k], 1)),
                }
            }
        }
        if votes.len() < 2 {
            continue;
        }
        // Python's `max`: the first of the most votes, `b` before the others on a tie.
        let mut best = votes[0];
        for &(y, c) in &votes[1..] {
            if (c, y == b) > (best.1, best.0 == b) {
                best = (y, c);
            }
        }
        let for_b = votes.iter().find(|(y, _)| *y == b).map_or(0, |&(_, c)| c);
        if 0 < for_b && for_b < best.1 {
            moved.push((a, best.0));
        }
    }
    // Only a trade among the matcher's own pairs.
    let mut to: Vec<u32> = moved.iter().map(|&(_, y)| y).collect();
    let mut from: Vec<u32> = moved.iter().map(|&(a, _)| twin[a as usize]).collect();
    for s in [&mut to, &mut from] {
        s.sort_unstable();
        s.dedup();
    }
    let traded = to == from;
    let matched = PyDict::new(py);
    let mut supported = Vec::new();
    for &(a, b) in &pairs {
        let b = match moved.iter().find(|&&(x, _)| x == a) {
            Some(&(_, y)) if traded => y,
            _ => b,
        };
        matched.set_item(l.names[a as usize].bind(py), r.names[b as usize].bind(py))?;
        if is_supported(a, b, &twin, &blind, l, &right_ops)? {
            supported.push(l.names[a as usize].bind(py).clone());
        }
    }
    let supported = PyFrozenSet::new(py, &supported)?;
    PyTuple::new(py, [matched.into_any(), supported.into_any()])
}

/// The operands of `u`'s twin `v` (`right.operands[v]`; a `KeyError` where it has none).
fn twin_operands<'r>(
    py: Python<'_>,
    l: &MatchSide,
    r: &'r MatchSide,
    pair_left: &Bound<'_, PyAny>,
    u: u32,
    v: u32,
) -> PyResult<&'r [u32]> {
    if v != UNKNOWN {
        if let Some(ops) = r.operands(v) {
            return Ok(ops);
        }
        return Err(PyKeyError::new_err(r.names[v as usize].clone_ref(py)));
    }
    let name = pair_left.get_item(l.names[u as usize].bind(py))?;
    Err(PyKeyError::new_err(name.unbind()))
}

/// `_supported(a, b)`: a matched user of `a`, not paired blind, reads `b` where it reads `a`
/// (or reads `b` at all, commutative).
fn is_supported<'r>(
    a: u32,
    b: u32,
    twin: &[u32],
    blind: &[bool],
    l: &MatchSide,
    right_ops: &impl Fn(u32, u32) -> PyResult<&'r [u32]>,
) -> PyResult<bool> {
    if blind[a as usize] {
        return Ok(false);
    }
    for &u in l.users(a) {
        let v = twin[u as usize];
        if v == NONE || blind[u as usize] {
            continue;
        }
        let ov = right_ops(u, v)?;
        let ou = l.operands(u).unwrap_or(&[]);
        if ou
            .iter()
            .enumerate()
            .any(|(k, &x)| x == a && k < ov.len() && ov[k] == b)
        {
            return Ok(true);
        }
        if l.commutative[u as usize] && ov.contains(&b) {
            return Ok(true);
        }
    }
    Ok(false)
}
