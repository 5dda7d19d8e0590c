//! Numeric operations with an HLO instruction of their own (issue 38): `fft`, `rng`, `cholesky`,
//! `triangular_solve`, as XLA's export (mhlo_to_hlo) writes them: `fft(x), fft_type=FFT,
//! fft_length={4}`; `rng(a, b), distribution=rng_uniform` (HLO's rng takes its shape from the
//! result: the shape operand is dropped); `cholesky(a), lower=true`; `triangular-solve(a, b),
//! left_side=true, lower=true, unit_diagonal=true, transpose_a=NO_TRANSPOSE` (each flag printed
//! only when true, `transpose_a` always). The pretty form and the generic one are both read.

use crate::parse::stablehlo::attributes::{braces, enum_, ints, one, Handler, Parsed};
use crate::parse::stablehlo::emit::Emitter;
use crate::parse::stablehlo::error::{at, R};
use crate::parse::stablehlo::ops::{either, lookups};
use crate::parse::stablehlo::structure::Op;
use crate::parse::stablehlo::values::{Comp, Value};

pub(crate) fn numeric_handler(short: &str) -> Option<Handler> {
    Some(match short {
        "fft" => fft,
        "rng" => rng,
        "cholesky" => cholesky,
        "triangular_solve" => triangular_solve,
        _ => return None,
    })
}

fn fft(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let kind = enum_(&either(p, "type", "fft_type", ""));
    let length = ints(&either(p, "length", "fft_length", ""));
    one(em, comp, op, p, "fft", vec![format!("fft_type={kind}"), format!("fft_length={}", braces(&length))], None)
}

fn rng(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    if p.operands.len() != 3 {
        return at(format!("{}: expected three operands (a, b, shape)", op.name), op.line);
    }
    let distribution = enum_(&either(p, "distribution", "rng_distribution", "")).to_lowercase();
    let mut operands = lookups(em, comp, &p.operands, op.line)?;
    operands.truncate(2);
    one(em, comp, op, p, "rng", vec![format!("distribution=rng_{distribution}")], Some(operands))
}

fn flag(p: &mut Parsed, key: &str) -> Option<String> {
    (p.attrs.or(key, "false") == "true").then(|| format!("{key}=true"))
}

fn cholesky(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let attrs = flag(p, "lower").into_iter().collect();
    one(em, comp, op, p, "cholesky", attrs, None)
}

fn triangular_solve(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let mut attrs: Vec<String> = ["left_side", "lower", "unit_diagonal"].iter().filter_map(|k| flag(p, k)).collect();
    attrs.push(format!("transpose_a={}", enum_(&p.attrs.or("transpose_a", "NO_TRANSPOSE"))));
    one(em, comp, op, p, "triangular-solve", attrs, None)
}
