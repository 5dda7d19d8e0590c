//! A canonical computation kept in the core (issue 22): what the matcher (`side::MatchSide`)
//! and the correspondence (`refine::RefineGraph`) read of it, taken from the reader's own records
//! and canonical form while they are at hand, so that neither is read back out of the Python IR
//! and the canonical form's dictionaries (a PyO3 call per name and per dictionary entry: most of
//! what building them cost).
//!
//! Instructions are indexed as in the computation (`Computation.instructions`), names are the
//! IR's own string objects. Opcodes, shapes and kinds of instruction (what the correspondence's
//! first colours read) are numbered per handle, with one text (or one representative
//! instruction) per number.
//!
//! The canonical form's tables by name (`operands`, `keys`, `h0`, `h1`) and the IR's
//! `Computation.by_name`, answered from the computation's `CanonHandle` instead of built as
//! dictionaries (issue 22). Building the four dictionaries of a 600K-instruction computation
//! cost 0.75 s of its 2.5 s of reading, under the GIL, while a diff asks them about 20K names.
//!
//! A `CanonMap` is a read-only mapping with a dictionary's answers: the same keys in the same
//! order (`order` for `keys`/`h0`/`h1`, the order instructions were entered for `operands`, the
//! computation's for `by_name`), the same values (`operands` of an instruction forwarding left
//! alone is the IR's own tuple), `KeyError` for other names. Python registers it as a
//! `collections.abc.Mapping`. Handles exist only where names are unique, so one name is one index.

use std::sync::{Arc, OnceLock};

use std::borrow::Cow;

use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyFrozenSet, PyIterator, PyList, PyString, PyTuple};

use crate::canon::indexed::{users_of, Canon};
use crate::canon::mapping::{equal, find, mapping_methods, to_dict, Table};
use crate::canon::shape_text::strip_layout;
use crate::families;
use crate::parse::lazy_instructions;
use crate::parse::text::FxMap;

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
    /// The `h0` values (as Python holds them) that one live instruction alone has, and its index
    /// (made when first asked for: `lone_h0`).
    pub(crate) h0_lone: OnceLock<FxMap<i128, u32>>,
    /// The distinct `h1` values of `order`, sorted, and each instruction's position among them
    /// (`NONE` outside `order`): made when first asked for (`h1_classes`), kept for every diff.
    /// Sorted rather than a map: a third of the memory, and only a diff's unpaired instructions
    /// search it.
    pub(crate) h1_classes: OnceLock<(Vec<i128>, Vec<u32>)>,
    /// What the canonical form's mappings read (`CanonMap`, below): the IR's instructions, the
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
    /// The side effects among the dead code and the plumbing, in that order, and their hashes.
    pub(crate) effects: Vec<(u32, i128)>,
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

    /// The indices of the constants that are a scalar one, in order
    /// (tests/oracles/multiply_by_one_reference.py `one`: the shape before any `{`, spaces
    /// aside, ends in `[]`; the value, stripped and lowered, is one of its `ONE`).
    fn scalar_ones(&self) -> Vec<u32> {
        self.ones.clone()
    }

    /// `{name: hash}` of the instructions with a side effect that no result reads (its dead code,
    /// then its plumbing): what they do, hashed as the canonical form hashed them into the
    /// computation's hash (canon/effects.rs; the reference is `effect_hash_map` of
    /// tests/oracles/hashes_reference.py).
    fn effect_hashes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        for &(i, h) in &self.effects {
            out.set_item(self.names[i as usize].bind(py), py_int(py, h)?)?;
        }
        Ok(out)
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
    /// users (each once per operand slot that reads it). tests/test_canon_map.py holds it to the
    /// rule written in Python.
    fn lone_parameters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyFrozenSet>> {
        let n = self.names.len();
        let (start, users) = users_of(n, &self.order, &self.ops_start, &self.ops, &self.has_ops)?;
        let shapes = compared_shapes(self);
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
        PyFrozenSet::new(py, lone)
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
        let restates = id(families::RESTATES);
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
        let shapes = compared_shapes(self);
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

    /// `Computation.by_name` of this computation as a mapping over the handle (`CanonMap`).
    fn by_name(slf: &Bound<'_, Self>) -> PyResult<Py<CanonMap>> {
        canon_map(slf.py(), slf, Field::ByName)
    }

    /// The one live instruction whose `h0` is `h0` (the value `h0[name]` gives in Python), None
    /// where none or several have it: `Counter(comp.h0.values())[h0] == 1` and that name
    /// (`outputs._returned_elsewhere`, about 2,400 questions a diff; tests/test_canon_map.py
    /// holds it to those Python lines).
    fn lone_h0<'py>(
        &self,
        py: Python<'py>,
        h0: &Bound<'py, PyAny>,
    ) -> PyResult<Option<Bound<'py, PyString>>> {
        let Ok(h0) = h0.extract::<i128>() else {
            return Ok(None); // no hash: an int out of range, or not an int
        };
        let lone = self.h0_lone.get_or_init(|| {
            // The value Python holds: `py_int` of the hash (signed where it fits, else unsigned).
            let value = |h: i128| i64::try_from(h).map_or((h as u64) as i128, i128::from);
            // Sized for every live instruction at once: grown by doubling, its ~100K entries
            // were rehashed into fresh tables about 17 times (3% of a report's page faults).
            let mut seen: FxMap<i128, u32> =
                FxMap::with_capacity_and_hasher(self.order.len(), Default::default());
            for &i in &self.order {
                seen.entry(value(self.h0[i as usize]))
                    .and_modify(|x| *x = u32::MAX)
                    .or_insert(i);
            }
            seen.retain(|_, i| *i != u32::MAX);
            // Kept while the handle is: its table sized for the lone values alone.
            seen.shrink_to_fit();
            seen
        });
        Ok(lone
            .get(&h0)
            .map(|&i| self.names[i as usize].bind(py).clone()))
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
    /// `h1_classes`: the distinct `h1` values of `order`, sorted, and each instruction's
    /// position among them.
    pub(crate) fn h1_classes(&self) -> &(Vec<i128>, Vec<u32>) {
        self.h1_classes.get_or_init(|| {
            let mut distinct: Vec<i128> = self.order.iter().map(|&i| self.h1[i as usize]).collect();
            distinct.sort_unstable();
            distinct.dedup();
            let mut class = vec![u32::MAX; self.names.len()];
            for &i in &self.order {
                let at = distinct.binary_search(&self.h1[i as usize]);
                class[i as usize] = at.unwrap_or_default() as u32;
            }
            (distinct, class)
        })
    }

    fn sorted_h0(&self) -> &[i128] {
        self.h0_sorted.get_or_init(|| {
            let mut v: Vec<i128> = self.order.iter().map(|&i| self.h0[i as usize]).collect();
            v.sort_unstable();
            v
        })
    }
}

/// `strip_layout(shape).replace(" ", "")` of each shape of a handle.
pub(crate) fn compared_shapes(h: &CanonHandle) -> Vec<String> {
    h.shapes
        .iter()
        .map(|s| strip_layout(s).replace(' ', ""))
        .collect()
}

/// A Python int of a canonical hash (CPython's tuple hashes are signed, content keys unsigned).
pub(crate) fn py_int<'py>(py: Python<'py>, v: i128) -> PyResult<Bound<'py, PyAny>> {
    Ok(match i64::try_from(v) {
        Ok(x) => x.into_pyobject(py)?.into_any(),
        Err(_) => (v as u64).into_pyobject(py)?.into_any(),
    })
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Field {
    Operands,
    Keys,
    H0,
    H1,
    ByName,
}

#[pyclass(frozen, mapping, module = "xlagraph._core")]
pub struct CanonMap {
    handle: Py<CanonHandle>,
    field: Field,
}

pub fn canon_map(
    py: Python<'_>,
    handle: &Bound<'_, CanonHandle>,
    field: Field,
) -> PyResult<Py<CanonMap>> {
    Py::new(
        py,
        CanonMap {
            handle: handle.clone().unbind(),
            field,
        },
    )
}

impl Table for CanonMap {
    fn keyed(&self) -> &Canon {
        &self.handle.get().canon
    }

    fn members(&self) -> Cow<'_, [u32]> {
        let h = self.handle.get();
        match self.field {
            Field::Keys | Field::H0 | Field::H1 => (&h.order[..]).into(),
            Field::Operands => (&h.entered[..]).into(),
            Field::ByName => (0..h.names.len() as u32).collect::<Vec<_>>().into(),
        }
    }

    fn size(&self) -> usize {
        let h = self.handle.get();
        match self.field {
            Field::Keys | Field::H0 | Field::H1 => h.order.len(),
            Field::Operands => h.entered.len(),
            Field::ByName => h.names.len(),
        }
    }

    fn has(&self, i: usize) -> bool {
        let h = self.handle.get();
        match self.field {
            Field::Keys | Field::H0 | Field::H1 => h.live[i],
            Field::Operands => h.has_ops[i],
            Field::ByName => true,
        }
    }

    fn value<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyAny>> {
        let h = self.handle.get();
        Ok(match self.field {
            Field::Keys => h.keys[i].into_pyobject(py)?.into_any(),
            Field::H0 => py_int(py, h.h0[i])?,
            Field::H1 => py_int(py, h.h1[i])?,
            Field::Operands if h.forwarded[i] => {
                let ops = h.operands(i as u32).unwrap_or(&[]);
                PyTuple::new(py, ops.iter().map(|&o| h.names[o as usize].bind(py)))?.into_any()
            }
            Field::Operands => lazy_instructions::item(h.instructions.bind(py), i)?.get_item(3)?,
            Field::ByName => lazy_instructions::item(h.instructions.bind(py), i)?,
        })
    }
}

mapping_methods!(CanonMap);
