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

use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyIterator, PyList, PyString, PyTuple};

use crate::handle::CanonHandle;

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
    fn find(&self, names: &[Py<PyString>], key: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
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

impl CanonMap {
    /// The keys' indices in the dictionary's order.
    fn members<'h>(&self, h: &'h CanonHandle) -> std::borrow::Cow<'h, [u32]> {
        match self.field {
            Field::Keys | Field::H0 | Field::H1 => (&h.order[..]).into(),
            Field::Operands => (&h.entered[..]).into(),
            Field::ByName => (0..h.names.len() as u32).collect::<Vec<_>>().into(),
        }
    }

    fn has(&self, h: &CanonHandle, i: usize) -> bool {
        match self.field {
            Field::Keys | Field::H0 | Field::H1 => h.live[i],
            Field::Operands => h.has_ops[i],
            Field::ByName => true,
        }
    }

    fn value<'py>(
        &self,
        py: Python<'py>,
        h: &CanonHandle,
        i: usize,
    ) -> PyResult<Bound<'py, PyAny>> {
        Ok(match self.field {
            Field::Keys => h.keys[i].into_pyobject(py)?.into_any(),
            Field::H0 => crate::py_int(py, h.h0[i])?,
            Field::H1 => crate::py_int(py, h.h1[i])?,
            Field::Operands if h.forwarded[i] => {
                let ops = h.operands(i as u32).unwrap_or(&[]);
                PyTuple::new(py, ops.iter().map(|&o| h.names[o as usize].bind(py)))?.into_any()
            }
            Field::Operands => h.instructions.bind(py).get_item(i)?.get_item(3)?,
            Field::ByName => h.instructions.bind(py).get_item(i)?,
        })
    }

    fn find(
        &self,
        py: Python<'_>,
        h: &CanonHandle,
        key: &Bound<'_, PyAny>,
    ) -> PyResult<Option<usize>> {
        let index = h
            .index
            .get_or_try_init(py, || NameIndex::build(py, &h.names))?;
        Ok(index.find(&h.names, key)?.filter(|&i| self.has(h, i)))
    }

    fn dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let h = self.handle.get();
        let d = PyDict::new(py);
        for &i in self.members(h).iter() {
            d.set_item(h.names[i as usize].bind(py), self.value(py, h, i as usize)?)?;
        }
        Ok(d)
    }
}

#[pymethods]
impl CanonMap {
    fn __len__(&self) -> usize {
        let h = self.handle.get();
        match self.field {
            Field::Keys | Field::H0 | Field::H1 => h.order.len(),
            Field::Operands => h.entered.len(),
            Field::ByName => h.names.len(),
        }
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.find(py, self.handle.get(), key)?.is_some())
    }

    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        key: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let h = self.handle.get();
        match self.find(py, h, key)? {
            Some(i) => self.value(py, h, i),
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
        let h = self.handle.get();
        match self.find(py, h, key)? {
            Some(i) => self.value(py, h, i),
            None => Ok(default.unwrap_or_else(|| py.None().into_bound(py))),
        }
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyIterator>> {
        let h = self.handle.get();
        PyList::new(
            py,
            self.members(h)
                .iter()
                .map(|&i| h.names[i as usize].bind(py)),
        )?
        .into_any()
        .try_iter()
    }

    /// A set-like view, as a dictionary's (`operands.keys() | dead` is read).
    fn keys<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        static VIEW: GILOnceCell<Py<PyAny>> = GILOnceCell::new();
        let py = slf.py();
        VIEW.import(py, "collections.abc", "KeysView")?
            .call1((slf,))
    }

    fn values<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let h = self.handle.get();
        let values = self
            .members(h)
            .iter()
            .map(|&i| self.value(py, h, i as usize))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, values)
    }

    fn items<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let h = self.handle.get();
        let items = self
            .members(h)
            .iter()
            .map(|&i| Ok((h.names[i as usize].bind(py), self.value(py, h, i as usize)?)))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)
    }

    /// A dictionary with the same items, in the same order.
    fn copy<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        self.dict(py)
    }

    /// Equal to any mapping with the same items, as dictionaries are.
    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> PyResult<bool> {
        if !(other.is_instance_of::<PyDict>()
            || other.is_instance_of::<CanonMap>()
            || other.hasattr("keys")?)
        {
            return Ok(false);
        }
        let h = self.handle.get();
        if other.len()? != self.__len__() {
            return Ok(false);
        }
        for &i in self.members(h).iter() {
            match other.get_item(h.names[i as usize].bind(py)) {
                Ok(v) => {
                    if !v.eq(self.value(py, h, i as usize)?)? {
                        return Ok(false);
                    }
                }
                Err(e) if e.is_instance_of::<PyKeyError>(py) => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.dict(py)?.repr()?.to_string())
    }
}
