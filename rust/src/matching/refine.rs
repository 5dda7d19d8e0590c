//! Colour refinement of `xlagraph.match.correspondence`, compiled: `_history` (its rounds of
//! `_round`) on two graphs built from the canonical form (`from_handle.rs`). The colours are other numbers than the
//! Python reference's (another hash), but they split the instructions into the same classes
//! round by round, and that is all the caller reads: it groups by colour equality, across both
//! graphs, and stops when neither partition splits further.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};

use crate::canon::handle::shared_int;
use crate::matching::colour_graph::{combine, count_distinct, distinct, Graph};
use crate::matching::refine_alone::{
    cannot_stabilize, picked_history, unstable_colours, AloneRuns, OneGraph, PickedRuns,
};
use crate::matching::refine_split::split_rounds;
use crate::parse::text::FxMap;

/// `_history`: the colours of both graphs per round, from `first_a`/`first_b` (individualized
/// ones among them), until neither partition splits any more or after `rounds` rounds.
#[pyfunction]
pub fn refine_history<'py>(
    py: Python<'py>,
    a: &RefineGraph,
    b: &RefineGraph,
    first_a: Vec<u64>,
    first_b: Vec<u64>,
    rounds: usize,
) -> PyResult<Bound<'py, PyTuple>> {
    let (ga, gb) = (&a.graph, &b.graph);
    if first_a.len() != ga.marks.len() || first_b.len() != gb.marks.len() {
        return Err(PyValueError::new_err(
            "refine: colours and graph differ in size",
        ));
    }
    let found = py.allow_threads(|| {
        let mut ha = vec![first_a];
        let mut hb = vec![first_b];
        let mut counts = (distinct(&ha[0]), distinct(&hb[0]));
        let mut scratch = Vec::new();
        for _ in 0..rounds {
            let (mut na, mut nb) = (Vec::new(), Vec::new());
            ga.round(ha.last().unwrap(), &mut na, &mut scratch);
            gb.round(hb.last().unwrap(), &mut nb, &mut scratch);
            let now = (distinct(&na), distinct(&nb));
            if now == counts {
                break;
            }
            ha.push(na);
            hb.push(nb);
            counts = now;
        }
        (ha, hb)
    });
    histories_py(py, found)
}

/// Both sides' rounds of colours as Python lists of lists of ints, one int object per distinct
/// colour: a round repeats a few hundred colours over thousands of nodes, and an int made per
/// entry (5.2M in the 20-variant report, 200 MB of 40-byte objects made and freed again) cost a
/// tenth of that report's page faults. The values, and so every answer, are the same.
fn histories_py<'py>(
    py: Python<'py>,
    (ha, hb): (Vec<Vec<u64>>, Vec<Vec<u64>>),
) -> PyResult<Bound<'py, PyTuple>> {
    let mut ints: FxMap<u64, Bound<'py, PyAny>> = FxMap::default();
    let mut side = |h: Vec<Vec<u64>>| -> PyResult<Bound<'py, PyList>> {
        let rounds = PyList::empty(py);
        for round in h {
            let mut items = Vec::with_capacity(round.len());
            for c in round {
                items.push(shared_int(py, &mut ints, c)?);
            }
            rounds.append(PyList::new(py, items)?)?;
        }
        Ok(rounds)
    };
    let (a, b) = (side(ha)?, side(hb)?);
    PyTuple::new(py, [a, b])
}

/// A computation's dataflow graph for the correspondence, the one builder of it (the tests'
/// reference is `tests/oracles/refinement_reference.Graph`): nodes are `order` and then the
/// parameters that have no `operands` entry; operands are the canonical ones that are nodes.
/// First colours are asked of Python once per distinct kind of instruction (its
/// `_first_colours`, so the classes are exactly the reference's); only the colours of the
/// inputs and outputs go back to Python.
#[pyclass(frozen, module = "xlagraph._core")]
pub struct RefineGraph {
    pub(crate) graph: Graph,
    pub(crate) loose: Vec<u64>,
    pub(crate) strict: Vec<u64>,
    /// Node of each parameter kept (`param_number` order) and its name.
    pub(crate) params: Vec<u32>,
    pub(crate) param_names: Vec<Py<PyAny>>,
    /// Node of each output slot, -1 where the output is not a node.
    pub(crate) outputs: Vec<i64>,
    /// Its plain refinements alone, kept for the pairs it is in (`refine_alone.rs`).
    pub(crate) alone: AloneRuns,
    /// Its `refine_picked` rounds alone, kept likewise.
    pub(crate) picked: PickedRuns,
}

impl RefineGraph {
    /// The first colours: strict (full shapes and attributes) or loose.
    pub(crate) fn first(&self, strict: bool) -> Vec<u64> {
        self.one().first(strict)
    }

    /// What its refinement alone reads (refine_alone.rs).
    pub(crate) fn one(&self) -> OneGraph<'_> {
        OneGraph {
            graph: &self.graph,
            loose: &self.loose,
            strict: &self.strict,
            outputs: &self.outputs,
            alone: &self.alone,
            picked: &self.picked,
        }
    }
}

#[pymethods]
impl RefineGraph {
    #[getter]
    fn params(&self) -> Vec<u32> {
        self.params.clone()
    }
    #[getter]
    fn param_names(&self, py: Python<'_>) -> Vec<Py<PyAny>> {
        self.param_names.iter().map(|n| n.clone_ref(py)).collect()
    }
    #[getter]
    fn outputs(&self) -> Vec<i64> {
        self.outputs.clone()
    }
    fn __len__(&self) -> usize {
        self.loose.len()
    }
    /// The first colours of every node, strict (full shapes and attributes) or loose.
    fn first_colours(&self, strict: bool) -> Vec<u64> {
        self.first(strict)
    }
    /// Node `k`'s operands and users, as refinement reads them (`correspondence._meta_signature`).
    fn neighbours(&self, k: usize) -> PyResult<(Vec<u32>, Vec<u32>)> {
        let g = &self.graph;
        if k >= self.loose.len() {
            return Err(PyValueError::new_err("refine: a node is out of range"));
        }
        let (ops, users) = (
            g.op_start[k] as usize..g.op_start[k + 1] as usize,
            g.user_start[k] as usize..g.user_start[k + 1] as usize,
        );
        Ok((g.ops[ops].to_vec(), g.users[users].to_vec()))
    }
    /// This graph's own plain refinement for `rounds` rounds (`refine_split.rs`): whether its
    /// partition split at every round, and the rounds that split before one did not. `naive`:
    /// by every round over every node's colour instead (the reference the tests compare).
    #[pyo3(signature = (strict, rounds, naive=false))]
    fn split_rounds(&self, strict: bool, rounds: usize, naive: bool) -> (bool, usize) {
        let mut colours = self.first(strict);
        let view = self.graph.without_outputs(&[], &self.outputs);
        view.blank(&mut colours);
        if !naive {
            let (graph, live) = view.parts();
            return split_rounds(graph, live, &colours, rounds);
        }
        let mut count = distinct(&colours);
        let (mut next, mut scratch) = (Vec::new(), Vec::new());
        for done in 0..rounds {
            view.round(&colours, &mut next, &mut scratch);
            view.blank(&mut next);
            let now = distinct(&next);
            if now == count {
                return (false, done);
            }
            std::mem::swap(&mut colours, &mut next);
            count = now;
        }
        (true, rounds)
    }
    /// Nodes plus operand edges: what one round costs.
    #[getter]
    fn size(&self) -> usize {
        self.loose.len() + self.graph.ops.len()
    }

    /// Colour refinement of this graph (A) and `other` (B) together, from their strict or loose
    /// first colours, until the joint partition is stable (no class of A and B together splits)
    /// or after `max_rounds`. `salts_a`/`salts_b`: (node, salt) mixed into first colours (the
    /// individualized nodes). `unmark_a`/`unmark_b`: output nodes that lose one output mark
    /// (an output supposed dropped or added), and with them what only they kept alive: the nodes
    /// no remaining output reaches are left out, and their users with them. Returns (rounds run,
    /// stable, balanced: every class holds as many nodes of A as of B, the last colours of
    /// `pick_a`, of `pick_b`); a node left out gets colour 0 and counts in no class.
    #[allow(clippy::too_many_arguments)]
    /// `alone=False` always runs the joint refinement (`refine_alone.rs` answers plain ones from
    /// each graph's run alone where it can: the same answer, checked by the tests).
    /// `stable_only=True`: a plain refinement that cannot be stable within `max_rounds` answers
    /// (max_rounds, False, False, [], []) without computing the colours (callers that read an
    /// unstable answer only as such: `isomorphic.explain`).
    #[pyo3(signature = (other, strict, max_rounds, pick_a, pick_b, salts_a=vec![], salts_b=vec![], unmark_a=vec![], unmark_b=vec![], alone=true, stable_only=false))]
    fn refine_with(
        &self,
        py: Python<'_>,
        other: &RefineGraph,
        strict: bool,
        max_rounds: usize,
        pick_a: Vec<u32>,
        pick_b: Vec<u32>,
        salts_a: Vec<(u32, u64)>,
        salts_b: Vec<(u32, u64)>,
        unmark_a: Vec<u32>,
        unmark_b: Vec<u32>,
        alone: bool,
        stable_only: bool,
    ) -> PyResult<(usize, bool, bool, Vec<u64>, Vec<u64>)> {
        let (na, nb) = (self.loose.len(), other.loose.len());
        let bad = |v: &[u32], n: usize| v.iter().any(|&i| i as usize >= n);
        if bad(&pick_a, na)
            || bad(&pick_b, nb)
            || bad(&unmark_a, na)
            || bad(&unmark_b, nb)
            || salts_a.iter().any(|&(i, _)| i as usize >= na)
            || salts_b.iter().any(|&(i, _)| i as usize >= nb)
        {
            return Err(PyValueError::new_err("refine: a node is out of range"));
        }
        let first = |g: &RefineGraph, salts: &[(u32, u64)]| -> Vec<u64> {
            let mut c = g.first(strict);
            for &(i, salt) in salts {
                c[i as usize] = combine(c[i as usize], salt);
            }
            c
        };
        let plain = alone
            && max_rounds > 0
            && salts_a.is_empty()
            && salts_b.is_empty()
            && unmark_a.is_empty()
            && unmark_b.is_empty();
        let pick = |col: &[u64], which: &[u32]| -> Vec<u64> {
            which.iter().map(|&i| col[i as usize]).collect()
        };
        Ok(py.allow_threads(|| {
            if plain
                && stable_only
                && cannot_stabilize(&self.one(), &other.one(), strict, max_rounds)
            {
                return (max_rounds, false, false, Vec::new(), Vec::new());
            }
            if plain {
                if let Some((ca, cb)) =
                    unstable_colours(&self.one(), &other.one(), strict, max_rounds)
                {
                    let balanced = balanced(&ca, &cb);
                    return (
                        max_rounds,
                        false,
                        balanced,
                        pick(&ca, &pick_a),
                        pick(&cb, &pick_b),
                    );
                }
            }
            let (ga, gb) = (
                self.graph.without_outputs(&unmark_a, &self.outputs),
                other.graph.without_outputs(&unmark_b, &other.outputs),
            );
            let (mut ca, mut cb) = (first(self, &salts_a), first(other, &salts_b));
            ga.blank(&mut ca);
            gb.blank(&mut cb);
            let mut count = distinct_both(&ca, &cb);
            let (mut xa, mut xb) = (Vec::new(), Vec::new());
            let mut scratch = Vec::new();
            let (mut rounds, mut stable) = (0, false);
            while rounds < max_rounds {
                ga.round(&ca, &mut xa, &mut scratch);
                gb.round(&cb, &mut xb, &mut scratch);
                ga.blank(&mut xa);
                gb.blank(&mut xb);
                let now = distinct_both(&xa, &xb);
                if now == count {
                    stable = true;
                    break;
                }
                rounds += 1;
                std::mem::swap(&mut ca, &mut xa);
                std::mem::swap(&mut cb, &mut xb);
                count = now;
            }
            let balanced = balanced(&ca, &cb);
            (
                rounds,
                stable,
                balanced,
                pick(&ca, &pick_a),
                pick(&cb, &pick_b),
            )
        }))
    }
}

/// Every class (but the nodes left out, colour 0) holds as many nodes of A as of B: refinement
/// cannot tell the two graphs apart.
fn balanced(a: &[u64], b: &[u64]) -> bool {
    let mut count: FxMap<u64, i64> = FxMap::default();
    for &c in a.iter().filter(|&&c| c != 0) {
        *count.entry(c).or_insert(0) += 1;
    }
    for &c in b.iter().filter(|&&c| c != 0) {
        *count.entry(c).or_insert(0) -= 1;
    }
    count.values().all(|&v| v == 0)
}

/// Classes of A and B together: a colour held on both sides is one class.
fn distinct_both(a: &[u64], b: &[u64]) -> usize {
    count_distinct(a.iter().chain(b.iter()).copied(), a.len() + b.len())
}

/// `_history` on two built graphs, from their strict or loose first colours, keeping of each
/// round only the colours of the nodes `pick_a` / `pick_b` (the inputs and outputs the caller
/// pairs): the stopping rule still counts classes over every node. `alone`: answer from each
/// graph's rounds alone, kept on it (`refine_alone.rs`; the same answer): by default for large
/// graphs, always (True) or never (False).
#[pyfunction]
#[pyo3(signature = (a, b, strict, rounds, pick_a, pick_b, alone=None))]
#[allow(clippy::too_many_arguments)]
pub fn refine_picked<'py>(
    py: Python<'py>,
    a: &RefineGraph,
    b: &RefineGraph,
    strict: bool,
    rounds: usize,
    pick_a: Vec<u32>,
    pick_b: Vec<u32>,
    alone: Option<bool>,
) -> PyResult<Bound<'py, PyTuple>> {
    let (na, nb) = (a.loose.len(), b.loose.len());
    if pick_a.iter().any(|&i| i as usize >= na) || pick_b.iter().any(|&i| i as usize >= nb) {
        return Err(PyValueError::new_err(
            "refine: a picked node is out of range",
        ));
    }
    let pick = |col: &[u64], which: &[u32]| -> Vec<u64> {
        which.iter().map(|&i| col[i as usize]).collect()
    };
    let found = py.allow_threads(|| {
        if let Some(found) =
            picked_history(&a.one(), &b.one(), strict, rounds, &pick_a, &pick_b, alone)
        {
            return found;
        }
        let (fa, fb) = if strict {
            (&a.strict, &b.strict)
        } else {
            (&a.loose, &b.loose)
        };
        let mut ha = vec![pick(fa, &pick_a)];
        let mut hb = vec![pick(fb, &pick_b)];
        let mut counts = (distinct(fa), distinct(fb));
        let (mut ca, mut cb) = (fa.clone(), fb.clone());
        let (mut na, mut nb) = (Vec::new(), Vec::new());
        let mut scratch = Vec::new();
        for _ in 0..rounds {
            a.graph.round(&ca, &mut na, &mut scratch);
            b.graph.round(&cb, &mut nb, &mut scratch);
            let now = (distinct(&na), distinct(&nb));
            if now == counts {
                break;
            }
            ha.push(pick(&na, &pick_a));
            hb.push(pick(&nb, &pick_b));
            std::mem::swap(&mut ca, &mut na);
            std::mem::swap(&mut cb, &mut nb);
            counts = now;
        }
        (ha, hb)
    });
    histories_py(py, found)
}
