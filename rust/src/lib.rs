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
use diagnose::{changes, pair_edits, reader_votes};
use matching::{
    collective_chain, from_handle, matcher, multiply_by_one, pair_map, refine, side, sum_terms,
    users,
};
use parse::lazy_instructions;
use py::parse_hlo::{self, HloSyntaxError};
use py::stablehlo::StableHloError;
use py::{attributes, from_python, stablehlo};

/// The core's allocator: the system's, asking the kernel for transparent huge pages on the
/// 2 MiB-aligned spans of large blocks (Linux, where THP is `madvise`, the usual default). A
/// 120K-instruction module fills some 40 MB of fresh tables; touched 4 KiB at a time that is
/// about 10,000 page faults, a tenth of `graphs`' CPU. Nothing changes what is stored or read.
struct HugeBlocks;

/// Blocks from this size on hold at least one whole huge page worth advising.
const LARGE_BLOCK: usize = 4 << 20;

/// `ptr` (a block of `size` bytes) back, its whole huge pages advised where it is large.
#[cfg(target_os = "linux")]
fn advised(ptr: *mut u8, size: usize) -> *mut u8 {
    const HUGE: usize = 2 << 20;
    const MADV_HUGEPAGE: i32 = 14;
    extern "C" {
        fn madvise(addr: *mut std::ffi::c_void, len: usize, advice: i32) -> i32;
    }
    let start = (ptr as usize).next_multiple_of(HUGE);
    let end = (ptr as usize + size) & !(HUGE - 1);
    if size >= LARGE_BLOCK && !ptr.is_null() && end > start {
        // A refusal (THP off, an old kernel) leaves ordinary pages: the result is ignored.
        unsafe { madvise(start as *mut std::ffi::c_void, end - start, MADV_HUGEPAGE) };
    }
    ptr
}

#[cfg(not(target_os = "linux"))]
fn advised(ptr: *mut u8, _size: usize) -> *mut u8 {
    ptr
}

unsafe impl std::alloc::GlobalAlloc for HugeBlocks {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        advised(std::alloc::System.alloc(layout), layout.size())
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: std::alloc::Layout) {
        std::alloc::System.dealloc(ptr, layout)
    }

    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        advised(std::alloc::System.alloc_zeroed(layout), layout.size())
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new: usize) -> *mut u8 {
        advised(std::alloc::System.realloc(ptr, layout, new), new)
    }
}

#[global_allocator]
static ALLOCATOR: HugeBlocks = HugeBlocks;

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(parse_hlo::parse_hlo, m)?)?;
    m.add_function(wrap_pyfunction!(families::opcode_families, m)?)?;
    m.add_function(wrap_pyfunction!(parse_hlo::parse_only, m)?)?;
    m.add_function(wrap_pyfunction!(parse_hlo::summarize_hlo, m)?)?;
    m.add_function(wrap_pyfunction!(from_python::canonicalize_ir, m)?)?;
    m.add_class::<side::MatchSide>()?;
    m.add_function(wrap_pyfunction!(matcher::match_sides, m)?)?;
    m.add_function(wrap_pyfunction!(matcher::match_phases, m)?)?;
    m.add_function(wrap_pyfunction!(refine::refine_history, m)?)?;
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
    m.add_function(wrap_pyfunction!(from_handle::refine_graphs_of, m)?)?;
    m.add_function(wrap_pyfunction!(changes::matched_walk, m)?)?;
    m.add_function(wrap_pyfunction!(changes::unexplained, m)?)?;
    m.add_function(wrap_pyfunction!(reader_votes::reader_votes, m)?)?;
    m.add_function(wrap_pyfunction!(
        multiply_by_one::identity_multiplies_of,
        m
    )?)?;
    m.add_function(wrap_pyfunction!(collective_chain::collective_chain_of, m)?)?;
    m.add_function(wrap_pyfunction!(users::side_users_mapping, m)?)?;
    m.add_function(wrap_pyfunction!(sum_terms::side_sum_chains, m)?)?;
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
