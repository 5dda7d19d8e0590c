//! The matcher's `MatchSide` and the correspondence's `RefineGraph` built from a `CanonHandle`
//! (`canon/handle.rs`), without reading a Python object per instruction: the structures the
//! Python oracles build from the canonical form's dictionaries (tests/test_core_handle.py holds
//! them to `users.users_of`, `match_reference` and `refinement_reference.Graph` with its rounds).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::canon::handle::CanonHandle;
use crate::canon::indexed::users_of;
use crate::canon::py_text::python_int;
use crate::canon::shape_text::strip_layout;
use crate::matching::collective_chain::chain_edges;
use crate::matching::colour_graph::{combine, Graph};
use crate::matching::refine::RefineGraph;
use crate::matching::side::{intern, rank_key, MatchSide};
use crate::matching::two_threads;
use crate::parse::text::FxMap;

const NONE: u32 = u32::MAX;

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

/// What building a graph asks of Python: per opcode whether it commutes, per kind of node
/// (instruction kind, input or not) its first colours (loose, strict, calls anything).
#[derive(Clone)]
struct Asked {
    nodes: Vec<u32>,
    is_input: Vec<bool>,
    op_commutative: Vec<bool>,
    colours: FxMap<(u32, bool), (u64, u64, bool)>,
}

/// The graph's nodes: `order`, then the parameters without an operands entry.
fn nodes_of(h: &CanonHandle) -> Vec<u32> {
    let mut nodes: Vec<u32> = h.order.clone();
    for &(p, _) in &h.params {
        if !h.has_ops[p as usize] {
            nodes.push(p);
        }
    }
    nodes
}

fn inputs_of(h: &CanonHandle) -> Vec<bool> {
    let mut is_input = vec![false; h.names.len()];
    for &(i, _) in &h.params {
        is_input[i as usize] = true;
    }
    is_input
}

fn ask(
    py: Python<'_>,
    h: &CanonHandle,
    commutative: &Bound<'_, PyAny>,
    first_colours: &Bound<'_, PyAny>,
) -> PyResult<Asked> {
    let op_commutative = h
        .opcodes
        .iter()
        .map(|t| commutative.contains(t.as_str()))
        .collect::<PyResult<Vec<bool>>>()?;
    let is_input = inputs_of(h);
    let nodes = nodes_of(h);
    let mut colours: FxMap<(u32, bool), (u64, u64, bool)> = FxMap::default();
    for &i in &nodes {
        let key = (h.kind[i as usize], is_input[i as usize]);
        if colours.contains_key(&key) {
            continue;
        }
        let first = h.kind_first[key.0 as usize] as usize;
        let ins = crate::parse::lazy_instructions::item(h.instructions.bind(py), first)?;
        let called = ins.getattr("called")?.len()?;
        let got = first_colours.call1((
            key.1,
            ins.getattr("opcode")?,
            ins.getattr("shape")?,
            ins.getattr("attributes")?,
            called,
        ))?;
        let (l, s): (i64, i64) = got.extract()?;
        colours.insert(key, (l as u64, s as u64, called > 0));
    }
    Ok(Asked {
        nodes,
        is_input,
        op_commutative,
        colours,
    })
}

/// A `RefineGraph` but for its parameters' names (Python objects: added under the GIL).
struct Assembled {
    graph: Graph,
    loose: Vec<u64>,
    strict: Vec<u64>,
    params: Vec<u32>,
    param_index: Vec<u32>,
    outputs: Vec<i64>,
}

impl Assembled {
    fn into_graph(self, py: Python<'_>, h: &CanonHandle) -> RefineGraph {
        let param_names = self
            .param_index
            .iter()
            .map(|&p| h.names[p as usize].clone_ref(py).into_any())
            .collect();
        RefineGraph {
            graph: self.graph,
            loose: self.loose,
            strict: self.strict,
            params: self.params,
            param_names,
            outputs: self.outputs,
            alone: Default::default(),
            picked: Default::default(),
        }
    }
}

fn assemble(h: &CanonHandle, asked: &Asked, redirect: &[u32], output_mark: i64) -> Assembled {
    let count = h.names.len();
    let (nodes, is_input) = (&asked.nodes, &asked.is_input);
    let n = nodes.len();
    let mut node_of = vec![NONE; count];
    for (k, &i) in nodes.iter().enumerate() {
        node_of[i as usize] = k as u32;
    }
    let mut op_start = Vec::with_capacity(n + 1);
    let mut ops = Vec::new();
    let mut sorted = Vec::with_capacity(n);
    let mut commut = Vec::with_capacity(n);
    let mut loose = Vec::with_capacity(n);
    let mut strict = Vec::with_capacity(n);
    op_start.push(0u32);
    // torch_xla's token chain of all-reduces: the order they were issued in, not what they
    // reduce (collective_chain.rs).
    let cut = chain_edges(h);
    for &i in nodes {
        let row_start = ops.len();
        if let (true, Some(row)) = (redirect[i as usize] == NONE, h.operands(i)) {
            ops.extend(
                row.iter()
                    .enumerate()
                    .filter(|&(j, _)| cut.is_empty() || cut.binary_search(&(i, j as u32)).is_err())
                    .map(|(_, &o)| match redirect[o as usize] {
                        NONE => node_of[o as usize],
                        to => node_of[to as usize],
                    })
                    .filter(|&o| o != NONE),
            );
        }
        op_start.push(ops.len() as u32);
        let c = asked.op_commutative[h.opcode[i as usize] as usize];
        commut.push(c);
        sorted.push(c && ops.len() - row_start > 1);
        let colours = asked.colours[&(h.kind[i as usize], is_input[i as usize])];
        loose.push(colours.0);
        // A call of one function is not a call of another: the callees' hashes, in the
        // content key, enter the strict colour as `refine_graph` enters `keys` (Python's hash
        // of a non-negative int is its value modulo 2^61 - 1: the same numbers both ways).
        strict.push(if colours.2 {
            combine(colours.1, h.keys[i as usize] % ((1u64 << 61) - 1))
        } else {
            colours.1
        });
    }
    // Users as CSR; a user reads at its operand index (-1: commutative).
    let mut fill = vec![0u32; n + 1];
    for &o in &ops {
        fill[o as usize + 1] += 1;
    }
    for i in 0..n {
        fill[i + 1] += fill[i];
    }
    let user_start = fill.clone();
    let mut users = vec![0u32; ops.len()];
    let mut user_at = vec![0i32; ops.len()];
    for k in 0..n {
        for (j, &o) in ops[op_start[k] as usize..op_start[k + 1] as usize]
            .iter()
            .enumerate()
        {
            let at = &mut fill[o as usize];
            users[*at as usize] = k as u32;
            user_at[*at as usize] = if commut[k] { -1 } else { j as i32 };
            *at += 1;
        }
    }
    let mut marks = vec![0u64; n];
    let mut outputs = Vec::with_capacity(h.outputs.len());
    for &o in &h.outputs {
        match node_of[o as usize] {
            NONE => outputs.push(-1),
            k => {
                marks[k as usize] = marks[k as usize].wrapping_add(output_mark as u64);
                outputs.push(i64::from(k));
            }
        }
    }
    let mut params = Vec::new();
    let mut param_index = Vec::new();
    let mut is_param = vec![false; n];
    for &(p, _) in &h.params {
        let k = node_of[p as usize];
        if k != NONE {
            params.push(k);
            is_param[k as usize] = true;
            param_index.push(p);
        }
    }
    Assembled {
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
        param_index,
        outputs,
    }
}
