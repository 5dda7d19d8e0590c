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
use pyo3::types::{PyDict, PyIterator, PyList, PyTuple};

use crate::canon::indexed::Canon;
use crate::canon::mapping::{equal, find, mapping_methods, to_dict, Table};
use crate::canon::shape_text::strip_layout;
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

    pub(crate) fn sorted_h0(&self) -> &[i128] {
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

/// The int object `ints` holds for `k`, made on first use: one object per distinct value.
pub(crate) fn shared_int<'py>(
    py: Python<'py>,
    ints: &mut FxMap<u64, Bound<'py, PyAny>>,
    k: u64,
) -> PyResult<Bound<'py, PyAny>> {
    if let Some(v) = ints.get(&k) {
        return Ok(v.clone());
    }
    let v = k.into_pyobject(py)?.into_any();
    ints.insert(k, v.clone());
    Ok(v)
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
