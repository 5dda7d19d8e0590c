//! The matcher's phases, one file each (as OpenXLA's hlo_diff has one matcher per file), each
//! a method of `Mappings` (mappings.rs) that pairs only instructions still free. The order they
//! run in is `matcher::PHASES`.

pub(crate) mod bottom_up;
pub(crate) mod exact;
pub(crate) mod follow_params;
pub(crate) mod outputs;
pub(crate) mod outputs_anchored;
pub(crate) mod outputs_context;
pub(crate) mod outputs_exact;
pub(crate) mod parameters;
pub(crate) mod top_down;
