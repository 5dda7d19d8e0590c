//! The structural matcher of `xlagraph.match`, compiled: the same phases, in the same order, with
//! the same tie-breaks, so that it pairs exactly what the Python reference pairs (and in the same
//! order: the `Matching` dictionaries' order is what later stages iterate).
//!
//! A computation is read once into a `MatchSide` (side.rs: indices instead of names, interned
//! opcodes and shapes); `match_sides` runs the phases (`PHASES`, one file each under phases/) on
//! two of them without the GIL and builds the three dictionaries of `Matching` (or mappings over
//! the pairs, pair_map.rs). Every rule cites the Python function it mirrors; the docstrings there
//! say why each rule is what it is.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

use crate::matching::mappings::{Mappings, NONE, R, TAGS};
use crate::matching::side::MatchSide;

/// A phase of the matcher, with its arguments (the oracle's `PHASES`, tests/oracles/match_reference.py).
#[derive(Clone, Copy)]
enum Phase {
    OutputsExact,
    OutputsContext,
    OutputsAnchored,
    Outputs { balanced: bool },
    TopDown { strict: bool },
    Exact { h1: bool },
    BottomUp,
    Parameters,
}

/// The phases in the order they run: the one list (`_core.match_phases()` gives its names).
const PHASES: [Phase; 14] = [
    Phase::OutputsExact,
    Phase::OutputsContext,
    Phase::OutputsAnchored,
    Phase::Outputs { balanced: true },
    Phase::TopDown { strict: true },
    Phase::Exact { h1: true },
    Phase::Exact { h1: false },
    Phase::TopDown { strict: true },
    Phase::BottomUp,
    Phase::Outputs { balanced: false },
    Phase::Parameters,
    Phase::TopDown { strict: true },
    Phase::BottomUp,
    Phase::TopDown { strict: false },
];

impl Phase {
    /// The phase's name with its arguments (not the tag its pairs record: both `outputs` phases
    /// tag `outputs`).
    fn name(self) -> &'static str {
        match self {
            Phase::OutputsExact => "outputs-exact",
            Phase::OutputsContext => "outputs-context",
            Phase::OutputsAnchored => "outputs-anchored",
            Phase::Outputs { balanced: true } => "outputs-balanced",
            Phase::Outputs { balanced: false } => "outputs-all",
            Phase::TopDown { strict: true } => "top-down",
            Phase::TopDown { strict: false } => "top-down-lenient",
            Phase::Exact { h1: true } => "exact-h1",
            Phase::Exact { h1: false } => "exact-h0",
            Phase::BottomUp => "bottom-up",
            Phase::Parameters => "parameters",
        }
    }
}

/// The names of the matcher's phases, in the order they run (`Phase::name`).
#[pyfunction]
pub fn match_phases(py: Python<'_>) -> PyResult<Bound<'_, PyTuple>> {
    PyTuple::new(py, PHASES.iter().map(|p| p.name()))
}

/// The pairs in the order they were made, and the phase that made each.
type Paired = (Vec<(u32, u32)>, Vec<u8>);

fn run(
    l: &MatchSide,
    r: &MatchSide,
    sent_l: &[bool],
    sent_r: &[bool],
    resharded: bool,
    context: &[(u32, u32)],
) -> R<Paired> {
    let mut m = Mappings {
        l,
        r,
        left: vec![NONE; l.names.len()],
        right: vec![NONE; r.names.len()],
        tag: vec![0; l.names.len()],
        pairs: Vec::new(),
        expanded: vec![false; l.names.len()],
    };
    let none_sent_l = vec![false; l.outputs.len()];
    let none_sent_r = vec![false; r.outputs.len()];
    for phase in PHASES {
        if m.complete(true) || m.complete(false) {
            break;
        }
        match phase {
            Phase::OutputsExact => m.outputs_exact(context)?,
            Phase::OutputsContext => m.outputs_context(context),
            Phase::OutputsAnchored => m.outputs_anchored()?,
            Phase::Outputs { balanced: true } => m.outputs(sent_l, sent_r, resharded, true),
            Phase::Outputs { balanced: false } => {
                m.outputs(&none_sent_l, &none_sent_r, resharded, false)
            }
            Phase::TopDown { strict } => m.top_down(strict)?,
            Phase::Exact { h1 } => m.exact(h1)?,
            Phase::BottomUp => m.bottom_up()?,
            Phase::Parameters => m.parameters(),
        }
    }
    let tags = m.pairs.iter().map(|&(a, _)| m.tag[a as usize]).collect();
    Ok((m.pairs, tags))
}

/// Match two computations read by `match_side_of`. `sent_left` / `sent_right` flag the outputs
/// (by position) that are in `match._sent`; `resharded` is `match`'s; `context` the output
/// slots `match._context_pairs` gives, in its order. Returns the `Matching`
/// dictionaries `(left, right, matcher)` in pairing order, or None where the Python reference
/// must answer (it would look up a hash the canonical form does not hold).
#[pyfunction]
pub fn match_sides<'py>(
    py: Python<'py>,
    left: &Bound<'py, MatchSide>,
    right: &Bound<'py, MatchSide>,
    sent_left: Vec<bool>,
    sent_right: Vec<bool>,
    resharded: bool,
    context: Vec<(u32, u32)>,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let (l, r) = (left.get(), right.get());
    if sent_left.len() != l.outputs.len() || sent_right.len() != r.outputs.len() {
        return Err(PyValueError::new_err("sent flags do not match the outputs"));
    }
    let (nl, nr) = (l.outputs.len() as u32, r.outputs.len() as u32);
    if context.iter().any(|&(i, j)| i >= nl || j >= nr) {
        return Err(PyValueError::new_err("a context pair names no output"));
    }
    let result = py.allow_threads(|| run(l, r, &sent_left, &sent_right, resharded, &context));
    let Ok((pairs, tags)) = result else {
        return Ok(None);
    };
    let tag_str: Vec<Bound<'py, PyString>> = TAGS.iter().map(|t| PyString::intern(py, t)).collect();
    // Mappings over the pairs where both sides' names are unique (pair_map.rs): building three
    // dictionaries of every pair cost six times the matching itself on a 600K pair.
    let kept = tag_str.iter().map(|t| t.clone().unbind()).collect();
    if let Some(maps) =
        crate::matching::pair_map::pair_maps(py, &l.canon, &r.canon, &pairs, &tags, kept)?
    {
        return Ok(Some(PyTuple::new(py, maps)?));
    }
    let dl = PyDict::new(py);
    let dr = PyDict::new(py);
    let dm = PyDict::new(py);
    for (&(a, b), &t) in pairs.iter().zip(&tags) {
        let (na, nb) = (l.names[a as usize].bind(py), r.names[b as usize].bind(py));
        dl.set_item(na, nb)?;
        dr.set_item(nb, na)?;
        dm.set_item(na, &tag_str[t as usize])?;
    }
    Ok(Some((dl, dr, dm).into_pyobject(py)?))
}
