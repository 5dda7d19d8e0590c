//! Pairing the instructions of two canonical computations (`xlagraph.match`'s compiled half): the
//! matcher's phases, the correspondence's colour refinement, and the inputs both read, made from
//! a computation's handle (`canon/handle.rs`).

pub(crate) mod collective_chain;
pub(crate) mod colour_graph;
pub(crate) mod from_handle;
pub(crate) mod mappings;
pub(crate) mod matcher;
pub(crate) mod multiply_by_one;
pub(crate) mod pair_map;
pub(crate) mod phases;
pub(crate) mod refine;
pub(crate) mod refine_alone;
pub(crate) mod refine_from_handle;
pub(crate) mod refine_split;
pub(crate) mod side;
pub(crate) mod sum_terms;
pub(crate) mod two_threads;
pub(crate) mod users;
