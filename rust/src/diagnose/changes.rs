//! The walk of `diagnose.instructions.matched_changes` over the matched pairs, compiled: which
//! pairs differ in content and how, decided here from two `CanonHandle`s, so that Python sees
//! only the pairs it reports (a batch size that changes touches half of a graph: every one of
//! those pairs went through the Python loop to be found to follow the input's shape).
//!
//! The loop is the readable one of tests/oracles/changes_reference.py, step for step (read it
//! there for why each rule is what it is), its two rare modes included (a `dtype` cause already
//! found, collectives regrouped). Its side effects are returned as events, in loop order, for
//! Python to replay: `STRUCTURAL`, `PARAMETER` (an input whose attributes may differ),
//! `CONSTANT`, `ATTRIBUTE`, `DTYPE` and `COLLECTIVE` (the pair joins the
//! existing cause of that kind: the order of these among the others is the order of the causes);
//! the pairs that follow a changed input (`propagated`) come back as two lists of names, and so
//! do all the pairs found changed, however reported (what the views mark). What the
//! loop needs of Python is asked through two callbacks: `operands_agree(a, b)` where operands are
//! not paired position by position, `follows(sa, sb)` (`explained_by_dims`, once per pair of
//! shapes).

use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

use std::sync::Arc;

use crate::canon::handle::{compared_shapes, CanonHandle};
use crate::canon::mapping::Table;
use crate::diagnose::pair_edits::EditedPairs;
use crate::families;
use crate::parse::text::FxMap;

const NONE: u32 = u32::MAX;
const STRUCTURAL: u8 = 0;
const PARAMETER: u8 = 1;
const CONSTANT: u8 = 2;
const ATTRIBUTE: u8 = 3;
const DTYPE: u8 = 4;
const COLLECTIVE: u8 = 5;
/// A left instruction paired with a name the right handle does not hold.
const UNKNOWN: u32 = u32::MAX - 1;

/// `collectives.is_collective`: `xla::reduce_scatter` (lazy IR) is `reduce-scatter`, and an
/// async `-start` is its collective.
fn is_collective(opcode: &str) -> bool {
    let kind = match opcode.strip_prefix("xla::") {
        Some(rest) => rest.replace('_', "-"),
        None => opcode.to_string(),
    };
    let kind = kind.strip_suffix("-start").unwrap_or(&kind);
    families::COLLECTIVES.contains(&kind)
        || families::COLLECTIVES.contains(&format!("{kind}-start").as_str())
}

/// `shapes.dims_of` of a compared shape: `bf16[4,8]` -> `[4,8]`; a tuple shape stays whole.
fn dims_of(shape: &str) -> &str {
    if !shape.contains('[') || shape.starts_with('(') {
        return shape;
    }
    &shape[shape.find('[').unwrap_or(0)..]
}

/// The index of `name` in `h` (the computation's shared index, `canon/indexed.rs`: a handle's
/// names are unique); None for a name it does not hold or anything but a string.
fn index_of(h: &CanonHandle, name: &Bound<'_, PyAny>) -> PyResult<Option<u32>> {
    if !name.is_instance_of::<PyString>() {
        return Ok(None);
    }
    Ok(h.canon.find(name)?.map(|i| i as u32))
}

/// The walk of `matched_changes` on `left` and `right` with the comparison's pairs `pair_left`
/// (`Comparison.pair_left`); `has_dtype`: a `dtype` cause was found before the walk, `regrouped`:
/// the module's collectives were regrouped. Returns `(events, propagated_left, propagated_right,
/// changed_left, changed_right)`, events being `(kind, a, b)` tuples and `changed_*` every pair
/// found changed (an event, propagated, or an input whose shape changed), in order. A left
/// instruction of `order` paired with one outside the right side's `order` is a `KeyError` (the
/// right name), as `h1` has it.
#[pyfunction]
pub fn matched_walk<'py>(
    py: Python<'py>,
    left: &Bound<'py, CanonHandle>,
    right: &Bound<'py, CanonHandle>,
    pair_left: &Bound<'py, PyAny>,
    operands_agree: &Bound<'py, PyAny>,
    follows: &Bound<'py, PyAny>,
    has_dtype: bool,
    regrouped: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    let (l, r) = (left.get(), right.get());
    let pair = pair_indices(l, r, pair_left)?;
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
    let (changed_l, changed_r) = (PyList::empty(py), PyList::empty(py));
    for &a in &l.order {
        let b = pair[a as usize];
        if b == NONE {
            continue;
        }
        if b == UNKNOWN {
            let name = pair_left.get_item(l.names[a as usize].bind(py))?;
            return Err(PyKeyError::new_err(name.unbind()));
        }
        if !r_order[b as usize] {
            return Err(PyKeyError::new_err(r.names[b as usize].clone_ref(py)));
        }
        let (au, bu) = (a as usize, b as usize);
        if l.h1[au] == r.h1[bu] {
            continue;
        }
        // Every instruction of `order` has its operands entered.
        let (Some(oa), Some(ob)) = (l.operands(a), r.operands(b)) else {
            unreachable!("an instruction of order without operands");
        };
        let (na, nb) = (l.names[au].bind(py), r.names[bu].bind(py));
        // Operands paired position by position, else the Python's `operands_agree`.
        let positional =
            oa.len() == ob.len() && oa.iter().zip(ob).all(|(&x, &y)| pair[x as usize] == y);
        let agree = positional || operands_agree.call1((na, nb))?.is_truthy()?;
        let event = |kind: u8| -> PyResult<()> { events.append((kind, na, nb)) };
        let same_key = l.keys[au] == r.keys[bu];
        if same_key && agree {
            continue;
        }
        // Past here the pair changed, whatever the walk makes of it below: the diagnosis'
        // answer, which the HTML page and GraphML mark (`ComputationPair.decided`).
        changed_l.append(na)?;
        changed_r.append(nb)?;
        if same_key {
            event(STRUCTURAL)?;
            continue;
        }
        let (sl, sr) = (l.shape[au], r.shape[bu]);
        let differ = ls[sl as usize] != rs[sr as usize];
        if is_param[au] {
            if differ {
                shape_changed[au] = true;
            } else {
                event(PARAMETER)?;
            }
            continue;
        }
        let op = l.opcode[au] as usize;
        if l.opcodes[op] != r.opcodes[r.opcode[bu] as usize] {
            event(STRUCTURAL)?;
            continue;
        }
        if regrouped && is_collective(&l.opcodes[op]) {
            event(COLLECTIVE)?;
            continue;
        }
        if !agree {
            event(STRUCTURAL)?;
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
            let (sa, sb) = (&ls[sl as usize], &rs[sr as usize]);
            if has_dtype && !constant[op] && dims_of(sa) == dims_of(sb) {
                event(DTYPE)?;
                continue;
            }
        }
        if upstream && !constant[op] {
            prop_l.append(na)?;
            prop_r.append(nb)?;
            continue;
        }
        if constant[op] {
            event(CONSTANT)?;
            continue;
        }
        event(ATTRIBUTE)?;
    }
    let out = [events, prop_l, prop_r, changed_l, changed_r];
    PyTuple::new(py, out.map(Bound::into_any))
}

/// Per left instruction its right one (`NONE`: unpaired) in `pairs` (a dictionary of names, or
/// the core's own `EditedPairs` between these two computations). A key the left handle does not
/// hold is never walked (the walk reads `order`); a value the right one does not hold is
/// `UNKNOWN`, an error where the walk reaches it.
fn pair_indices(l: &CanonHandle, r: &CanonHandle, pairs: &Bound<'_, PyAny>) -> PyResult<Vec<u32>> {
    if let Ok(edited) = pairs.downcast::<EditedPairs>() {
        let e = edited.borrow();
        let (keyed, valued, to) = e.indices();
        if Arc::ptr_eq(keyed, &l.canon) && Arc::ptr_eq(valued, &r.canon) {
            return Ok(to.to_vec());
        }
    }
    let mut pair = vec![NONE; l.names.len()];
    for item in pairs.call_method0("items")?.try_iter()? {
        let (k, v): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item?.extract()?;
        if let Some(a) = index_of(l, &k)? {
            pair[a as usize] = index_of(r, &v)?.unwrap_or(UNKNOWN);
        }
    }
    Ok(pair)
}

/// The keys of `names` (a dictionary or the core's `EditedPairs` keyed by `h`'s names), as
/// indices in their order; a name outside the handle's `order` is a `KeyError`, as `h1` has it.
fn key_indices(py: Python<'_>, h: &CanonHandle, names: &Bound<'_, PyAny>) -> PyResult<Vec<u32>> {
    if let Ok(edited) = names.downcast::<EditedPairs>() {
        let e = edited.borrow();
        if Arc::ptr_eq(e.indices().0, &h.canon) {
            let members = e.members().into_owned();
            let in_order = h.in_order();
            if let Some(&i) = members.iter().find(|&&i| !in_order[i as usize]) {
                return Err(PyKeyError::new_err(h.names[i as usize].clone_ref(py)));
            }
            return Ok(members);
        }
    }
    let in_order = h.in_order();
    let mut out = Vec::new();
    for n in names.try_iter()? {
        let n = n?;
        match index_of(h, &n)? {
            Some(i) if in_order[i as usize] => out.push(i),
            _ => return Err(PyKeyError::new_err(n.unbind())),
        }
    }
    Ok(out)
}

/// The first step of `diagnose.regions.structure`: instructions of each side's `order` that are
/// not paired (`pair_left` / `pair_right`), not explained by a cause (`explained_left` /
/// `explained_right`), and whose `h1` neither the other side nor a paired instruction of their
/// own side has (a subgraph computed twice on one side and once on the other is the same
/// computation). Returns the two lists of names in `order`; a paired name outside its side's
/// `order` is a `KeyError`.
#[pyfunction]
pub fn unexplained<'py>(
    py: Python<'py>,
    left: &Bound<'py, CanonHandle>,
    right: &Bound<'py, CanonHandle>,
    pair_left: &Bound<'py, PyAny>,
    pair_right: &Bound<'py, PyAny>,
    explained_left: &Bound<'py, PyAny>,
    explained_right: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    let (l, r) = (left.get(), right.get());
    let pl = key_indices(py, l, pair_left)?;
    let pr = key_indices(py, r, pair_right)?;
    let mut out = Vec::with_capacity(2);
    for (h, own, other, explained) in [(l, &pl, r, explained_left), (r, &pr, l, explained_right)] {
        // `known` (the other side's `h1` and those of this side's paired instructions) read
        // from each handle's sorted `h1` (kept for every diff it joins): an `h1` is a paired
        // one's where its position is.
        let (other_h1, _) = other.h1_classes();
        let (own_h1, class) = h.h1_classes();
        let mut paired = vec![false; own_h1.len()];
        let mut skip = vec![false; h.names.len()];
        for &i in own.iter() {
            paired[class[i as usize] as usize] = true;
            skip[i as usize] = true;
        }
        for n in explained.try_iter()? {
            if let Some(i) = index_of(h, &n?)? {
                skip[i as usize] = true;
            }
        }
        let found = PyList::empty(py);
        for &i in &h.order {
            if !skip[i as usize]
                && !paired[class[i as usize] as usize]
                && other_h1.binary_search(&h.h1[i as usize]).is_err()
            {
                found.append(h.names[i as usize].bind(py))?;
            }
        }
        out.push(found);
    }
    PyTuple::new(py, out)
}
