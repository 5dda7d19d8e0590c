//! The matcher's `MatchSide` and the correspondence's `RefineGraph` built from a `CanonHandle`
//! (`canon/handle.rs`), without reading a Python object per instruction: the structures the
//! Python oracles build from the canonical form's dictionaries (tests/test_core_handle.py holds
//! them to `users.users_of`, `match_reference` and `refinement_reference.Graph` with its rounds).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::canon::handle::CanonHandle;
use crate::canon::indexed::users_of;
use crate::canon::model::NONE;
use crate::canon::py_text::python_int;
use crate::canon::shape_text::strip_layout;
use crate::matching::collective_chain::chain_edges;
use crate::matching::refine::RefineGraph;
use crate::matching::refine_from_handle::{ask, assemble, Asked, Assembled};
use crate::matching::side::{intern, rank_key, MatchSide};
use crate::matching::two_threads;
use crate::parse::text::FxMap;

/// `int(text)` (`py_text::python_int`) for what a dimension can be; None where Python raises
/// ValueError. Err where the answer is not certain here (non-ASCII text, a number past 64 bits):
/// the caller's Python path decides such input.
fn py_int(text: &str) -> Result<Option<i64>, ()> {
    if !text.is_ascii() {
        return Err(());
    }
    match python_int(text) {
        None => Ok(None),
        Some(v) if v.unsigned_abs() <= i64::MAX as u128 => Ok(Some(v as i64)),
        Some(_) => Err(()),
    }
}

/// `shapes.dims` of a shape already stripped of its layout.
fn dims(shape: &str) -> Result<Option<Vec<i64>>, ()> {
    let Some((head, rest)) = shape.split_once('[') else {
        return Ok(None);
    };
    if head.starts_with('(') {
        return Ok(None);
    }
    let inside = rest.split_once(']').map_or(rest, |(d, _)| d);
    let mut out = Vec::new();
    for d in inside.split(',') {
        if d.is_empty() {
            continue;
        }
        match py_int(d)? {
            Some(v) => out.push(v),
            None => return Ok(None),
        }
    }
    Ok(Some(out))
}

/// `matcher.match_side` of the computation `handle` holds. `commutative` is
/// `hashes.COMMUTATIVE`. Raises ValueError where the Python reference must decide.
#[pyfunction]
pub fn match_side_of(
    handle: &Bound<'_, CanonHandle>,
    commutative: &Bound<'_, PyAny>,
) -> PyResult<MatchSide> {
    let h = handle.get();
    let n = h.names.len();
    // Per opcode and per shape of the handle: the global ids and flags match_side computes.
    let mut op_info = Vec::with_capacity(h.opcodes.len());
    for text in &h.opcodes {
        op_info.push((
            intern(text),
            commutative.contains(text.as_str())?,
            text == "parameter" || text == "constant",
        ));
    }
    let mut dims_table: Vec<Option<Vec<i64>>> = Vec::new();
    let mut dims_ids: FxMap<Option<Vec<i64>>, u32> = FxMap::default();
    let mut shape_info = Vec::with_capacity(h.shapes.len());
    for text in &h.shapes {
        let stripped = strip_layout(text);
        let d =
            dims(&stripped).map_err(|()| PyValueError::new_err(format!("dimensions of {text}")))?;
        let next = dims_ids.len() as u32;
        let did = *dims_ids.entry(d.clone()).or_insert_with(|| {
            dims_table.push(d);
            next
        });
        shape_info.push((intern(text), intern(&stripped), rank_key(text), did));
    }
    let mut opcode = Vec::with_capacity(n);
    let mut commut = Vec::with_capacity(n);
    let mut leaf = Vec::with_capacity(n);
    let (mut shape, mut stripped, mut rank, mut dims_of) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for i in 0..n {
        let o = op_info[h.opcode[i] as usize];
        opcode.push(o.0);
        commut.push(o.1);
        leaf.push(o.2);
        let s = shape_info[h.shape[i] as usize];
        shape.push(s.0);
        stripped.push(s.1);
        rank.push(s.2);
        dims_of.push(s.3);
    }
    // An input read from a tuple parameter (a get-tuple-element) is a leaf like a parameter.
    for &(i, _) in &h.params {
        leaf[i as usize] = true;
    }
    let (users_start, users) = users_of(n, &h.order, &h.ops_start, &h.ops, &h.has_ops)?;
    Ok(MatchSide {
        canon: h.canon.clone(),
        opcode,
        commutative: commut,
        leaf,
        shape,
        stripped,
        rank,
        dims: dims_of,
        dims_table,
        has_h: h.in_order(),
        users_start,
        users,
        lone_h0: Default::default(),
        chain: chain_edges(h),
    })
}

/// `refine.refine_graph` of the computation each `(handle, alias)` holds: nodes are `order` and
/// then the parameters without an operands entry; `commutative` is the correspondence's
/// `_COMMUTATIVE`, `first_colours` its `_first_colours` (asked once per kind of instruction and
/// input or not), `output_mark` its `_OUTPUT`; `alias` the identity multiplies as (instruction,
/// what it multiplies) (`identity.identity_multiplies(...).by_index`): no edge of their own, their
/// users read the value. Built on two threads where two have more than `two_threads::PAST` nodes,
/// or as `parallel` says (tests): a pair's graphs are independent, and what they ask of Python is
/// asked first, under the GIL.
#[pyfunction]
#[pyo3(signature = (wanted, commutative, first_colours, output_mark, parallel=None))]
pub fn refine_graphs_of(
    py: Python<'_>,
    wanted: Vec<(Bound<'_, CanonHandle>, Vec<(u32, u32)>)>,
    commutative: &Bound<'_, PyAny>,
    first_colours: &Bound<'_, PyAny>,
    output_mark: i64,
    parallel: Option<bool>,
) -> PyResult<Vec<RefineGraph>> {
    let mut asked: Vec<(&CanonHandle, Asked, Vec<u32>)> = Vec::with_capacity(wanted.len());
    for (handle, alias) in &wanted {
        let h = handle.get();
        let redirect = redirects(h.names.len(), alias)?;
        // A computation's graphs with and without its multiplies by one ask the same.
        let same = asked.iter().find(|(g, ..)| std::ptr::eq(*g, h));
        let answers = match same {
            Some((_, a, _)) => a.clone(),
            None => ask(py, h, commutative, first_colours)?,
        };
        asked.push((h, answers, redirect));
    }
    let large = parallel.unwrap_or_else(|| {
        asked
            .iter()
            .filter(|(h, ..)| h.names.len() > two_threads::PAST)
            .count()
            > 1
    });
    let assemble_all = |part: &[(&CanonHandle, Asked, Vec<u32>)]| -> Vec<Assembled> {
        part.iter()
            .map(|(h, a, redirect)| assemble(h, a, redirect, output_mark))
            .collect()
    };
    let half = asked.len().div_ceil(2);
    let (first, second) = asked.split_at(half);
    let (mut done, rest) = py.allow_threads(|| {
        two_threads::both(large, || assemble_all(first), || assemble_all(second))
    });
    done.extend(rest);
    Ok(done
        .into_iter()
        .zip(&asked)
        .map(|(a, (h, ..))| a.into_graph(py, h))
        .collect())
}

fn redirects(count: usize, alias: &[(u32, u32)]) -> PyResult<Vec<u32>> {
    let mut redirect = vec![NONE; count];
    for &(from, to) in alias {
        if from as usize >= count || to as usize >= count {
            return Err(PyValueError::new_err(
                "refine: an alias outside the computation",
            ));
        }
        redirect[from as usize] = to;
    }
    Ok(redirect)
}
