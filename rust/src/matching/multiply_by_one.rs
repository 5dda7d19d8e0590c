//! `xlagraph.match.identity`'s multiplies by one, found on the handle (`canon/handle.rs`): the
//! same rule as `_identity_multiplies` after its ones are known (the scalar constants one, which
//! Python picks: their printed values are not in the handle), without a Python lookup per
//! broadcast and multiply (a 600K-instruction module has 200K of them).

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::canon::handle::CanonHandle;

/// Each live `multiply(x, one)` that is not an output, as (its index, the index of the value it
/// multiplies, chains followed), in the order of the instructions; `ones`: the indices of the
/// scalar constants one. A one is also a `broadcast` of a one with a single canonical operand.
#[pyfunction]
pub fn identity_multiplies_of(
    py: Python<'_>,
    handle: &CanonHandle,
    ones: Vec<u32>,
) -> PyResult<Vec<(u32, u32)>> {
    let n = handle.names.len();
    if ones.iter().any(|&i| i as usize >= n) {
        return Err(PyValueError::new_err("identity: an index is out of range"));
    }
    let id = |opcode: &str| handle.opcodes.iter().position(|o| o == opcode);
    let (broadcast, multiply) = (id("broadcast"), id("multiply"));
    Ok(py.allow_threads(|| {
        let mut one = vec![false; n];
        for &i in &ones {
            one[i as usize] = true;
        }
        let mut multiplies = Vec::new();
        for k in 0..n {
            let op = Some(handle.opcode[k] as usize);
            if op == broadcast {
                if let Some(&[o]) = handle.operands(k as u32) {
                    if one[o as usize] {
                        one[k] = true;
                    }
                }
            } else if op == multiply && handle.has_ops[k] {
                multiplies.push(k as u32);
            }
        }
        let mut output = vec![false; n];
        for &o in &handle.outputs {
            output[o as usize] = true;
        }
        // What each multiply stands for (NONE: not an identity), in the order found.
        const NONE: u32 = u32::MAX;
        let mut target = vec![NONE; n];
        let mut found = Vec::new();
        for &m in &multiplies {
            let ops = handle.operands(m).unwrap_or(&[]);
            if ops.len() != 2 || output[m as usize] {
                continue;
            }
            let (x, y) = (ops[0] as usize, ops[1] as usize);
            if one[y] && !one[x] {
                target[m as usize] = x as u32;
            } else if one[x] && !one[y] {
                target[m as usize] = y as u32;
            } else {
                continue;
            }
            found.push(m);
        }
        // Chains (`x * 1 * 1`), followed as Python follows them: in order, each entry replaced
        // by the end of its chain before the next is followed.
        let mut out = Vec::with_capacity(found.len());
        for &m in &found {
            let mut seen = vec![m];
            let mut t = target[m as usize];
            while target[t as usize] != NONE && !seen.contains(&t) {
                seen.push(t);
                t = target[t as usize];
            }
            target[m as usize] = t;
            out.push((m, t));
        }
        out
    }))
}
