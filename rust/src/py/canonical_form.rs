//! One computation's canonical form as the fields of `CanonicalComputation` (the Python side's
//! `xlagraph/canonical/model.py`), names shared with the IR.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

use crate::canon::handle::{canon_map, py_int, shared_int, CanonHandle, Field};
use crate::canon::model::CompCanon;
use crate::parse::ir_build::untrack;
use crate::parse::text::{Comp, FxMap};

/// One computation's canonical form as the fields of `CanonicalComputation`, names shared with
/// the IR: its index, then `CanonicalComputation`'s fields past `computation` in their order;
/// dictionaries in the key order the oracle (tests/canonical_reference.py) gives them; last the core's handle on it (`core`,
/// handle.rs), None where a name repeats.
pub(crate) fn canonical_form<'py>(
    py: Python<'py>,
    ints: &mut FxMap<u64, Bound<'py, PyAny>>,
    c: &CompCanon,
    comp: &Comp,
    names: &[Bound<'py, PyString>],
    operands: &[Bound<'py, PyTuple>],
    kept: Option<CanonHandle>,
) -> PyResult<Bound<'py, PyTuple>> {
    let name = |i: &u32| names[*i as usize].clone();
    let tuple = |v: &[u32]| PyTuple::new(py, v.iter().map(name)).map(untrack);
    // Where the core keeps a handle, the tables by name are mappings over it (`CanonMap`, in
    // canon/handle.rs):
    // a diff asks them about a few names, and building them was most of the IR's cost.
    let kept = kept.map(|h| Bound::new(py, h)).transpose()?;
    let (ops, keys, h0, h1) = match &kept {
        Some(h) => {
            let map = |f| canon_map(py, h, f).map(|m| m.into_bound(py).into_any());
            (
                map(Field::Operands)?,
                map(Field::Keys)?,
                map(Field::H0)?,
                map(Field::H1)?,
            )
        }
        None => {
            let (ops, keys, h0, h1) = tables(py, ints, c, comp, names, operands)?;
            (
                ops.into_any(),
                keys.into_any(),
                h0.into_any(),
                h1.into_any(),
            )
        }
    };
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
            match kept {
                Some(h) => h.into_any(),
                None => py.None().into_bound(py),
            },
        ],
    )
}

/// The canonical form's tables by name as dictionaries (where no handle is kept: a name repeats).
#[allow(clippy::type_complexity)]
fn tables<'py>(
    py: Python<'py>,
    ints: &mut FxMap<u64, Bound<'py, PyAny>>,
    c: &CompCanon,
    comp: &Comp,
    names: &[Bound<'py, PyString>],
    operands: &[Bound<'py, PyTuple>],
) -> PyResult<(
    Bound<'py, PyDict>,
    Bound<'py, PyDict>,
    Bound<'py, PyDict>,
    Bound<'py, PyDict>,
)> {
    let name = |i: &u32| names[*i as usize].clone();
    let tuple = |v: &[u32]| PyTuple::new(py, v.iter().map(name)).map(untrack);
    let ops = PyDict::new(py);
    for &i in &c.entered {
        if c.fidx[i as usize] == u32::MAX {
            ops.set_item(name(&i), &operands[i as usize])?;
        } else {
            ops.set_item(name(&i), tuple(c.ops(comp, i))?)?;
        }
    }
    // One int object per distinct content key (a module repeats a few thousand), shared by the
    // leaves' h0/h1 (a leaf's h0 is its key).
    let keys = PyDict::new(py);
    for &i in &c.order {
        keys.set_item(name(&i), shared_int(py, ints, c.keys[i as usize])?)?;
    }
    // h0 and h1 have the keys' key order: copies of `keys` (no rehashing as they grow) whose
    // values are replaced.
    let fill = |hashes: &[i128]| -> PyResult<Bound<'py, PyDict>> {
        let d = keys.copy()?;
        for &i in &c.order {
            let h = hashes[i as usize];
            if h != c.keys[i as usize] as i128 {
                d.set_item(name(&i), py_int(py, h)?)?;
            }
        }
        Ok(d)
    };
    let (h0, h1) = (fill(&c.h0)?, fill(&c.h1)?);
    Ok((ops, keys, h0, h1))
}
