//! A canonical computation kept in the core (issue 22): what the matcher (`matcher::MatchSide`)
//! and the correspondence (`refine::RefineGraph`) read of it, taken from the reader's own records
//! and canonical form while they are at hand, so that neither is read back out of the Python IR
//! and the canonical form's dictionaries (a PyO3 call per name and per dictionary entry: most of
//! what building them cost).
//!
//! Instructions are indexed as in the computation (`Computation.instructions`), names are the
//! IR's own string objects. Opcodes, shapes and kinds of instruction (what the correspondence's
//! first colours read) are numbered per handle, with one text (or one representative
//! instruction) per number.

use std::sync::{Arc, OnceLock};

use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyFrozenSet, PyString, PyTuple};

use crate::canon::canon_map::NameIndex;
use crate::canon::CompCanon;
use crate::parse::text::{Comp, FxMap};

/// What the matcher and the handle share of a canonical computation: its names and canonical
/// form (`order`, `operands` as CSR with `has_ops` false where it has no entry, `outputs`,
/// `h0` / `h1` defined on `order`, `param_number` in its dictionary order). One copy, behind an
/// `Arc`, however many matcher sides are made from a handle.
pub struct Canon {
    pub(crate) names: Vec<Py<PyString>>,
    pub(crate) order: Vec<u32>,
    pub(crate) ops_start: Vec<u32>,
    pub(crate) ops: Vec<u32>,
    pub(crate) has_ops: Vec<bool>,
    pub(crate) outputs: Vec<u32>,
    pub(crate) h0: Vec<i128>,
    pub(crate) h1: Vec<i128>,
    pub(crate) params: Vec<(u32, i64)>,
    /// Names to indices (canon_map.rs), made when first asked; only where names are `unique`
    /// (a handle's computation; a matcher side built from dictionaries may not say).
    pub(crate) index: GILOnceCell<NameIndex>,
    pub(crate) unique: bool,
}

impl Canon {
    pub(crate) fn operands(&self, i: u32) -> Option<&[u32]> {
        let i = i as usize;
        if !self.has_ops[i] {
            return None;
        }
        Some(&self.ops[self.ops_start[i] as usize..self.ops_start[i + 1] as usize])
    }

    pub(crate) fn in_order(&self) -> Vec<bool> {
        let mut v = vec![false; self.names.len()];
        for &i in &self.order {
            v[i as usize] = true;
        }
        v
    }
}

#[pyclass(frozen, module = "xlagraph._core")]
pub struct CanonHandle {
    pub(crate) canon: Arc<Canon>,
    /// Per instruction: its opcode and printed shape (indices into `opcodes` / `shapes`).
    pub(crate) opcode: Vec<u32>,
    pub(crate) shape: Vec<u32>,
    pub(crate) opcodes: Vec<String>,
    pub(crate) shapes: Vec<String>,
    /// Per instruction: its kind (opcode, shape, attributes, number of called computations),
    /// and the index of the first instruction of each kind (built, where lazy, when asked for).
    pub(crate) kind: Vec<u32>,
    pub(crate) kind_first: Vec<u32>,
    /// The content keys (`keys`), defined on `order`.
    pub(crate) keys: Vec<u64>,
    /// `h0` of `order`, sorted (made when first asked for: `h0_distance`).
    pub(crate) h0_sorted: OnceLock<Vec<i128>>,
    /// What the canonical form's mappings read (canon_map.rs): the IR's instructions, the
    /// instructions `operands` has in its key order, which of them forwarding rewired (the
    /// others' operands are the IR's own tuple), which are live (`order`).
    pub(crate) instructions: Py<PyAny>,
    pub(crate) entered: Vec<u32>,
    pub(crate) forwarded: Vec<bool>,
    pub(crate) live: Vec<bool>,
    /// The constants whose value the dump printed as `{...}` (spaces aside).
    pub(crate) elided: Vec<u32>,
    /// The distinct non-empty `source_file`s of the instructions' metadata, first seen first.
    pub(crate) source_files: Vec<String>,
    pub(crate) ones: Vec<u32>,
}

impl std::ops::Deref for CanonHandle {
    type Target = Canon;
    fn deref(&self) -> &Canon {
        &self.canon
    }
}

#[pymethods]
impl CanonHandle {
    fn __len__(&self) -> usize {
        self.names.len()
    }

    /// The live constants' names in `order` (`residue.constants_of`).
    fn live_constants<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let constant = self.opcodes.iter().position(|o| o == "constant");
        let names = self
            .order
            .iter()
            .filter(|&&i| constant == Some(self.opcode[i as usize] as usize))
            .map(|&i| self.names[i as usize].bind(py))
            .collect::<Vec<_>>();
        PyTuple::new(py, names)
    }

    /// The indices of the constants that are a scalar one, in order (`identity._one`: the
    /// shape before any `{`, spaces aside, ends in `[]`; the value, stripped and lowered, is
    /// one of `identity._ONE`).
    fn scalar_ones(&self) -> Vec<u32> {
        self.ones.clone()
    }

    /// The indices of the instructions whose opcode is one of `opcodes` (a set of strings), in
    /// order.
    fn with_opcodes(&self, opcodes: &Bound<'_, PyAny>) -> PyResult<Vec<u32>> {
        let wanted = self
            .opcodes
            .iter()
            .map(|o| opcodes.contains(o.as_str()))
            .collect::<PyResult<Vec<bool>>>()?;
        Ok((0..self.opcode.len() as u32)
            .filter(|&i| wanted[self.opcode[i as usize] as usize])
            .collect())
    }

    /// `pairing._lone_parameters`: the parameters (in `param_number`'s order) no other one
    /// resembles, a parameter's likeness being its compared shape and the sorted `h0` of its
    /// users (each once per operand slot that reads it). None where an instruction of `order`
    /// has no operands (the Python path decides).
    fn lone_parameters<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyFrozenSet>>> {
        let n = self.names.len();
        let Ok((start, users)) = crate::matching::matcher::users_of(
            n,
            &self.order,
            &self.ops_start,
            &self.ops,
            &self.has_ops,
        ) else {
            return Ok(None);
        };
        let shapes = crate::diagnose::changes::compared_shapes(self);
        // The value Python holds: `py_int` of the hash (signed where it fits, else unsigned).
        let value = |h: i128| i64::try_from(h).map_or((h as u64) as i128, i128::from);
        let sigs: Vec<(&str, Vec<i128>)> = self
            .params
            .iter()
            .map(|&(p, _)| {
                let p = p as usize;
                let mut hs: Vec<i128> = users[start[p] as usize..start[p + 1] as usize]
                    .iter()
                    .map(|&u| value(self.h0[u as usize]))
                    .collect();
                hs.sort_unstable();
                (shapes[self.shape[p] as usize].as_str(), hs)
            })
            .collect();
        let mut seen: FxMap<&(&str, Vec<i128>), usize> = FxMap::default();
        for sig in &sigs {
            *seen.entry(sig).or_insert(0) += 1;
        }
        let lone = self
            .params
            .iter()
            .zip(&sigs)
            .filter(|(_, sig)| seen[sig] == 1)
            .map(|(&(p, _), _)| self.names[p as usize].bind(py));
        PyFrozenSet::new(py, lone).map(Some)
    }

    /// `_dataflow.updated_inputs(comp, comp.outputs)`: output -> the input of its own compared
    /// shape it updates, read past restating ops (and one arithmetic op deeper), as a dict.
    fn updated_inputs<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let id = |names: &[&str]| -> Vec<bool> {
            self.opcodes
                .iter()
                .map(|o| names.contains(&o.as_str()))
                .collect()
        };
        let restates = id(&[
            "transpose",
            "reshape",
            "broadcast",
            "convert",
            "bitcast",
            "copy",
        ]);
        let arithmetic = id(&["multiply", "add", "subtract", "divide"]);
        let ops = |i: u32| self.operands(i).unwrap_or(&[]);
        let restated = |mut i: u32| {
            for _ in 0..16 {
                if !restates[self.opcode[i as usize] as usize] || ops(i).len() != 1 {
                    return i;
                }
                i = ops(i)[0];
            }
            i
        };
        let shapes = crate::diagnose::changes::compared_shapes(self);
        let shape = |i: u32| shapes[self.shape[i as usize] as usize].as_str();
        let mut is_param = vec![false; self.names.len()];
        for &(p, _) in &self.params {
            is_param[p as usize] = true;
        }
        let found = PyDict::new(py);
        for &o in &self.outputs {
            let mut near: Vec<u32> = ops(restated(o)).to_vec();
            let deeper: Vec<u32> = near
                .iter()
                .map(|&x| restated(x))
                .filter(|&r| arithmetic[self.opcode[r as usize] as usize])
                .flat_map(|r| ops(r).iter().copied())
                .collect();
            near.extend(deeper);
            let input = near
                .iter()
                .map(|&x| restated(x))
                .find(|&p| is_param[p as usize] && shape(p) == shape(o));
            if let Some(p) = input {
                found.set_item(
                    self.names[o as usize].bind(py),
                    self.names[p as usize].bind(py),
                )?;
            }
        }
        Ok(found)
    }

    /// The distinct opcodes of the computation, first seen first.
    fn opcode_names(&self) -> Vec<String> {
        self.opcodes.clone()
    }

    /// The opcode of each instruction `names` names (`Computation.by_name[n].opcode`, no
    /// instruction built); KeyError for a name the computation lacks.
    fn opcodes_of<'py>(
        &self,
        py: Python<'py>,
        names: Vec<Bound<'py, PyAny>>,
    ) -> PyResult<Vec<Bound<'py, PyString>>> {
        let mut made: Vec<Option<Bound<'py, PyString>>> = vec![None; self.opcodes.len()];
        names
            .iter()
            .map(|n| {
                let i = self
                    .find(n)?
                    .ok_or_else(|| pyo3::exceptions::PyKeyError::new_err(n.clone().unbind()))?;
                let o = self.opcode[i] as usize;
                Ok(made[o]
                    .get_or_insert_with(|| PyString::new(py, &self.opcodes[o]))
                    .clone())
            })
            .collect()
    }

    /// The distinct non-empty source files the instructions' metadata cite, first seen first.
    fn source_files(&self) -> Vec<String> {
        self.source_files.clone()
    }

    /// The names of the constants printed `{...}`, live or not (`residue._elided_names`).
    fn elided_names<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyFrozenSet>> {
        PyFrozenSet::new(
            py,
            self.elided.iter().map(|&i| self.names[i as usize].bind(py)),
        )
    }

    /// `Computation.by_name` of this computation as a mapping over the handle (canon_map.rs).
    fn by_name(slf: &Bound<'_, Self>) -> PyResult<Py<crate::canon::canon_map::CanonMap>> {
        crate::canon::canon_map::canon_map(slf.py(), slf, crate::canon::canon_map::Field::ByName)
    }

    /// How many instructions of either computation have no structural twin (`h0`) in the other,
    /// counted as multisets: `sum((a - b).values()) + sum((b - a).values())` of the two
    /// `Counter(comp.h0.values())` (a report's cheap screen of candidate baselines).
    fn h0_distance(&self, py: Python<'_>, other: &CanonHandle) -> u64 {
        let (a, b) = (self.sorted_h0(), other.sorted_h0());
        py.allow_threads(|| {
            let (mut i, mut j, mut d) = (0, 0, 0u64);
            while i < a.len() && j < b.len() {
                match a[i].cmp(&b[j]) {
                    std::cmp::Ordering::Less => (d, i) = (d + 1, i + 1),
                    std::cmp::Ordering::Greater => (d, j) = (d + 1, j + 1),
                    std::cmp::Ordering::Equal => (i, j) = (i + 1, j + 1),
                }
            }
            d + (a.len() - i) as u64 + (b.len() - j) as u64
        })
    }
}

impl CanonHandle {
    fn sorted_h0(&self) -> &[i128] {
        self.h0_sorted.get_or_init(|| {
            let mut v: Vec<i128> = self.order.iter().map(|&i| self.h0[i as usize]).collect();
            v.sort_unstable();
            v
        })
    }
}

/// Numbers each distinct value once, in order of first appearance.
struct Numbering<K> {
    ids: FxMap<K, u32>,
}

impl<K: std::hash::Hash + Eq> Numbering<K> {
    fn id(&mut self, key: K, mut first: impl FnMut()) -> u32 {
        let next = self.ids.len() as u32;
        *self.ids.entry(key).or_insert_with(|| {
            first();
            next
        })
    }
}

/// What a handle holds besides Python objects, made while the reader runs without the GIL:
/// None where a name repeats (the Python lookups by name keep the last one: the callers'
/// Python paths decide such input).
pub(crate) struct Parts {
    canon: Canon0,
    opcode: Vec<u32>,
    shape: Vec<u32>,
    opcodes: Vec<String>,
    shapes: Vec<String>,
    kind: Vec<u32>,
    /// The first instruction of each kind.
    kind_first: Vec<u32>,
    keys: Vec<u64>,
    entered: Vec<u32>,
    forwarded: Vec<bool>,
    live: Vec<bool>,
    elided: Vec<u32>,
    source_files: Vec<String>,
    ones: Vec<u32>,
}

/// `Canon` but its names.
struct Canon0 {
    order: Vec<u32>,
    ops_start: Vec<u32>,
    ops: Vec<u32>,
    has_ops: Vec<bool>,
    outputs: Vec<u32>,
    h0: Vec<i128>,
    h1: Vec<i128>,
    params: Vec<(u32, i64)>,
}

pub(crate) fn parts(c: &CompCanon, comp: &Comp) -> Option<Parts> {
    let n = comp.insts.len();
    let mut seen: FxMap<&str, ()> = FxMap::default();
    seen.reserve(n);
    let (mut opcodes, mut shapes) = (Vec::new(), Vec::new());
    let mut opcode_ids = Numbering {
        ids: FxMap::default(),
    };
    let mut shape_ids = Numbering {
        ids: FxMap::default(),
    };
    let mut kind_ids = Numbering {
        ids: FxMap::default(),
    };
    let mut kind_first: Vec<u32> = Vec::new();
    let (mut opcode, mut shape, mut kind) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    let (mut elided, mut ones) = (Vec::new(), Vec::new());
    let mut files: FxMap<&str, ()> = FxMap::default();
    let mut source_files = Vec::new();
    let mut last_file = "";
    // One pass over the records (a 120K computation's do not fit in any cache).
    for (k, ins) in comp.insts.iter().enumerate() {
        if seen.insert(ins.name.as_ref(), ()).is_some() {
            return None;
        }
        let o = opcode_ids.id(ins.opcode.as_ref(), || opcodes.push(ins.opcode.to_string()));
        let s = shape_ids.id(ins.shape.as_ref(), || shapes.push(ins.shape.to_string()));
        let id = kind_ids.id((o, s, ins.attrs.as_slice(), ins.called.len()), || {
            kind_first.push(k as u32)
        });
        opcode.push(o);
        shape.push(s);
        kind.push(id);
        if ins.opcode == "constant" {
            let payload = ins.payload.chars().filter(|&c| c != ' ');
            if payload.eq("{...}".chars()) {
                elided.push(k as u32);
            }
            if scalar(&ins.shape) && is_one(&ins.payload) {
                ones.push(k as u32);
            }
        }
        if let Some(m) = &ins.metadata {
            let f = m.source_file.as_ref();
            // Neighbours mostly cite one file: only a change of file is looked up.
            if f != last_file && !f.is_empty() && files.insert(f, ()).is_none() {
                source_files.push(f.to_string());
            }
            last_file = f;
        }
    }
    drop(seen);
    let mut has_ops = vec![false; n];
    let mut per: Vec<&[u32]> = vec![&[]; n];
    for &i in &c.entered {
        has_ops[i as usize] = true;
        per[i as usize] = c.ops(comp, i);
    }
    let forwarded = c.fidx.iter().map(|&f| f != crate::canon::NONE).collect();
    let mut live = vec![false; n];
    for &i in &c.order {
        live[i as usize] = true;
    }
    let mut ops_start = Vec::with_capacity(n + 1);
    let mut ops = Vec::new();
    for row in &per {
        ops_start.push(ops.len() as u32);
        ops.extend_from_slice(row);
    }
    ops_start.push(ops.len() as u32);
    Some(Parts {
        canon: Canon0 {
            order: c.order.clone(),
            ops_start,
            ops,
            has_ops,
            outputs: c.outputs.clone(),
            h0: c.h0.clone(),
            h1: c.h1.clone(),
            params: c.params.clone(),
        },
        opcode,
        shape,
        opcodes,
        shapes,
        kind,
        kind_first,
        keys: c.keys.clone(),
        entered: c.entered.clone(),
        forwarded,
        live,
        elided,
        source_files,
        ones,
    })
}

/// `identity._scalar`: the shape before any `{`, spaces aside, ends in `[]`.
fn scalar(shape: &str) -> bool {
    let head = shape.split('{').next().unwrap_or("");
    head.chars()
        .filter(|&c| c != ' ')
        .collect::<String>()
        .ends_with("[]")
}

/// `identity._ONE`: the printed values of a one.
const ONE: [&str; 8] = ["1", "1.", "1.0", "1e0", "1e+0", "1e+00", "1.0e+00", "true"];

/// `payload.strip().lower() in identity._ONE` (Python's whitespace: Rust's and \x1c-\x1f).
fn is_one(payload: &str) -> bool {
    let space = |c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c);
    ONE.contains(&payload.trim_matches(space).to_lowercase().as_str())
}

/// The handle of one computation from its parts, `names` and `instructions` being what the
/// Python IR was built with.
pub(crate) fn handle<'py>(
    p: Parts,
    names: &[Bound<'py, PyString>],
    instructions: &Bound<'py, PyAny>,
) -> PyResult<CanonHandle> {
    let c = p.canon;
    Ok(CanonHandle {
        canon: Arc::new(Canon {
            names: names.iter().map(|s| s.clone().unbind()).collect(),
            order: c.order,
            ops_start: c.ops_start,
            ops: c.ops,
            has_ops: c.has_ops,
            outputs: c.outputs,
            h0: c.h0,
            h1: c.h1,
            params: c.params,
            index: GILOnceCell::new(),
            unique: true,
        }),
        opcode: p.opcode,
        shape: p.shape,
        opcodes: p.opcodes,
        shapes: p.shapes,
        kind: p.kind,
        kind_first: p.kind_first,
        keys: p.keys,
        h0_sorted: OnceLock::new(),
        instructions: instructions.clone().unbind(),
        entered: p.entered,
        forwarded: p.forwarded,
        live: p.live,
        elided: p.elided,
        source_files: p.source_files,
        ones: p.ones,
    })
}
