//! A dictionary's read-only face on a table keyed by one computation's names (`Table`): what
//! the canonical form's mappings over a handle (`handle.rs` `CanonMap`), the matcher's pairs
//! (`matching/pair_map.rs`) and the comparison's pairs (`diagnose/pair_edits.rs`) answer as the
//! dictionaries they replace: the same keys in the same order, the same values, `KeyError` for
//! other names, equality with any mapping of the same items.

use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use std::borrow::Cow;

use crate::canon::indexed::Canon;

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
