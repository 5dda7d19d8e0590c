//! The attribute rules of the canonical form (canon/attributes.rs, blake2b.rs), for the library's
//! diagnosis and rendering: what two instructions compare of an attribute, a forwarded root's
//! own attributes, the entries of a `frontend_attributes` dict, the process-stable hash. One call
//! per instruction (its attributes at once), none per attribute.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use crate::canon::attributes::{
    compared_lenient, frontend_entries as entries, normalize_lenient, plumbing_of,
};
use crate::canon::blake2b;
use crate::parse::text::COMPUTATION_ATTRIBUTES;

/// An instruction's `attributes` (a sequence of `(key, value)` string pairs), read in place.
fn pairs<'py>(
    attributes: &Bound<'py, PyAny>,
) -> PyResult<Vec<(Bound<'py, PyString>, Bound<'py, PyString>)>> {
    let mut out = Vec::with_capacity(attributes.len().unwrap_or(0));
    for item in attributes.try_iter()? {
        let item = item?;
        let k = item.get_item(0)?.downcast_into::<PyString>()?;
        let v = item.get_item(1)?.downcast_into::<PyString>()?;
        out.push((k, v));
    }
    Ok(out)
}

/// The compared value as a Python string: the printed one itself where nothing changed it.
fn py_value<'py>(
    printed: &Bound<'py, PyString>,
    text: &str,
    compared: String,
) -> Bound<'py, PyString> {
    if compared == text {
        printed.clone()
    } else {
        PyString::new(printed.py(), &compared)
    }
}

/// `[compared_value(ins, k, v) for k, v in attributes]` of an instruction of `opcode` and
/// `payload`: each value as two instructions compare it, None where it never makes them differ
/// (an ignored key, an empty frontend dict or backend config); an invalid iota group as printed.
#[pyfunction]
pub fn compared_values<'py>(
    py: Python<'py>,
    opcode: &str,
    payload: &str,
    attributes: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let out = PyList::empty(py);
    for (k, v) in pairs(attributes)? {
        let text = v.to_str()?;
        match compared_lenient(opcode, payload, k.to_str()?, text) {
            Some(c) => out.append(py_value(&v, text, c))?,
            None => out.append(py.None())?,
        }
    }
    Ok(out)
}

/// `{k: compared_value(ins, k, v)}` of the attributes whose compared value is not None (the
/// last of a repeated key), those naming called computations left out unless `called`.
#[pyfunction]
pub fn attribute_values<'py>(
    py: Python<'py>,
    opcode: &str,
    payload: &str,
    attributes: &Bound<'py, PyAny>,
    called: bool,
) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    for (k, v) in pairs(attributes)? {
        let key = k.to_str()?;
        if !called && COMPUTATION_ATTRIBUTES.contains(&key) {
            continue;
        }
        let text = v.to_str()?;
        if let Some(c) = compared_lenient(opcode, payload, key, text) {
            out.set_item(&k, py_value(&v, text, c))?;
        }
    }
    Ok(out)
}

/// `normalize_attribute(key, value)`: whitespace dropped outside strings, iota replica groups
/// expanded (an invalid one as printed).
#[pyfunction]
pub fn normalize_attribute(key: &str, value: &str) -> String {
    normalize_lenient(key, value)
}

/// `plumbing_attributes`: what a root tuple (or a forwarding get-tuple-element) says beyond its
/// operands, `key=value` joined by `;`.
#[pyfunction]
pub fn plumbing_attributes(
    opcode: &str,
    payload: &str,
    attributes: &Bound<'_, PyAny>,
) -> PyResult<String> {
    let pairs = pairs(attributes)?;
    let mut texts = Vec::with_capacity(pairs.len());
    for (k, v) in &pairs {
        texts.push((k.to_str()?, v.to_str()?));
    }
    Ok(plumbing_of(opcode, payload, texts.into_iter()))
}

/// `frontend_entries`: the top-level `key=value` entries of a `{...}` dict.
#[pyfunction]
pub fn frontend_entries(value: &str) -> Vec<String> {
    entries(value).into_iter().map(str::to_string).collect()
}

/// `stable_hash`: a 64-bit hash of `text`, the same in every process (unlike `hash(str)`).
#[pyfunction]
pub fn stable_hash(text: &str) -> u64 {
    blake2b::stable_hash(text)
}
