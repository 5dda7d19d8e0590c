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
//!
//! A `PairMap` is the matcher's answer (`Matching.left`, `.right`, `.matcher`) the same way:
//! three dictionaries of every matched pair cost 0.3 s of the 600K diff, the matching 0.05.

use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyIterator, PyList, PyString, PyTuple};

use std::borrow::Cow;
use std::sync::Arc;

use crate::canon::handle::{Canon, CanonHandle};

/// Names to instruction indices: open addressing on Python's own string hash (cached in each
/// string object, so later dictionary lookups with these names hash nothing either).
pub struct NameIndex {
    slots: Vec<u32>,
    hashes: Vec<isize>,
    mask: usize,
}

impl NameIndex {
    fn build(py: Python<'_>, names: &[Py<PyString>]) -> PyResult<Self> {
        let cap = (names.len() * 2).next_power_of_two().max(8);
        let mask = cap - 1;
        let mut slots = vec![0u32; cap];
        let mut hashes = Vec::with_capacity(names.len());
        for (i, name) in names.iter().enumerate() {
            let h = name.bind(py).hash()?;
            hashes.push(h);
            let mut k = h as usize & mask;
            while slots[k] != 0 {
                k = (k + 1) & mask;
            }
            slots[k] = i as u32 + 1;
        }
        Ok(NameIndex {
            slots,
            hashes,
            mask,
        })
    }

    /// The index of the instruction named `key`; None for any other key (unhashable ones raise
    /// `TypeError`, as a dictionary does).
    pub(crate) fn find(
        &self,
        names: &[Py<PyString>],
        key: &Bound<'_, PyAny>,
    ) -> PyResult<Option<usize>> {
        let h = key.hash()?;
        let mut k = h as usize & self.mask;
        loop {
            let slot = self.slots[k];
            if slot == 0 {
                return Ok(None);
            }
            let i = (slot - 1) as usize;
            if self.hashes[i] == h {
                let name = names[i].bind(key.py());
                if name.as_ptr() == key.as_ptr() || name.as_any().eq(key)? {
                    return Ok(Some(i));
                }
            }
            k = (k + 1) & self.mask;
        }
    }
}

/// What a read-only mapping keyed by one computation's names answers.
pub(crate) trait Table {
    /// The computation whose names are the keys.
    fn keyed(&self) -> &Canon;
    /// The keys' indices, in the dictionary's order.
    fn members(&self) -> Cow<'_, [u32]>;
    fn size(&self) -> usize;
    fn has(&self, i: usize) -> bool;
    fn value<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyAny>>;
}

impl Canon {
    /// The index of the instruction named `key`, in the shared index (made on the first call).
    pub(crate) fn find(&self, key: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
        let py = key.py();
        let index = self
            .index
            .get_or_try_init(py, || NameIndex::build(py, &self.names))?;
        index.find(&self.names, key)
    }
}

pub(crate) fn find<T: Table>(
    t: &T,
    _py: Python<'_>,
    key: &Bound<'_, PyAny>,
) -> PyResult<Option<usize>> {
    Ok(t.keyed().find(key)?.filter(|&i| t.has(i)))
}

pub(crate) fn to_dict<'py, T: Table>(t: &T, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
    let names = &t.keyed().names;
    let d = PyDict::new(py);
    for &i in t.members().iter() {
        d.set_item(names[i as usize].bind(py), t.value(py, i as usize)?)?;
    }
    Ok(d)
}

pub(crate) fn equal<T: Table>(t: &T, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
    if !(other.is_instance_of::<PyDict>() || other.hasattr("keys")?) {
        return Ok(false);
    }
    if other.len()? != t.size() {
        return Ok(false);
    }
    let names = &t.keyed().names;
    for &i in t.members().iter() {
        match other.get_item(names[i as usize].bind(py)) {
            Ok(v) => {
                if !v.eq(t.value(py, i as usize)?)? {
                    return Ok(false);
                }
            }
            Err(e) if e.is_instance_of::<PyKeyError>(py) => return Ok(false),
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// A dictionary's read-only methods on a `Table`, and any `{ more }` in the same block.
macro_rules! mapping_methods {
    ($t:ty) => {
        mapping_methods!($t, {});
    };
    ($t:ty, { $($more:tt)* }) => {
        #[pymethods]
        impl $t {
            fn __len__(&self) -> usize {
                self.size()
            }

            fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
                Ok(find(self, py, key)?.is_some())
            }

            fn __getitem__<'py>(
                &self,
                py: Python<'py>,
                key: &Bound<'py, PyAny>,
            ) -> PyResult<Bound<'py, PyAny>> {
                match find(self, py, key)? {
                    Some(i) => self.value(py, i),
                    None => Err(PyKeyError::new_err(key.clone().unbind())),
                }
            }

            #[pyo3(signature = (key, default=None))]
            fn get<'py>(
                &self,
                py: Python<'py>,
                key: &Bound<'py, PyAny>,
                default: Option<Bound<'py, PyAny>>,
            ) -> PyResult<Bound<'py, PyAny>> {
                match find(self, py, key)? {
                    Some(i) => self.value(py, i),
                    None => Ok(default.unwrap_or_else(|| py.None().into_bound(py))),
                }
            }

            fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyIterator>> {
                let names = &self.keyed().names;
                PyList::new(
                    py,
                    self.members().iter().map(|&i| names[i as usize].bind(py)),
                )?
                .into_any()
                .try_iter()
            }

            /// A set-like view, as a dictionary's (`operands.keys() | dead` is read).
            fn keys<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
                static VIEW: GILOnceCell<Py<PyAny>> = GILOnceCell::new();
                VIEW.import(slf.py(), "collections.abc", "KeysView")?
                    .call1((slf,))
            }

            fn values<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
                let values = self
                    .members()
                    .iter()
                    .map(|&i| self.value(py, i as usize))
                    .collect::<PyResult<Vec<_>>>()?;
                PyList::new(py, values)
            }

            fn items<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
                let names = &self.keyed().names;
                let items = self
                    .members()
                    .iter()
                    .map(|&i| Ok((names[i as usize].bind(py), self.value(py, i as usize)?)))
                    .collect::<PyResult<Vec<_>>>()?;
                PyList::new(py, items)
            }

            /// A dictionary with the same items, in the same order.
            fn copy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
                to_dict(self, py)
            }

            /// Equal to any mapping with the same items, as dictionaries are.
            fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
                equal(self, py, other)
            }

            fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
                Ok(to_dict(self, py)?.repr()?.to_string())
            }

            $($more)*
        }
    };
}
pub(crate) use mapping_methods;

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
            Field::H0 => crate::py_int(py, h.h0[i])?,
            Field::H1 => crate::py_int(py, h.h1[i])?,
            Field::Operands if h.forwarded[i] => {
                let ops = h.operands(i as u32).unwrap_or(&[]);
                PyTuple::new(py, ops.iter().map(|&o| h.names[o as usize].bind(py)))?.into_any()
            }
            Field::Operands => {
                crate::parse::lazy_instructions::item(h.instructions.bind(py), i)?.get_item(3)?
            }
            Field::ByName => crate::parse::lazy_instructions::item(h.instructions.bind(py), i)?,
        })
    }
}

mapping_methods!(CanonMap);

/// The pairs a matching found, in the order found, and the phase (tag) of each.
pub struct Pairs {
    left: Arc<Canon>,
    right: Arc<Canon>,
    /// Left and right indices of the pairs, in order.
    lefts: Vec<u32>,
    rights: Vec<u32>,
    /// Per left instruction its right one, per right its left one (`u32::MAX`: none).
    to_right: Vec<u32>,
    to_left: Vec<u32>,
    /// Per left instruction its pair's tag.
    tag: Vec<u8>,
    tags: Vec<Py<PyString>>,
}

/// `Matching.left` (left name -> right name), `.right` (right -> left) or `.matcher` (left name
/// -> the phase that paired it).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Left,
    Right,
    Matcher,
}

#[pyclass(frozen, mapping, module = "xlagraph._core")]
pub struct PairMap {
    pairs: Arc<Pairs>,
    side: Side,
}

/// `(left, right, matcher)` over `pairs` (indices into the sides' names) tagged `tags[tag]`;
/// None where a side's names may repeat (the caller builds dictionaries).
pub fn pair_maps(
    py: Python<'_>,
    left: &Arc<Canon>,
    right: &Arc<Canon>,
    pairs: &[(u32, u32)],
    tag: &[u8],
    tags: Vec<Py<PyString>>,
) -> PyResult<Option<[Py<PairMap>; 3]>> {
    if !(left.unique && right.unique) {
        return Ok(None);
    }
    let mut to_right = vec![u32::MAX; left.names.len()];
    let mut to_left = vec![u32::MAX; right.names.len()];
    let mut per_left = vec![0u8; left.names.len()];
    for (&(a, b), &t) in pairs.iter().zip(tag) {
        to_right[a as usize] = b;
        to_left[b as usize] = a;
        per_left[a as usize] = t;
    }
    let shared = Arc::new(Pairs {
        left: left.clone(),
        right: right.clone(),
        lefts: pairs.iter().map(|p| p.0).collect(),
        rights: pairs.iter().map(|p| p.1).collect(),
        to_right,
        to_left,
        tag: per_left,
        tags,
    });
    let map = |side| {
        Py::new(
            py,
            PairMap {
                pairs: shared.clone(),
                side,
            },
        )
    };
    Ok(Some([
        map(Side::Left)?,
        map(Side::Right)?,
        map(Side::Matcher)?,
    ]))
}

impl PairMap {
    /// `(keys' computation, values' computation, keys in order, per key's index its value's
    /// index)`; None for `Matching.matcher`, whose values are not names.
    pub(crate) fn parts(&self) -> Option<(&Arc<Canon>, &Arc<Canon>, &[u32], &[u32])> {
        let p = &*self.pairs;
        match self.side {
            Side::Left => Some((&p.left, &p.right, &p.lefts, &p.to_right)),
            Side::Right => Some((&p.right, &p.left, &p.rights, &p.to_left)),
            Side::Matcher => None,
        }
    }
}

impl Table for PairMap {
    fn keyed(&self) -> &Canon {
        match self.side {
            Side::Left | Side::Matcher => &self.pairs.left,
            Side::Right => &self.pairs.right,
        }
    }

    fn members(&self) -> Cow<'_, [u32]> {
        match self.side {
            Side::Left | Side::Matcher => (&self.pairs.lefts[..]).into(),
            Side::Right => (&self.pairs.rights[..]).into(),
        }
    }

    fn size(&self) -> usize {
        self.pairs.lefts.len()
    }

    fn has(&self, i: usize) -> bool {
        match self.side {
            Side::Left | Side::Matcher => self.pairs.to_right[i] != u32::MAX,
            Side::Right => self.pairs.to_left[i] != u32::MAX,
        }
    }

    fn value<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyAny>> {
        let p = &self.pairs;
        Ok(match self.side {
            Side::Left => p.right.names[p.to_right[i] as usize]
                .bind(py)
                .clone()
                .into_any(),
            Side::Right => p.left.names[p.to_left[i] as usize]
                .bind(py)
                .clone()
                .into_any(),
            Side::Matcher => p.tags[p.tag[i] as usize].bind(py).clone().into_any(),
        })
    }
}

mapping_methods!(PairMap);
