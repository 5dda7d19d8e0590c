//! The comparison's walks over matched pairs (`xlagraph.diagnose`'s compiled half), on the two
//! computations' handles (`canon/handle.rs`) and the matcher's pairs.

pub(crate) mod changes;
pub(crate) mod pair_edits;
pub(crate) mod reader_votes;
