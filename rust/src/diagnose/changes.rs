//! The walk of `diagnose.instructions.matched_changes` over the matched pairs, compiled: which
//! pairs differ in content and how, decided here from two `CanonHandle`s, so that Python sees
//! only the pairs it reports (a batch size that changes touches half of a graph: every one of
//! those pairs went through the Python loop to be found to follow the input's shape).
//!
//! The loop is the Python one, step for step (read it there for why each rule is what it is),
//! without its two rare modes (a `dtype` cause already found, collectives regrouped: the caller
//! keeps those in Python). Its side effects are returned as events, in loop order, for Python to
//! replay with the same code: `STRUCTURAL`, `PARAMETER` (an input whose attributes may differ),
//! `CONSTANT`, `ATTRIBUTE` (with `upstream`); the pairs that follow a changed input
//! (`propagated`) come back as two lists of names. What the loop needs of Python is asked
//! through two callbacks: `operands_agree(a, b)` where operands are not paired position by
//! position, `follows(sa, sb)` (`explained_by_dims`, once per pair of shapes).

use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

use std::sync::Arc;

use crate::canon::handle::{compared_shapes, CanonHandle};
use crate::canon::mapping::Table;
use crate::diagnose::pair_edits::EditedPairs;
use crate::parse::text::FxMap;

const NONE: u32 = u32::MAX;
const STRUCTURAL: u8 = 0;
const PARAMETER: u8 = 1;
const CONSTANT: u8 = 2;
const ATTRIBUTE: u8 = 3;

/// Names of a handle to indices: the computation's shared index (`canon/indexed.rs`; a handle's
/// names are unique), made once for every caller instead of a map of every name per call.
struct Index<'h> {
    h: &'h CanonHandle,
}

impl<'h> Index<'h> {
    fn new(h: &'h CanonHandle) -> Self {
        Index { h }
    }

    fn get(&mut self, name: &Bound<'_, PyAny>) -> PyResult<Option<u32>> {
        if !name.is_instance_of::<PyString>() {
            return Ok(None);
        }
        Ok(self.h.canon.find(name)?.map(|i| i as u32))
    }
}

/// The walk of `matched_changes` on `left` and `right` with the comparison's pairs `pair_left`
/// (`Comparison.pair_left`). Returns `(events, propagated_left, propagated_right)`, events being
/// `(kind, a, b, upstream)` tuples; None where the Python loop must run (a name the handles do
/// not hold, a pair outside the right side's order: the Python loop raises there as it always
/// did).
#[pyfunction]
pub fn matched_walk<'py>(
    py: Python<'py>,
    left: &Bound<'py, CanonHandle>,
    right: &Bound<'py, CanonHandle>,
    pair_left: &Bound<'py, PyAny>,
    operands_agree: &Bound<'py, PyAny>,
    follows: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let (l, r) = (left.get(), right.get());
    let Some(pair) = pair_indices(l, r, pair_left)? else {
        return Ok(None);
    };
    let r_order = r.in_order();
    let mut is_param = vec![false; l.names.len()];
    for &(p, _) in &l.params {
        is_param[p as usize] = true;
    }
    let (ls, rs) = (compared_shapes(l), compared_shapes(r));
    let constant: Vec<bool> = l.opcodes.iter().map(|o| o == "constant").collect();
    let mut shape_changed = vec![false; l.names.len()];
    let mut judged: FxMap<(u32, u32), bool> = FxMap::default();
    let events = PyList::empty(py);
    let (prop_l, prop_r) = (PyList::empty(py), PyList::empty(py));
    for &a in &l.order {
        let b = pair[a as usize];
        if b == NONE {
            continue;
        }
        if !r_order[b as usize] {
            return Ok(None);
        }
        let (au, bu) = (a as usize, b as usize);
        if l.h1[au] == r.h1[bu] {
            continue;
        }
        let (Some(oa), Some(ob)) = (l.operands(a), r.operands(b)) else {
            return Ok(None);
        };
        let (na, nb) = (l.names[au].bind(py), r.names[bu].bind(py));
        // Operands paired position by position, else the Python's `operands_agree`.
        let positional =
            oa.len() == ob.len() && oa.iter().zip(ob).all(|(&x, &y)| pair[x as usize] == y);
        let agree = positional || operands_agree.call1((na, nb))?.is_truthy()?;
        let event =
            |kind: u8, upstream: bool| -> PyResult<()> { events.append((kind, na, nb, upstream)) };
        if l.keys[au] == r.keys[bu] {
            if !agree {
                event(STRUCTURAL, false)?;
            }
            continue;
        }
        let (sl, sr) = (l.shape[au], r.shape[bu]);
        let differ = ls[sl as usize] != rs[sr as usize];
        if is_param[au] {
            if differ {
                shape_changed[au] = true;
            } else {
                event(PARAMETER, false)?;
            }
            continue;
        }
        let op = l.opcode[au] as usize;
        if l.opcodes[op] != r.opcodes[r.opcode[bu] as usize] {
            event(STRUCTURAL, false)?;
            continue;
        }
        if !agree {
            event(STRUCTURAL, false)?;
            continue;
        }
        let mut upstream = oa.iter().any(|&x| shape_changed[x as usize]);
        if differ {
            shape_changed[au] = true;
            if !upstream {
                upstream = match judged.get(&(sl, sr)) {
                    Some(&j) => j,
                    None => {
                        let j = follows
                            .call1((&ls[sl as usize], &rs[sr as usize]))?
                            .is_truthy()?;
                        judged.insert((sl, sr), j);
                        j
                    }
                };
            }
        }
        if upstream && !constant[op] {
            prop_l.append(na)?;
            prop_r.append(nb)?;
            continue;
        }
        if constant[op] {
            event(CONSTANT, false)?;
            continue;
        }
        event(ATTRIBUTE, upstream)?;
    }
    Ok(Some(PyTuple::new(
        py,
        [events.into_any(), prop_l.into_any(), prop_r.into_any()],
    )?))
}

/// Indices of the names of a Python iterable (a dict's keys, a set) that name instructions of
/// the handle; None where one does not (the caller's Python path decides that input).
/// Per left instruction its right one (`NONE`: unpaired) in `pairs` (a dictionary of names, or
/// the core's own `EditedPairs` between these two computations); None for a name the handles
/// do not hold.
fn pair_indices(
    l: &CanonHandle,
    r: &CanonHandle,
    pairs: &Bound<'_, PyAny>,
) -> PyResult<Option<Vec<u32>>> {
    if let Ok(edited) = pairs.downcast::<EditedPairs>() {
        let e = edited.borrow();
        let (keyed, valued, to) = e.indices();
        if Arc::ptr_eq(keyed, &l.canon) && Arc::ptr_eq(valued, &r.canon) {
            return Ok(Some(to.to_vec()));
        }
    }
    let (mut li, mut ri) = (Index::new(l), Index::new(r));
    let mut pair = vec![NONE; l.names.len()];
    for item in pairs.call_method0("items")?.try_iter()? {
        let (k, v): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item?.extract()?;
        let (Some(a), Some(b)) = (li.get(&k)?, ri.get(&v)?) else {
            return Ok(None);
        };
        pair[a as usize] = b;
    }
    Ok(Some(pair))
}

/// The keys of `names` (a dictionary or the core's `EditedPairs` keyed by `h`'s names), as
/// indices in their order; None for a name the handle does not hold.
fn key_indices(
    h: &CanonHandle,
    index: &mut Index<'_>,
    names: &Bound<'_, PyAny>,
) -> PyResult<Option<Vec<u32>>> {
    if let Ok(edited) = names.downcast::<EditedPairs>() {
        let e = edited.borrow();
        if Arc::ptr_eq(e.indices().0, &h.canon) {
            return Ok(Some(e.members().into_owned()));
        }
    }
    indices(index, names)
}

fn indices(index: &mut Index<'_>, names: &Bound<'_, PyAny>) -> PyResult<Option<Vec<u32>>> {
    let mut out = Vec::new();
    for n in names.try_iter()? {
        match index.get(&n?)? {
            Some(i) => out.push(i),
            None => return Ok(None),
        }
    }
    Ok(Some(out))
}

/// The first step of `diagnose.regions.structure`: instructions of each side's `order` that are
/// not paired (`pair_left` / `pair_right`), not explained by a cause (`explained_left` /
/// `explained_right`), and whose `h1` neither the other side nor a paired instruction of their
/// own side has (a subgraph computed twice on one side and once on the other is the same
/// computation). Returns the two lists of names in `order`; None where the Python must decide
/// (a name the handles do not hold: it raises there as it always did).
#[pyfunction]
pub fn unexplained<'py>(
    py: Python<'py>,
    left: &Bound<'py, CanonHandle>,
    right: &Bound<'py, CanonHandle>,
    pair_left: &Bound<'py, PyAny>,
    pair_right: &Bound<'py, PyAny>,
    explained_left: &Bound<'py, PyAny>,
    explained_right: &Bound<'py, PyAny>,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let (l, r) = (left.get(), right.get());
    let (mut li, mut ri) = (Index::new(l), Index::new(r));
    let (Some(pl), Some(pr)) = (
        key_indices(l, &mut li, pair_left)?,
        key_indices(r, &mut ri, pair_right)?,
    ) else {
        return Ok(None);
    };
    let (l_order, r_order) = (l.in_order(), r.in_order());
    // `h1` is defined on `order`: a paired name outside it is a KeyError in the Python.
    if pl.iter().any(|&a| !l_order[a as usize]) || pr.iter().any(|&b| !r_order[b as usize]) {
        return Ok(None);
    }
    let mut out = Vec::with_capacity(2);
    for (h, own, other, explained, index) in [
        (l, &pl, r, explained_left, &mut li),
        (r, &pr, l, explained_right, &mut ri),
    ] {
        let mut known: FxMap<i128, ()> = FxMap::default();
        for &i in &other.order {
            known.insert(other.h1[i as usize], ());
        }
        for &i in own.iter() {
            known.insert(h.h1[i as usize], ());
        }
        let mut skip = vec![false; h.names.len()];
        for &i in own.iter() {
            skip[i as usize] = true;
        }
        for n in explained.try_iter()? {
            if let Some(i) = index.get(&n?)? {
                skip[i as usize] = true;
            }
        }
        let found = PyList::empty(py);
        for &i in &h.order {
            if !skip[i as usize] && !known.contains_key(&h.h1[i as usize]) {
                found.append(h.names[i as usize].bind(py))?;
            }
        }
        out.push(found);
    }
    Ok(Some(PyTuple::new(py, out)?))
}
