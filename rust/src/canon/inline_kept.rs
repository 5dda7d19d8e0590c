//! The calls XLA's CallInliner leaves alone, which stay a `call` (`inlinable`): a call with a
//! backend config, one whose `inlineable` frontend attribute is not "true", one in an async computation, and one of
//! a shard map's body (kept under Shardy; the dump does not say whether Shardy ran, so such
//! calls stay as written). A call with any other frontend attribute than those and a
//! composite's (host compute `_xla_compute_type`, stream annotations, `MUST_FUSE`, which XLA
//! copies onto the inlined body) also stays: passes around the inliner read them, and a wrong
//! `identical` is the one answer never to give.

use std::collections::HashSet;

use crate::canon::attributes::frontend_entries;
use crate::parse::text::{Inst, ModuleText};

/// `CallInliner::IsInlineableCallOp` for what a dump shows (see the module's comment).
pub(crate) fn inlinable(ins: &Inst) -> bool {
    let mut inlineable = true;
    for (key, value) in &ins.attrs {
        match *key {
            "backend_config" => {
                if !value.trim().trim_matches('"').is_empty() {
                    return false;
                }
            }
            "frontend_attributes" => {
                for entry in frontend_entries(value) {
                    let (k, v) = entry.split_once('=').unwrap_or((entry, ""));
                    match k.trim() {
                        "inlineable" => inlineable = v.trim().trim_matches('"') == "true",
                        // XLA drops a composite's attributes as it inlines it.
                        k if k.starts_with("composite.") => {}
                        _ => return false,
                    }
                }
            }
            _ => {}
        }
    }
    let callee = ins.called[0].as_ref();
    inlineable
        && !callee.contains("shmap_body")
        && !callee.contains("xla.sdy.manual_computation_body")
}

/// The computations an async instruction runs (`IsAsyncComputation`): calls in them stay.
pub(crate) fn async_computations<'m>(module: &'m ModuleText) -> HashSet<&'m str> {
    module
        .comps
        .iter()
        .flat_map(|c| &c.insts)
        .filter(|ins| ins.opcode.starts_with("async-"))
        .flat_map(|ins| ins.called.iter().map(|n| n.as_ref()))
        .collect()
}
