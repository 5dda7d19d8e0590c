//! A canonical computation by instruction index, as the core keeps it for the matcher, the
//! correspondence and the comparison: its names (the IR's own string objects), its canonical
//! operands as CSR, its hashes, and names to indices (`NameIndex`) made when first asked for.
//! A handle (`handle.rs`) holds one; so does each matcher side (`matching/side.rs`).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::PyString;

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
    /// Names to indices (`NameIndex`, below), made when first asked; only where names are `unique`
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

/// Names to instruction indices: open addressing on Python's own string hash (cached in each
/// string object, so later dictionary lookups with these names hash nothing either). Each slot
/// holds the low half of its name's hash beside the index: a probe reads one slot, and the name
/// only where those 32 bits agree (a 99K-name table does not fit in a cache: the hashes in an
/// array of their own cost a second miss a probe).
pub struct NameIndex {
    /// `(hash as u32, index + 1)`; `(_, 0)` is empty.
    slots: Vec<(u32, u32)>,
    mask: usize,
}

impl NameIndex {
    fn build(py: Python<'_>, names: &[Py<PyString>]) -> PyResult<Self> {
        let cap = (names.len() * 2).next_power_of_two().max(8);
        let mask = cap - 1;
        let mut slots = vec![(0u32, 0u32); cap];
        for (i, name) in names.iter().enumerate() {
            let h = name.bind(py).hash()?;
            let mut k = h as usize & mask;
            while slots[k].1 != 0 {
                k = (k + 1) & mask;
            }
            slots[k] = (h as u32, i as u32 + 1);
        }
        Ok(NameIndex { slots, mask })
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
            let (low, slot) = self.slots[k];
            if slot == 0 {
                return Ok(None);
            }
            if low == h as u32 {
                let i = (slot - 1) as usize;
                let name = names[i].bind(key.py());
                // The full hash is the name's own, cached in the string: a dictionary's test.
                if name.as_ptr() == key.as_ptr() || (name.hash()? == h && name.as_any().eq(key)?) {
                    return Ok(Some(i));
                }
            }
            k = (k + 1) & self.mask;
        }
    }
}

/// `bottom_up.users_of`: the users of each instruction in `order`, once per operand occurrence
/// (CSR). Every instruction of `order` must have an operands entry.
pub(crate) fn users_of(
    n: usize,
    order: &[u32],
    ops_start: &[u32],
    ops: &[u32],
    has_ops: &[bool],
) -> PyResult<(Vec<u32>, Vec<u32>)> {
    let mut count = vec![0u32; n + 1];
    for &u in order {
        let u = u as usize;
        if !has_ops[u] {
            return Err(PyValueError::new_err(
                "an instruction of order has no operands entry",
            ));
        }
        for &o in &ops[ops_start[u] as usize..ops_start[u + 1] as usize] {
            count[o as usize + 1] += 1;
        }
    }
    for i in 0..n {
        count[i + 1] += count[i];
    }
    let users_start = count.clone();
    let mut fill = count;
    let mut users = vec![0u32; users_start[n] as usize];
    for &u in order {
        let u = u as usize;
        for &o in &ops[ops_start[u] as usize..ops_start[u + 1] as usize] {
            users[fill[o as usize] as usize] = u as u32;
            fill[o as usize] += 1;
        }
    }
    Ok((users_start, users))
}
