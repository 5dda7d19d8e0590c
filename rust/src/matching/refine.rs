//! Colour refinement of `xlagraph.match.correspondence`, compiled: `_history` (its rounds of
//! `_round`) on two graphs given as integer arrays. The colours are other numbers than the
//! Python reference's (another hash), but they split the instructions into the same classes
//! round by round, and that is all the caller reads: it groups by colour equality, across both
//! graphs, and stops when neither partition splits further.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

use crate::matching::refine_alone::{
    cannot_stabilize, picked_history, unstable_colours, AloneRuns, PickedRuns,
};
use crate::parse::text::FxMap;

/// One graph: per node, its operands (CSR), whether they enter sorted (commutative), its users
/// with the operand index each reads it at (-1: commutative), its output mark and first colour.
pub(crate) struct Graph {
    pub(crate) op_start: Vec<u32>,
    pub(crate) ops: Vec<u32>,
    pub(crate) sorted: Vec<bool>,
    pub(crate) user_start: Vec<u32>,
    pub(crate) users: Vec<u32>,
    pub(crate) user_at: Vec<i32>,
    pub(crate) marks: Vec<u64>,
    /// The mark one output adds (0 where unknown: `refine_history`'s graphs).
    pub(crate) output_mark: u64,
    /// Parameters: nodes that stay inputs when outputs are dropped.
    pub(crate) is_param: Vec<bool>,
}

#[inline]
pub(crate) fn mix(mut x: u64) -> u64 {
    // splitmix64's finalizer: every input bit reaches every output bit.
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

#[inline]
pub(crate) fn combine(h: u64, v: u64) -> u64 {
    mix(h ^ v.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17))
}

impl Graph {
    pub(crate) fn round(&self, col: &[u64], out: &mut Vec<u64>, scratch: &mut Vec<u64>) {
        out.clear();
        for k in 0..col.len() {
            let (s, e) = (self.op_start[k] as usize, self.op_start[k + 1] as usize);
            scratch.clear();
            scratch.extend(self.ops[s..e].iter().map(|&o| col[o as usize]));
            if self.sorted[k] {
                scratch.sort_unstable();
            }
            let mut h = combine(0x5851_F42D_4C95_7F2D, col[k]);
            h = combine(h, (e - s) as u64);
            for &c in scratch.iter() {
                h = combine(h, c);
            }
            // Users: a multiset (a sum of hashes, any order), then the output mark.
            let (us, ue) = (self.user_start[k] as usize, self.user_start[k + 1] as usize);
            let mut uh: u64 = self.marks[k];
            for i in us..ue {
                let pair = combine(
                    mix(col[self.users[i] as usize]),
                    self.user_at[i] as i64 as u64,
                );
                uh = uh.wrapping_add(pair);
            }
            out.push(combine(h, uh));
        }
    }
}

pub(crate) fn distinct(col: &[u64]) -> usize {
    count_distinct(col.iter().copied(), col.len())
}

/// How many distinct values `values` (at most `n` of them) holds: the stopping rule's count of
/// classes, every round. An open-addressing table sized once (a hash map grown from empty
/// rehashed some 17 times a round on 100K nodes); 0 is counted apart, as the empty slot.
fn count_distinct(values: impl Iterator<Item = u64>, n: usize) -> usize {
    let bits = (2 * n.max(8)).next_power_of_two().trailing_zeros();
    let mask = (1usize << bits) - 1;
    let mut table = vec![0u64; mask + 1];
    let (mut count, mut zero) = (0, false);
    for c in values {
        if c == 0 {
            count += usize::from(!zero);
            zero = true;
            continue;
        }
        // Fibonacci hashing: first colours may be small numbers, not hashes.
        let mut i = (c.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize;
        loop {
            let t = table[i];
            if t == c {
                break;
            }
            if t == 0 {
                table[i] = c;
                count += 1;
                break;
            }
            i = (i + 1) & mask;
        }
    }
    count
}

type GraphArrays = (
    Vec<u32>,
    Vec<u32>,
    Vec<bool>,
    Vec<u32>,
    Vec<u32>,
    Vec<i32>,
    Vec<u64>,
);

fn graph(a: GraphArrays) -> PyResult<Graph> {
    let (op_start, ops, sorted, user_start, users, user_at, marks) = a;
    let n = marks.len();
    let ok = op_start.len() == n + 1
        && user_start.len() == n + 1
        && sorted.len() == n
        && users.len() == user_at.len()
        && op_start.last().map_or(false, |&e| e as usize == ops.len())
        && user_start
            .last()
            .map_or(false, |&e| e as usize == users.len())
        && ops.iter().chain(users.iter()).all(|&o| (o as usize) < n);
    if !ok {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "refine: inconsistent graph arrays",
        ));
    }
    let is_param = vec![false; n];
    Ok(Graph {
        op_start,
        ops,
        sorted,
        user_start,
        users,
        user_at,
        marks,
        output_mark: 0,
        is_param,
    })
}

/// `_history`: the colours of both graphs per round, from `first_a`/`first_b`, until neither
/// partition splits any more or after `rounds` rounds.
#[pyfunction]
pub fn refine_history(
    py: Python<'_>,
    a: GraphArrays,
    b: GraphArrays,
    first_a: Vec<u64>,
    first_b: Vec<u64>,
    rounds: usize,
) -> PyResult<(Vec<Vec<u64>>, Vec<Vec<u64>>)> {
    let (ga, gb) = (graph(a)?, graph(b)?);
    if first_a.len() != ga.marks.len() || first_b.len() != gb.marks.len() {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "refine: colours and graph differ in size",
        ));
    }
    Ok(py.allow_threads(|| {
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
    }))
}

/// A computation's dataflow graph for the correspondence (`correspondence._Graph`), built here
/// from the canonical form instead of per-node Python lists: nodes are `order` and then the
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
        if strict {
            self.strict.clone()
        } else {
            self.loose.clone()
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
            return crate::matching::refine_split::split_rounds(graph, live, &colours, rounds);
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
            if plain && stable_only && cannot_stabilize(self, other, strict, max_rounds) {
                return (max_rounds, false, false, Vec::new(), Vec::new());
            }
            if plain {
                if let Some((ca, cb)) = unstable_colours(self, other, strict, max_rounds) {
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

/// A graph as refinement reads it: borrowed from a built one, or rebuilt without some outputs.
pub(crate) enum View<'g> {
    Whole(&'g Graph),
    Pruned { graph: Graph, live: Vec<bool> },
}

impl Graph {
    /// This graph with one output mark taken off each of `unmark` and the nodes no other output
    /// reaches left out (no user, no operand, colour 0): what the graph is with those outputs
    /// dropped. Parameters stay nodes (a parameter nothing reads is still an input).
    /// With no output dropped it is the whole graph, unless some node reaches no output (a
    /// multiply by one that `identity.py` sees through): those are left out as well.
    pub(crate) fn without_outputs<'g>(&'g self, unmark: &[u32], outputs: &[i64]) -> View<'g> {
        let n = self.marks.len();
        let mut marks = self.marks.clone();
        let mut left: Vec<i64> = outputs.to_vec();
        for &u in unmark {
            marks[u as usize] = marks[u as usize].wrapping_sub(self.output_mark);
            if let Some(k) = left.iter().position(|&o| o == i64::from(u)) {
                left.remove(k);
            }
        }
        // What the remaining outputs reach, through operands.
        let mut live = vec![false; n];
        let mut stack: Vec<u32> = left
            .iter()
            .filter(|&&o| o >= 0)
            .map(|&o| o as u32)
            .collect();
        while let Some(k) = stack.pop() {
            if std::mem::replace(&mut live[k as usize], true) {
                continue;
            }
            let (s, e) = (
                self.op_start[k as usize] as usize,
                self.op_start[k as usize + 1] as usize,
            );
            stack.extend(
                self.ops[s..e]
                    .iter()
                    .copied()
                    .filter(|&o| !live[o as usize]),
            );
        }
        for k in 0..n {
            // A parameter stays an input; an instruction nothing live reads is gone.
            if self.op_start[k] == self.op_start[k + 1] && self.is_param[k] {
                live[k] = true;
            }
        }
        if unmark.is_empty() && live.iter().all(|&l| l) {
            return View::Whole(self);
        }
        let mut op_start = vec![0u32];
        let mut ops = Vec::new();
        for k in 0..n {
            if live[k] {
                let (s, e) = (self.op_start[k] as usize, self.op_start[k + 1] as usize);
                ops.extend(self.ops[s..e].iter().copied().filter(|&o| live[o as usize]));
            }
            op_start.push(ops.len() as u32);
        }
        let mut user_start = vec![0u32];
        let (mut users, mut user_at) = (Vec::new(), Vec::new());
        for k in 0..n {
            let (s, e) = (self.user_start[k] as usize, self.user_start[k + 1] as usize);
            for i in s..e {
                if live[self.users[i] as usize] && live[k] {
                    users.push(self.users[i]);
                    user_at.push(self.user_at[i]);
                }
            }
            user_start.push(users.len() as u32);
        }
        View::Pruned {
            graph: Graph {
                op_start,
                ops,
                sorted: self.sorted.clone(),
                user_start,
                users,
                user_at,
                marks,
                output_mark: self.output_mark,
                is_param: self.is_param.clone(),
            },
            live,
        }
    }
}

impl View<'_> {
    /// The graph refinement walks, and which nodes it keeps (None: all).
    pub(crate) fn parts(&self) -> (&Graph, Option<&[bool]>) {
        match self {
            View::Whole(g) => (g, None),
            View::Pruned { graph, live } => (graph, Some(live)),
        }
    }
    pub(crate) fn round(&self, col: &[u64], out: &mut Vec<u64>, scratch: &mut Vec<u64>) {
        match self {
            View::Whole(g) => g.round(col, out, scratch),
            View::Pruned { graph, .. } => graph.round(col, out, scratch),
        }
    }
    /// Nodes left out get colour 0, so that they neither count as classes nor look alike.
    pub(crate) fn blank(&self, col: &mut [u64]) {
        if let View::Pruned { live, .. } = self {
            for (c, &l) in col.iter_mut().zip(live.iter()) {
                if !l {
                    *c = 0;
                }
            }
        }
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

/// Names to nodes: by object identity first (the canonical form shares the IR's strings), then
/// by text (a table made on the first miss).
struct Nodes<'py> {
    by_ptr: FxMap<usize, u32>,
    by_text: Option<FxMap<String, u32>>,
    names: Vec<Bound<'py, PyAny>>,
}

impl<'py> Nodes<'py> {
    fn get(&mut self, name: &Bound<'py, PyAny>) -> PyResult<Option<u32>> {
        if let Some(&i) = self.by_ptr.get(&(name.as_ptr() as usize)) {
            return Ok(Some(i));
        }
        if self.by_text.is_none() {
            let mut t = FxMap::default();
            for (k, n) in self.names.iter().enumerate() {
                t.insert(n.downcast::<PyString>()?.to_str()?.to_owned(), k as u32);
            }
            self.by_text = Some(t);
        }
        let s = name.downcast::<PyString>()?.to_str()?;
        Ok(self.by_text.as_ref().and_then(|t| t.get(s).copied()))
    }
}

fn push_str(key: &mut Vec<u8>, s: &Bound<'_, PyAny>) -> PyResult<()> {
    let s = s.downcast::<PyString>()?.to_str()?;
    key.extend_from_slice(&(s.len() as u64).to_le_bytes());
    key.extend_from_slice(s.as_bytes());
    Ok(())
}

/// Build the graph of one canonical computation. `by_name` is `Computation.by_name`; `order`,
/// `operands`, `param_number` and `outputs` are the canonical form's fields; `commutative` the
/// correspondence's `_COMMUTATIVE`; `first_colours(is_input, opcode, shape, attributes,
/// called)` its `_first_colours`; `output_mark` its `_OUTPUT`. `keys`, the canonical form's
/// content keys: an instruction that calls computations adds its key (their hashes among it)
/// to its strict colour, so that a call of one function is not a call of another. `alias`:
/// `identity.identity_multiplies(...).by_name`, multiplies by one read as what they multiply.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
#[pyo3(signature = (by_name, order, operands, param_number, outputs, commutative, first_colours, output_mark, keys=None, alias=None))]
pub fn refine_graph<'py>(
    by_name: &Bound<'py, PyDict>,
    order: &Bound<'py, PyTuple>,
    operands: &Bound<'py, PyDict>,
    param_number: &Bound<'py, PyDict>,
    outputs: &Bound<'py, PyTuple>,
    commutative: &Bound<'py, PyAny>,
    first_colours: &Bound<'py, PyAny>,
    output_mark: i64,
    keys: Option<&Bound<'py, PyDict>>,
    alias: Option<&Bound<'py, PyDict>>,
) -> PyResult<RefineGraph> {
    let mut names: Vec<Bound<'py, PyAny>> = order.iter().collect();
    for p in param_number.keys().iter() {
        if !operands.contains(&p)? {
            names.push(p);
        }
    }
    let n = names.len();
    let mut by_ptr = FxMap::default();
    by_ptr.reserve(n);
    for (k, name) in names.iter().enumerate() {
        by_ptr.insert(name.as_ptr() as usize, k as u32);
    }
    let mut nodes = Nodes {
        by_ptr,
        by_text: None,
        names,
    };
    let mut per_ops: Vec<Vec<u32>> = Vec::with_capacity(n);
    let mut sorted = Vec::with_capacity(n);
    let mut commut = Vec::with_capacity(n);
    let mut loose = Vec::with_capacity(n);
    let mut strict = Vec::with_capacity(n);
    let mut memo: FxMap<Vec<u8>, (u64, u64)> = FxMap::default();
    let mut opcode_commutative: FxMap<usize, bool> = FxMap::default();
    let mut key: Vec<u8> = Vec::new();
    let mut keep_alive: Vec<Bound<'py, PyAny>> = Vec::new();
    for k in 0..n {
        let name = nodes.names[k].clone();
        let ins = by_name
            .get_item(&name)?
            .ok_or_else(|| PyValueError::new_err("refine: a node is not an instruction"))?;
        let ins = ins.downcast::<PyTuple>()?;
        let (opcode, shape, attributes, called) = (
            ins.get_item(1)?,
            ins.get_item(2)?,
            ins.get_item(4)?,
            ins.get_item(5)?,
        );
        let mut ops = Vec::new();
        // An identity multiply (`identity.py`) keeps no edge; its users read what it multiplies.
        let seen_through = match alias {
            Some(a) => a.contains(&name)?,
            None => false,
        };
        if let (false, Some(t)) = (seen_through, operands.get_item(&name)?) {
            for o in t.downcast::<PyTuple>()?.iter() {
                let o = match alias.map(|a| a.get_item(&o)).transpose()?.flatten() {
                    Some(target) => target,
                    None => o,
                };
                if let Some(i) = nodes.get(&o)? {
                    ops.push(i);
                }
            }
        }
        let c = match opcode_commutative.get(&(opcode.as_ptr() as usize)) {
            Some(&c) => c,
            None => {
                let c = commutative.contains(&opcode)?;
                opcode_commutative.insert(opcode.as_ptr() as usize, c);
                keep_alive.push(opcode.clone());
                c
            }
        };
        commut.push(c);
        sorted.push(c && ops.len() > 1);
        per_ops.push(ops);
        let is_input = param_number.contains(&name)?;
        let n_called = called.len()?;
        key.clear();
        key.push(u8::from(is_input));
        key.extend_from_slice(&(n_called as u64).to_le_bytes());
        push_str(&mut key, &opcode)?;
        push_str(&mut key, &shape)?;
        for kv in attributes.downcast::<PyTuple>()?.iter() {
            let kv = kv.downcast::<PyTuple>()?;
            if kv.len() != 2 {
                return Err(PyValueError::new_err("refine: an attribute is not a pair"));
            }
            push_str(&mut key, &kv.get_item(0)?)?;
            push_str(&mut key, &kv.get_item(1)?)?;
        }
        let colours = match memo.get(key.as_slice()) {
            Some(&c) => c,
            None => {
                let got =
                    first_colours.call1((is_input, &opcode, &shape, &attributes, n_called))?;
                let (l, s): (i64, i64) = got.extract()?;
                let c = (l as u64, s as u64);
                memo.insert(key.clone(), c);
                c
            }
        };
        loose.push(colours.0);
        let callee = match keys {
            Some(k) if n_called > 0 => k.get_item(&name)?.map(|v| v.hash()).transpose()?,
            _ => None,
        };
        strict.push(match callee {
            Some(h) => combine(colours.1, h as u64),
            None => colours.1,
        });
    }
    drop(keep_alive);
    // Operands and users as CSR; a user reads at its operand index (-1: commutative).
    let mut op_start = Vec::with_capacity(n + 1);
    let mut ops = Vec::new();
    let mut count = vec![0u32; n + 1];
    op_start.push(0u32);
    for row in &per_ops {
        ops.extend_from_slice(row);
        op_start.push(ops.len() as u32);
        for &o in row {
            count[o as usize + 1] += 1;
        }
    }
    for i in 0..n {
        count[i + 1] += count[i];
    }
    let user_start = count.clone();
    let mut fill = count;
    let mut users = vec![0u32; ops.len()];
    let mut user_at = vec![0i32; ops.len()];
    for (k, row) in per_ops.iter().enumerate() {
        for (j, &o) in row.iter().enumerate() {
            let at = &mut fill[o as usize];
            users[*at as usize] = k as u32;
            user_at[*at as usize] = if commut[k] { -1 } else { j as i32 };
            *at += 1;
        }
    }
    drop(per_ops);
    let mut marks = vec![0u64; n];
    let mut out_nodes = Vec::with_capacity(outputs.len());
    for o in outputs.iter() {
        match nodes.get(&o)? {
            Some(i) => {
                marks[i as usize] = marks[i as usize].wrapping_add(output_mark as u64);
                out_nodes.push(i64::from(i));
            }
            None => out_nodes.push(-1),
        }
    }
    let mut params = Vec::new();
    let mut param_names = Vec::new();
    let mut is_param = vec![false; n];
    for p in param_number.keys().iter() {
        if let Some(i) = nodes.get(&p)? {
            params.push(i);
            is_param[i as usize] = true;
            param_names.push(p.unbind());
        }
    }
    Ok(RefineGraph {
        graph: Graph {
            op_start,
            ops,
            sorted,
            user_start,
            users,
            user_at,
            marks,
            output_mark: output_mark as u64,
            is_param,
        },
        loose,
        strict,
        params,
        param_names,
        outputs: out_nodes,
        alone: AloneRuns::default(),
        picked: PickedRuns::default(),
    })
}

/// `_history` on two built graphs, from their strict or loose first colours, keeping of each
/// round only the colours of the nodes `pick_a` / `pick_b` (the inputs and outputs the caller
/// pairs): the stopping rule still counts classes over every node. `alone`: answer from each
/// graph's rounds alone, kept on it (`refine_alone.rs`; the same answer): by default for large
/// graphs, always (True) or never (False).
#[pyfunction]
#[pyo3(signature = (a, b, strict, rounds, pick_a, pick_b, alone=None))]
#[allow(clippy::too_many_arguments)]
pub fn refine_picked(
    py: Python<'_>,
    a: &RefineGraph,
    b: &RefineGraph,
    strict: bool,
    rounds: usize,
    pick_a: Vec<u32>,
    pick_b: Vec<u32>,
    alone: Option<bool>,
) -> PyResult<(Vec<Vec<u64>>, Vec<Vec<u64>>)> {
    let (na, nb) = (a.loose.len(), b.loose.len());
    if pick_a.iter().any(|&i| i as usize >= na) || pick_b.iter().any(|&i| i as usize >= nb) {
        return Err(PyValueError::new_err(
            "refine: a picked node is out of range",
        ));
    }
    let pick = |col: &[u64], which: &[u32]| -> Vec<u64> {
        which.iter().map(|&i| col[i as usize]).collect()
    };
    Ok(py.allow_threads(|| {
        if let Some(found) = picked_history(a, b, strict, rounds, &pick_a, &pick_b, alone) {
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
    }))
}
