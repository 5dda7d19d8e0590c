//! One computation's canonical form as the fields of `CanonicalComputation` (the Python side's
//! `xlagraph/canonical/model.py`), names shared with the IR.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

use crate::canon::handle::{canon_map, CanonHandle, Field};
use crate::canon::model::CompCanon;
use crate::parse::ir_build::untrack;

/// One computation's canonical form as the fields of `CanonicalComputation`, names shared with
/// the IR: its index, then `CanonicalComputation`'s fields past `computation` in their order;
/// dictionaries in the key order the oracle (tests/canonical_reference.py) gives them; last the
/// core's handle on it (`core`, handle.rs). Its tables by name (operands, keys, h0, h1) are
/// mappings over that handle (`CanonMap`): a diff asks them about a few names, and building them
/// was most of the IR's cost. Every computation has its handle: the readers refuse a name
/// defined twice in a computation (parser_operands.rs `add`, from_python.rs `records`).
pub(crate) fn canonical_form<'py>(
    py: Python<'py>,
    c: &CompCanon,
    names: &[Bound<'py, PyString>],
    kept: CanonHandle,
) -> PyResult<Bound<'py, PyTuple>> {
    let name = |i: &u32| names[*i as usize].clone();
    let tuple = |v: &[u32]| PyTuple::new(py, v.iter().map(name)).map(untrack);
    let kept = Bound::new(py, kept)?;
    let map = |f| canon_map(py, &kept, f).map(|m| m.into_bound(py).into_any());
    let (ops, keys, h0, h1) = (
        map(Field::Operands)?,
        map(Field::Keys)?,
        map(Field::H0)?,
        map(Field::H1)?,
    );
    let pairs = |v: &[(u32, i64)]| -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (i, number) in v {
            d.set_item(name(i), number)?;
        }
        Ok(d)
    };
    let layouts = PyDict::new(py);
    for (i, lay) in &c.layouts {
        layouts.set_item(name(i), lay)?;
    }
    PyTuple::new(
        py,
        [
            c.comp.into_pyobject(py)?.into_any(),
            tuple(&c.order)?.into_any(),
            ops,
            tuple(&c.outputs)?.into_any(),
            keys,
            h0,
            h1,
            pairs(&c.params)?.into_any(),
            pairs(&c.ranks)?.into_any(),
            tuple(&c.plumbing)?.into_any(),
            tuple(&c.dead)?.into_any(),
            c.hash.into_pyobject(py)?.into_any(),
            layouts.into_any(),
            tuple(&c.walk)?.into_any(),
            kept.into_any(),
        ],
    )
}
