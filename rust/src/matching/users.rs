//! The users of a computation's instructions (`bottom_up.users_of`) as a mapping over the
//! matcher's copy (`MatchSide`): the comparison and the recognizers ask for the users of a few
//! names (the inputs, a cause's instructions), and a dictionary would hold a list per
//! instruction (600K on the large pair, 0.25 CPU-s a side). Here a name's list is made when asked
//! for; keys come in the dictionary's order (first use in `order`).

use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString};

use crate::matching::side::MatchSide;
use crate::parse::text::FxMap;

#[pyclass(frozen, module = "xlagraph._core")]
pub struct SideUsers {
    side: Py<MatchSide>,
    /// Names to indices (the last of a repeated name, as a dictionary keeps it); None where
    /// names are unique: the computation's shared index (`canon/indexed.rs`) answers.
    index: Option<FxMap<String, u32>>,
    /// How many instructions have users (the dictionary's length).
    len: usize,
}

impl SideUsers {
    fn index_of(&self, name: &Bound<'_, PyAny>) -> Option<u32> {
        let name = name.downcast::<PyString>().ok()?;
        match &self.index {
            Some(index) => index.get(name.to_str().ok()?).copied(),
            None => self
                .side
                .get()
                .canon
                .find(name.as_any())
                .ok()?
                .map(|i| i as u32),
        }
    }

    fn users_of<'py>(
        &self,
        py: Python<'py>,
        name: &Bound<'py, PyAny>,
    ) -> Option<Bound<'py, PyList>> {
        let s = self.side.get();
        let i = self.index_of(name)?;
        let users = s.users(i);
        if users.is_empty() {
            return None;
        }
        Some(PyList::new(py, users.iter().map(|&u| s.names[u as usize].bind(py))).ok()?)
    }
}

#[pymethods]
impl SideUsers {
    #[pyo3(signature = (name, default=None))]
    fn get<'py>(
        &self,
        py: Python<'py>,
        name: &Bound<'py, PyAny>,
        default: Option<Bound<'py, PyAny>>,
    ) -> Bound<'py, PyAny> {
        match self.users_of(py, name) {
            Some(list) => list.into_any(),
            None => default.unwrap_or_else(|| py.None().into_bound(py)),
        }
    }

    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        name: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        self.users_of(py, name)
            .ok_or_else(|| PyKeyError::new_err(name.clone().unbind()))
    }

    fn __contains__(&self, name: &Bound<'_, PyAny>) -> bool {
        let s = self.side.get();
        self.index_of(name).is_some_and(|i| !s.users(i).is_empty())
    }

    fn __len__(&self) -> usize {
        self.len
    }

    /// The names that have users, in the dictionary's order (first use in `order`).
    fn keys<'py>(&self, py: Python<'py>) -> Vec<Bound<'py, PyString>> {
        let s = self.side.get();
        let mut seen = vec![false; s.names.len()];
        let mut out = Vec::with_capacity(self.len);
        for &u in &s.order {
            for &o in s.operands(u).unwrap_or(&[]) {
                if !std::mem::replace(&mut seen[o as usize], true) {
                    out.push(s.names[o as usize].bind(py).clone());
                }
            }
        }
        out
    }
}

/// The users mapping of a matcher side.
#[pyfunction]
pub fn side_users_mapping(py: Python<'_>, side: Py<MatchSide>) -> PyResult<SideUsers> {
    let s = side.get();
    let index = if s.canon.unique {
        None
    } else {
        let mut index: FxMap<String, u32> = FxMap::default();
        index.reserve(s.names.len());
        for (i, n) in s.names.iter().enumerate() {
            index.insert(n.bind(py).to_str()?.to_owned(), i as u32);
        }
        Some(index)
    };
    let len = (0..s.names.len() as u32)
        .filter(|&i| !s.users(i).is_empty())
        .count();
    Ok(SideUsers { side, index, len })
}
