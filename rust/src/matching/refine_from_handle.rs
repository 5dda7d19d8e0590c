//! One computation's `RefineGraph` from its `CanonHandle`: what building it asks Python (each
//! opcode's commutativity and each kind of node's first colours, under the GIL), then the graph
//! assembled without it (from_handle.rs's `refine_graphs_of` runs both for every graph asked).

use pyo3::prelude::*;

use crate::canon::handle::CanonHandle;
use crate::canon::model::NONE;
use crate::matching::collective_chain::chain_edges;
use crate::matching::colour_graph::{combine, Graph};
use crate::matching::refine::RefineGraph;
use crate::parse::text::FxMap;

/// What building a graph asks of Python: per opcode whether it commutes, per kind of node
/// (instruction kind, input or not) its first colours (loose, strict, calls anything).
#[derive(Clone)]
pub(crate) struct Asked {
    nodes: Vec<u32>,
    is_input: Vec<bool>,
    op_commutative: Vec<bool>,
    colours: FxMap<(u32, bool), (u64, u64, bool)>,
}

/// The graph's nodes: `order`, then the parameters without an operands entry.
pub(crate) fn nodes_of(h: &CanonHandle) -> Vec<u32> {
    let mut nodes: Vec<u32> = h.order.clone();
    for &(p, _) in &h.params {
        if !h.has_ops[p as usize] {
            nodes.push(p);
        }
    }
    nodes
}

pub(crate) fn inputs_of(h: &CanonHandle) -> Vec<bool> {
    let mut is_input = vec![false; h.names.len()];
    for &(i, _) in &h.params {
        is_input[i as usize] = true;
    }
    is_input
}

pub(crate) fn ask(
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
pub(crate) struct Assembled {
    graph: Graph,
    loose: Vec<u64>,
    strict: Vec<u64>,
    params: Vec<u32>,
    param_index: Vec<u32>,
    outputs: Vec<i64>,
}

impl Assembled {
    pub(crate) fn into_graph(self, py: Python<'_>, h: &CanonHandle) -> RefineGraph {
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

pub(crate) fn assemble(h: &CanonHandle, asked: &Asked, redirect: &[u32], output_mark: i64) -> Assembled {
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
