//! `Comparison.pair_left` / `.pair_right`: the matching, re-paired where the evidence pairs
//! inputs and outputs otherwise (issue 22). They were dictionary copies of the matcher's
//! `PairMap`s, 0.23 s of the 600K diff for two dictionaries of which a few entries change. An
//! `EditedPairs` starts as the pairs themselves and takes the edits a dictionary takes (`pop`,
//! `d[k] = v`, `del d[k]`) with a dictionary's answers and order: a key popped and set again
//! goes to the end, a key set again in place keeps its place. Keys are names of one computation,
//! values names of the other; other keys or values cannot be stored and are refused
//! (`KeyError`): callers only move names of the two computations between pairs. The compiled
//! walks over the pairs (`changes.rs`) read its indices as they are.

use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyIterator, PyList};

use std::borrow::Cow;
use std::sync::Arc;

use crate::canon::indexed::Canon;
use crate::canon::mapping::{equal, find, mapping_methods, to_dict, Table};
use crate::matching::pair_map::PairMap;

const NONE: u32 = u32::MAX;

#[pyclass(mapping, module = "xlagraph._core")]
pub struct EditedPairs {
    keyed: Arc<Canon>,
    valued: Arc<Canon>,
    /// Per key's index the value's index (`NONE`: not a key).
    value: Vec<u32>,
    /// Keys in the order entered; an entry is live where `place` points back at it.
    entered: Vec<u32>,
    /// Per key's index its live place in `entered` (`NONE`: not a key).
    place: Vec<u32>,
    len: usize,
}

impl EditedPairs {
    /// The pairs of `map` (`Matching.left` or `.right`) as they are.
    fn of(map: &PairMap) -> Option<Self> {
        let (keyed, valued, keys, to) = map.parts()?;
        let mut place = vec![NONE; keyed.names.len()];
        for (k, &i) in keys.iter().enumerate() {
            place[i as usize] = k as u32;
        }
        Some(EditedPairs {
            keyed: keyed.clone(),
            valued: valued.clone(),
            value: to.to_vec(),
            entered: keys.to_vec(),
            place,
            len: keys.len(),
        })
    }

    /// The computations of keys and values, and per key's index its value's index (`u32::MAX`:
    /// none), for the compiled walks.
    pub(crate) fn indices(&self) -> (&Arc<Canon>, &Arc<Canon>, &[u32]) {
        (&self.keyed, &self.valued, &self.value)
    }

    fn take(&mut self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Option<PyObject>> {
        let Some(i) = find(self, py, key)? else {
            return Ok(None);
        };
        let v = self.value(py, i)?.unbind();
        self.value[i] = NONE;
        self.place[i] = NONE;
        self.len -= 1;
        Ok(Some(v))
    }
}

impl Table for EditedPairs {
    fn keyed(&self) -> &Canon {
        &self.keyed
    }

    fn members(&self) -> Cow<'_, [u32]> {
        let live = self
            .entered
            .iter()
            .enumerate()
            .filter(|&(k, &i)| self.place[i as usize] == k as u32)
            .map(|(_, &i)| i);
        Cow::Owned(live.collect())
    }

    fn size(&self) -> usize {
        self.len
    }

    fn has(&self, i: usize) -> bool {
        self.value[i] != NONE
    }

    fn value<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyAny>> {
        Ok(self.valued.names[self.value[i] as usize]
            .bind(py)
            .clone()
            .into_any())
    }
}

mapping_methods!(EditedPairs, {
    /// A dictionary's `pop(key[, default])` (`*args` cannot be written inside the macro).
    #[pyo3(signature = (key, default = missing()))]
    fn pop(
        &mut self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: PyObject,
    ) -> PyResult<PyObject> {
        match self.take(py, key)? {
            Some(v) => Ok(v),
            None if default.is(&missing()) => Err(PyKeyError::new_err(key.clone().unbind())),
            None => Ok(default),
        }
    }

    fn __delitem__(&mut self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        match self.take(py, key)? {
            Some(_) => Ok(()),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    fn __setitem__(&mut self, key: &Bound<'_, PyAny>, value: &Bound<'_, PyAny>) -> PyResult<()> {
        let (Some(i), Some(v)) = (self.keyed.find(key)?, self.valued.find(value)?) else {
            return Err(PyKeyError::new_err((
                "not a pair of names of the two computations",
                key.clone().unbind(),
                value.clone().unbind(),
            )));
        };
        if self.place[i] == NONE {
            self.place[i] = self.entered.len() as u32;
            self.entered.push(i as u32);
            self.len += 1;
        }
        self.value[i] = v as u32;
        Ok(())
    }
});

/// `pop`'s default when none is given: an object of its own, as no caller can pass it.
fn missing() -> PyObject {
    static MISSING: GILOnceCell<PyObject> = GILOnceCell::new();
    Python::with_gil(|py| {
        MISSING
            .get_or_init(py, || PyList::empty(py).into_any().unbind())
            .clone_ref(py)
    })
}

/// `Matching.left` or `.right` (a `PairMap`) as pairs to edit; None for `.matcher`.
#[pyfunction]
pub fn edited_pairs(map: &PairMap) -> Option<EditedPairs> {
    EditedPairs::of(map)
}
