//! What Python asks of a `CanonHandle` (handle.rs) beyond its mappings: the live constants, the
//! side effects' hashes, the lone parameters and `h0`s, the inputs the outputs update, opcodes by
//! name, `h0_distance` (each answer held to its Python rule by tests/test_canon_map.py and
//! tests/test_core_handle.py).

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFrozenSet, PyString, PyTuple};

use crate::canon::handle::{canon_map, compared_shapes, py_int, CanonHandle, CanonMap, Field};
use crate::canon::indexed::users_of;
use crate::families;
use crate::parse::text::FxMap;

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
