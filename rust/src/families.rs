//! Opcode families: the one table. Rust uses these constants; Python reads them through
//! `opcode_families()` (xlagraph/opcodes.py), so a family changes here and nowhere else.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFrozenSet};

/// Operand order does not change the result (lazy-IR names too: `aten::add`, `aten::mul`).
pub const COMMUTATIVE: &[&str] = &[
    "add",
    "multiply",
    "maximum",
    "minimum",
    "and",
    "or",
    "xor",
    "aten::add",
    "aten::mul",
];

/// XLA's `HloInstruction::HasSideEffectNoRecurse`: never removed as dead code (a custom-call
/// says so itself, `custom_call_has_side_effect=true`).
pub const SIDE_EFFECTS: &[&str] = &[
    "send",
    "send-done",
    "recv",
    "recv-done",
    "infeed",
    "outfeed",
    "rng",
    "rng-get-and-update-state",
    "all-reduce-start",
    "all-reduce-done",
    "all-gather-start",
    "all-gather-done",
    "collective-permute-start",
    "collective-permute-done",
];

/// Collectives: the ops that move data between devices, sync forms and their async `-start`.
pub const COLLECTIVES: &[&str] = &[
    "all-reduce",
    "all-reduce-start",
    "reduce-scatter",
    "all-gather",
    "all-gather-start",
    "all-to-all",
    "ragged-all-to-all",
    "collective-permute",
    "collective-permute-start",
    "collective-broadcast",
];

/// Random-number ops: dropout's, or a tensor drawn by the user.
pub const RANDOM: &[&str] = &["rng", "rng-bit-generator", "rng-get-and-update-state"];

/// Ops that restate one value (another shape, type or order of the same numbers): followed
/// through when asking what an instruction really reads.
pub const RESTATES: &[&str] = &["transpose", "reshape", "broadcast", "convert", "bitcast", "copy"];

const FAMILIES: &[(&str, &[&str])] = &[
    ("commutative", COMMUTATIVE),
    ("side_effects", SIDE_EFFECTS),
    ("collectives", COLLECTIVES),
    ("random", RANDOM),
    ("restates", RESTATES),
];

/// `{family: frozenset of opcodes}`, for xlagraph/opcodes.py.
#[pyfunction]
pub fn opcode_families(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let out = PyDict::new(py);
    for (name, ops) in FAMILIES {
        out.set_item(name, PyFrozenSet::new(py, ops.iter())?)?;
    }
    Ok(out)
}
