//! Operations with an HLO instruction of their own (issue 38) as XLA's export (mhlo_to_hlo)
//! writes them: `fft(x), fft_type=FFT, fft_length={4}`; `rng(a, b), distribution=rng_uniform`
//! (HLO's rng takes its shape from the result: the shape operand is dropped); `cholesky(a),
//! lower=true`; `triangular-solve(a, b), left_side=true, lower=true, unit_diagonal=true,
//! transpose_a=NO_TRANSPOSE` (each flag printed only when true, `transpose_a` always);
//! `batch-norm-inference(...), epsilon=0.001, feature_index=1` (and `-training`, `-grad`);
//! `map(a, b), dimensions={0,1}, to_apply=...`; the legacy `broadcast(x), dimensions={1,2}` (the
//! new dimensions first). The pretty form and the generic one are both read.

use crate::parse::stablehlo::attributes::{braces, either, enum_, ints, lookups, one, Handler, Parsed};
use crate::parse::stablehlo::emit::Emitter;
use crate::parse::stablehlo::error::{at, index_error, R};
use crate::parse::stablehlo::mlir_types::dims_of;
use crate::parse::stablehlo::numbers::{g6, py_float};
use crate::parse::stablehlo::ops_regions::reducer0;
use crate::parse::stablehlo::structure::Op;
use crate::parse::stablehlo::values::{Comp, Value};

pub(crate) fn numeric_handler(short: &str) -> Option<Handler> {
    Some(match short {
        "fft" => fft,
        "rng" => rng,
        "cholesky" => cholesky,
        "triangular_solve" => triangular_solve,
        "batch_norm_inference" => |em, c, op, p| batch_norm(em, c, op, p, "batch-norm-inference"),
        "batch_norm_training" => |em, c, op, p| batch_norm(em, c, op, p, "batch-norm-training"),
        "batch_norm_grad" => |em, c, op, p| batch_norm(em, c, op, p, "batch-norm-grad"),
        "map" => map,
        "broadcast" => broadcast,
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

fn batch_norm(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed, opcode: &str) -> R<Value> {
    let epsilon = g6(py_float(p.attrs.at("epsilon")?.split(" : ").next().unwrap_or(""))?);
    let Some(&index) = ints(&p.attrs.at("feature_index")?).first() else { return index_error() };
    one(em, comp, op, p, opcode, vec![format!("epsilon={epsilon}"), format!("feature_index={index}")], None)
}

fn map(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let dims = braces(&ints(&p.attrs.or("dimensions", "")));
    let body = reducer0(em, op)?;
    one(em, comp, op, p, "map", vec![format!("dimensions={dims}"), format!("to_apply={body}")], None)
}

fn broadcast(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let Some(r) = p.operands.first() else { return index_error() };
    let operand = em.lookup(comp, r, op.line)?;
    let new = ints(&either(p, "broadcast_sizes", "sizes", "")).len() as i64;
    let dims: Vec<i64> = (new..new + dims_of(&operand.shape)?.len() as i64).collect();
    one(em, comp, op, p, "broadcast", vec![format!("dimensions={}", braces(&dims))], Some(vec![operand]))
}
