//! Shardy on operations, as XLA's export writes it: `sdy.sharding_constraint` -> the custom call
//! `Sharding` (the HLO sharding constraint), and an operation's `sdy.sharding` (one sharding per
//! result) -> its `sharding=` (a tuple's for several results); both keep the Shardy text in the
//! frontend attribute `xla.sdy.sharding`, and `sdy.sharding_rule` goes to
//! `xla.sdy.sharding_rule` (sdy_round_trip/export_shardy_attrs.cc); `sdy.manual_computation`
//! (`shard_map`) is ops_manual.rs's. The other `sdy` operations (`reshard`, ...) are refused by
//! name.

use crate::parse::stablehlo::attributes::{one, Attrs, Handler, Parsed};
use crate::parse::stablehlo::emit::{Emitter, SDY_FRONTEND};
use crate::parse::stablehlo::error::{at, R};
use crate::parse::stablehlo::ops_manual::manual_computation;
use crate::parse::stablehlo::shardy::tuple_sharding;
use crate::parse::stablehlo::structure::Op;
use crate::parse::stablehlo::text::{matching, strip};
use crate::parse::stablehlo::values::{Comp, Dict, Value};

const RULE_FRONTEND: &str = "xla.sdy.sharding_rule";

pub(crate) fn sdy_handler(short: &str) -> Option<Handler> {
    match short {
        "sharding_constraint" => Some(constraint as Handler),
        "manual_computation" => Some(manual_computation as Handler),
        _ => None,
    }
}

/// `sdy.sharding_constraint %x <@mesh, [...]>` (or its generic `<{sharding = ...}>`): the custom
/// call `Sharding`, with a side effect where the sharding has unreduced axes.
fn constraint(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let mut text = p.attrs.or("sharding", "");
    if text.is_empty() {
        let start = p.body.find("<@");
        let end = start.and_then(|s| matching(&p.body, s));
        let (Some(start), Some(end)) = (start, end) else {
            return at("sdy.sharding_constraint without its sharding", op.line);
        };
        text = p.body[start..end + 1].to_string();
        for key in ["replicated", "unreduced"] {
            p.attrs.get(key);
        }
    }
    let t = strip(&text);
    let per_value = format!(
        "#sdy.sharding_per_value<[{}]>",
        t.strip_prefix("#sdy.sharding").unwrap_or(t)
    );
    let (_, kept) = em.meshes.per_value(&per_value, op.line)?;
    p.attrs.set("sdy.sharding", per_value);
    let mut attrs = vec!["custom_call_target=\"Sharding\"".to_string()];
    if kept.contains("unreduced=") {
        attrs.push("custom_call_has_side_effect=true".into());
    }
    one(em, comp, op, p, "custom-call", attrs, None)
}

/// An operation's `sdy.sharding` as `sharding=...` ("" when it has none) and the frontend
/// attributes XLA's export adds for it and for its `sdy.sharding_rule`.
pub(crate) fn op_shardings(
    em: &mut Emitter,
    attrs: &mut Attrs,
    results: usize,
    line: usize,
) -> R<(String, Dict)> {
    let mut frontend = Dict::default();
    if attrs.has("sdy.sharding_rule") {
        frontend.set(RULE_FRONTEND.into(), attrs.at("sdy.sharding_rule")?);
    }
    if !attrs.has("sdy.sharding") {
        return Ok((String::new(), frontend));
    }
    if attrs.has("mhlo.sharding") {
        return at(
            "both mhlo.sharding and sdy.sharding on one operation: which is it?",
            line,
        );
    }
    let (shardings, text) = em.meshes.per_value(&attrs.at("sdy.sharding")?, line)?;
    if shardings.len() != results.max(1) && !(results == 0 && shardings.len() == 1) {
        return at(
            format!(
                "sdy.sharding has {} shardings for {results} results",
                shardings.len()
            ),
            line,
        );
    }
    frontend.set(SDY_FRONTEND.into(), text);
    let s = if results <= 1 {
        shardings[0].clone()
    } else {
        tuple_sharding(&shardings)
    };
    Ok((format!("sharding={s}"), frontend))
}
