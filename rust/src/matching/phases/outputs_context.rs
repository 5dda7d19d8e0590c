//! `match._match_outputs_context`: outputs whose whole data-flow context agrees (the caller's
//! candidate slots, from the correspondence), paired where both are still free.

use crate::matching::mappings::{Mappings, OUTPUTS_CONTEXT};

impl Mappings<'_> {
    /// `context`: the output slots `match._context_pairs` gives, in its order.
    pub(crate) fn outputs_context(&mut self, context: &[(u32, u32)]) {
        let (l, r) = (self.l, self.r);
        for &(i, j) in context {
            self.add(
                l.outputs[i as usize],
                r.outputs[j as usize],
                OUTPUTS_CONTEXT,
            );
        }
    }
}
