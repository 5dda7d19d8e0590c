//! The matcher's answer (`Matching.left`, `.right`, `.matcher`) as mappings over its pairs
//! (`canon/mapping.rs`) instead of dictionaries: three dictionaries of every matched pair cost
//! 0.3 s of the 600K diff, the matching 0.05.

use std::borrow::Cow;
use std::sync::Arc;

use pyo3::exceptions::PyKeyError;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyIterator, PyList, PyString};

use crate::canon::indexed::Canon;
use crate::canon::mapping::{equal, find, mapping_methods, to_dict, Table};

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

    /// `Matching.matcher`'s parts: the left computation, per left instruction its right one
    /// (`u32::MAX`: none) and its phase (an index into the last part, the phases' names).
    #[allow(clippy::type_complexity)]
    pub(crate) fn phases(&self) -> Option<(&Arc<Canon>, &[u32], &[u8], &[Py<PyString>])> {
        let p = &*self.pairs;
        (self.side == Side::Matcher).then_some((&p.left, &p.to_right[..], &p.tag[..], &p.tags[..]))
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

mapping_methods!(PairMap, {
    /// The keys among `names` (an iterable of names of the keys' computation), in this
    /// mapping's order: `[k for k in m if k in names]` for a few names of a large matching
    /// without walking every pair in Python (`diff._diff`'s matched callers: 2,200 names
    /// among 86K pairs, about 10 ms a diff as a filter).
    fn keys_among<'py>(
        &self,
        py: Python<'py>,
        names: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let keyed = self.keyed();
        let mut wanted = vec![false; keyed.names.len()];
        for name in names.try_iter()? {
            if let Some(i) = keyed.find(&name?)? {
                wanted[i] = true;
            }
        }
        let found: Vec<_> = self
            .members()
            .iter()
            .filter(|&&i| wanted[i as usize])
            .map(|&i| keyed.names[i as usize].bind(py))
            .collect();
        PyList::new(py, found)
    }
});
