//! Reading HLO text (`xlagraph.parse`'s compiled half): the module's text into the reader's
//! records (`text.rs`), with XLA's grammar and its checks, and those records built as the Python
//! IR (`ir_build.rs`, `lazy_instructions.rs`).

pub(crate) mod attr_values;
pub(crate) mod attrs;
pub(crate) mod checks;
pub(crate) mod comments;
pub(crate) mod element_types;
pub(crate) mod implied;
pub(crate) mod ir_build;
pub(crate) mod lazy_instructions;
pub(crate) mod line_map;
pub(crate) mod literal;
pub(crate) mod literal_values;
pub(crate) mod notes;
pub(crate) mod opcodes;
pub(crate) mod parser;
pub(crate) mod parser_attributes;
pub(crate) mod parser_computation;
pub(crate) mod parser_instruction;
pub(crate) mod parser_operands;
pub(crate) mod read;
pub(crate) mod scan;
pub(crate) mod semantics;
pub(crate) mod shape;
pub(crate) mod stack;
pub(crate) mod stablehlo;
pub(crate) mod text;
