//! What Python calls to read a module: the entry points and the canonical form as Python's types.

pub(crate) mod canonical_form;
pub(crate) mod parse_hlo;
