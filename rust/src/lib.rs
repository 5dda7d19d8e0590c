//! `xlagraph._core`: the HLO text reader (`parse/`), the canonical form of what it read
//! (`canon/`), the matcher and the correspondence (`matching/`) and the comparison's walks
//! (`diagnose/`), in the order of the Python pipeline; `py/` holds the reader's entry points.
//! Each folder uses only those before it (tests/test_rust_layout.py).

mod canon;
mod diagnose;
mod families;
mod matching;
mod parse;
mod py;

use pyo3::prelude::*;

use canon::handle::{CanonHandle, CanonMap};
use diagnose::{changes, pair_edits};
use matching::{
    from_handle, matcher, multiply_by_one, pair_map, refine, refine_from_dicts, side, users,
};
use parse::lazy_instructions;
use py::parse_hlo::{self, HloSyntaxError};
use py::stablehlo::StableHloError;
use py::{attributes, from_python, stablehlo};

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(parse_hlo::parse_hlo, m)?)?;
    m.add_function(wrap_pyfunction!(families::opcode_families, m)?)?;
    m.add_function(wrap_pyfunction!(parse_hlo::parse_only, m)?)?;
    m.add_function(wrap_pyfunction!(parse_hlo::summarize_hlo, m)?)?;
    m.add_function(wrap_pyfunction!(from_python::canonicalize_ir, m)?)?;
    m.add_class::<side::MatchSide>()?;
    m.add_function(wrap_pyfunction!(side::match_side, m)?)?;
    m.add_function(wrap_pyfunction!(matcher::match_sides, m)?)?;
    m.add_function(wrap_pyfunction!(matcher::match_phases, m)?)?;
    m.add_function(wrap_pyfunction!(users::side_users, m)?)?;
    m.add_function(wrap_pyfunction!(refine::refine_history, m)?)?;
    m.add_function(wrap_pyfunction!(refine_from_dicts::refine_graph, m)?)?;
    m.add_function(wrap_pyfunction!(refine::refine_picked, m)?)?;
    m.add_class::<refine::RefineGraph>()?;
    m.add_class::<CanonHandle>()?;
    m.add_class::<lazy_instructions::Instructions>()?;
    m.add_class::<lazy_instructions::InstructionsIter>()?;
    m.add_class::<CanonMap>()?;
    m.add_class::<pair_map::PairMap>()?;
    m.add_class::<pair_edits::EditedPairs>()?;
    m.add_function(wrap_pyfunction!(pair_edits::edited_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(from_handle::match_side_of, m)?)?;
    m.add_function(wrap_pyfunction!(from_handle::refine_graph_of, m)?)?;
    m.add_function(wrap_pyfunction!(from_handle::refine_graphs_of, m)?)?;
    m.add_function(wrap_pyfunction!(changes::matched_walk, m)?)?;
    m.add_function(wrap_pyfunction!(changes::unexplained, m)?)?;
    m.add_function(wrap_pyfunction!(
        multiply_by_one::identity_multiplies_of,
        m
    )?)?;
    m.add_function(wrap_pyfunction!(users::side_users_mapping, m)?)?;
    m.add_class::<users::SideUsers>()?;
    m.add_function(wrap_pyfunction!(attributes::compared_values, m)?)?;
    m.add_function(wrap_pyfunction!(attributes::attribute_values, m)?)?;
    m.add_function(wrap_pyfunction!(attributes::normalize_attribute, m)?)?;
    m.add_function(wrap_pyfunction!(attributes::plumbing_attributes, m)?)?;
    m.add_function(wrap_pyfunction!(attributes::frontend_entries, m)?)?;
    m.add_function(wrap_pyfunction!(attributes::stable_hash, m)?)?;
    m.add("HloSyntaxError", m.py().get_type::<HloSyntaxError>())?;
    m.add_function(wrap_pyfunction!(stablehlo::stablehlo_to_hlo, m)?)?;
    m.add("StableHloError", m.py().get_type::<StableHloError>())?;
    Ok(())
}
