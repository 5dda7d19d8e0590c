//! `chlo` operations. XLA's export writes `chlo.erf` as HLO's `erf` and `chlo.top_k` as `topk`
//! (`largest=true`); the other elementwise ones, which it expands into many instructions chosen
//! by XLA's version and the element type, this reader writes as one `custom-call` whose target
//! names the operation (`custom_call_target="chlo.erf_inv"`): an elementwise chlo operation is a
//! function of its operands and result type alone, so a change of operation is never missed. The
//! chlo operations with attributes of their own (`broadcast_*`, `constant_like`, `ragged_dot`,
//! ...) are refused by name.

use crate::parse::stablehlo::attributes::{ints, one, Handler, Parsed};
use crate::parse::stablehlo::emit::Emitter;
use crate::parse::stablehlo::error::{at, index_error, R};
use crate::parse::stablehlo::structure::Op;
use crate::parse::stablehlo::values::{Comp, Value};

/// Elementwise chlo operations without attributes that XLA's export expands (chlo_ops.td).
const OPAQUE: [&str; 22] = [
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "bessel_i1e",
    "conj",
    "cosh",
    "sinh",
    "tan",
    "digamma",
    "erf_inv",
    "erfc",
    "is_inf",
    "is_neg_inf",
    "is_pos_inf",
    "lgamma",
    "square",
    "next_after",
    "polygamma",
    "zeta",
];

pub(crate) fn chlo_handler(short: &str) -> Option<Handler> {
    match short {
        "erf" => Some(erf),
        "top_k" => Some(top_k),
        s if OPAQUE.contains(&s) => Some(opaque),
        _ => None,
    }
}

fn erf(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    one(em, comp, op, p, "erf", vec![], None)
}

fn top_k(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    if p.outs.len() != 2 || !p.attrs.has("k") {
        return at(
            "chlo.top_k: expected `k` and two results (values, indices)",
            op.line,
        );
    }
    let Some(&k) = ints(&p.attrs.at("k")?).first() else {
        return index_error();
    };
    one(
        em,
        comp,
        op,
        p,
        "topk",
        vec![format!("k={k}"), "largest=true".into()],
        None,
    )
}

fn opaque(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let target = format!("custom_call_target=\"{}\"", op.name);
    one(em, comp, op, p, "custom-call", vec![target], None)
}
