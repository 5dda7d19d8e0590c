//! A computation's `RefineGraph` (refine.rs) built from the Python IR and the canonical form's
//! dictionaries (`refine_graph`): the path for computations without a handle; `from_handle.rs`
//! builds the same graph from a handle.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

use crate::matching::colour_graph::{combine, Graph};
use crate::matching::refine::RefineGraph;
use crate::matching::refine_alone::{AloneRuns, PickedRuns};
use crate::parse::text::FxMap;

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
