//! Reading StableHLO text (MLIR's printed form, issue 38): a module is written as the HLO text
//! XLA's own export (xla/hlo/translate/mhlo_to_hlo) would produce for it, with the user's line for
//! each line, which the HLO reader then reads. In the order of the work: `lines.rs` and
//! `structure.rs` split the text (functions, operations, regions, `#loc` aliases;
//! `structure_lines.rs` each line that carries structure, `strip_loc.rs` an operation's
//! location), `mlir_types.rs` types and constants (`numbers.rs` Python's number
//! words), `locations.rs` `loc(...)` into metadata, `values.rs`/`signature.rs`/`emit.rs` the
//! computations and instructions, `attributes.rs` and `ops*.rs` each operation, `shardy*.rs`
//! Shardy's shardings, `hlo_text.rs` the printing, `read.rs` the entry point. The readable
//! reference of every rule here is tests/stablehlo_reference (the test oracle, byte for byte).

pub(crate) mod attributes;
pub(crate) mod emit;
pub(crate) mod emit_funcs;
pub(crate) mod error;
pub(crate) mod hlo_text;
pub(crate) mod lines;
pub(crate) mod locations;
pub(crate) mod mlir_types;
pub(crate) mod numbers;
pub(crate) mod ops;
pub(crate) mod ops_array;
pub(crate) mod ops_chlo;
pub(crate) mod ops_custom_call;
pub(crate) mod ops_manual;
pub(crate) mod ops_numeric;
pub(crate) mod ops_parallel;
pub(crate) mod ops_regions;
pub(crate) mod ops_shardy;
pub(crate) mod read;
pub(crate) mod shardy;
pub(crate) mod shardy_meshes;
pub(crate) mod shardy_tiles;
pub(crate) mod signature;
pub(crate) mod statements;
pub(crate) mod strip_loc;
pub(crate) mod structure;
pub(crate) mod structure_lines;
pub(crate) mod text;
pub(crate) mod values;
