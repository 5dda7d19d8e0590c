//! `stablehlo_to_hlo`: StableHLO text -> (HLO text, the user's line for each of its lines),
//! translated without the GIL (parse/stablehlo). Raises `StableHloError(message, line, kind)`:
//! kind "parse" names the line (0: none), "input" the text as a whole.

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyString;

use crate::parse::stablehlo::read::{self, Refusal};

create_exception!(
    _core,
    StableHloError,
    PyValueError,
    "StableHLO text not read: args are (message, line, kind), kind \"parse\" or \"input\"."
);

#[pyfunction]
pub fn stablehlo_to_hlo(
    py: Python<'_>,
    text: &Bound<'_, PyString>,
) -> PyResult<(String, Vec<u32>)> {
    let text = text.to_cow()?;
    let got = py.allow_threads(|| read::stablehlo_to_hlo(&text));
    got.map_err(|r| match r {
        Refusal::Parse(message, line) => StableHloError::new_err((message, line, "parse")),
        Refusal::Input(message) => StableHloError::new_err((message, 0usize, "input")),
        Refusal::Stack => {
            StableHloError::new_err(("StableHLO nested too deeply to read", 0usize, "input"))
        }
    })
}
