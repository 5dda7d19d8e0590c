//! What Python calls to read a module: the entry points (text: parse_hlo.rs; a module built in
//! Python: from_python.rs) and the canonical form as Python's types; the canonical form's
//! attribute rules for the diagnosis and rendering (attributes.rs).

pub(crate) mod attributes;
pub(crate) mod canonical_form;
pub(crate) mod from_python;
pub(crate) mod parse_hlo;
pub(crate) mod stablehlo;
