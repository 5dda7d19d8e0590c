//! Shardy's `sdy.manual_computation` (what `jax.shard_map` lowers to), as XLA's export writes it
//! (xla/service/spmd/shardy/sdy_round_trip/shard_map_export.cc): the operands pass through the
//! custom call `xla.sdy.GlobalToLocalShape` (a tuple of the local shapes, and its elements, for
//! several), the body is the computation `xla.sdy.manual_computation_body.N` of one parameter per
//! block argument, `call`ed (`frontend_attributes={inlineable="false"}`, its elements too), and
//! its results pass through `xla.sdy.LocalToGlobalShape`; the two custom calls keep the
//! operation's shardings and manual axes as frontend attributes. The body reads only its block
//! arguments (MLIR's isolation: a value from outside is not defined where it is used); a manual
//! computation in it is one more. The printer's pretty form is read; one of no operands or
//! results, or with attributes of its own, is refused by name
//! (tests/stablehlo_reference/ops_manual.py's twin).

use std::rc::Rc;

use crate::parse::stablehlo::attributes::Parsed;
use crate::parse::stablehlo::emit::{Emitter, Shape};
use crate::parse::stablehlo::error::{at, R};
use crate::parse::stablehlo::mlir_types::hlo_shape;
use crate::parse::stablehlo::strip_loc::strip_loc;
use crate::parse::stablehlo::structure::Op;
use crate::parse::stablehlo::text::{comma, lstrip, matching, partition, strip};
use crate::parse::stablehlo::values::{quote, Comp, Value};

const NAME: &str = "sdy.manual_computation";
const INLINEABLE: &str = "frontend_attributes={inlineable=\"false\"}";

/// The bracketed value after `key` (from `start`) and the index after it.
fn after(line: usize, text: &str, key: &str, start: usize, opening: char) -> R<(String, usize)> {
    let found = text.get(start..).and_then(|t| t.find(key)).map(|k| k + start + key.len());
    let end = found.filter(|&j| text[j..].starts_with(opening)).and_then(|j| matching(text, j).map(|e| (j, e)));
    match end {
        Some((j, e)) => Ok((text[j..e + 1].to_string(), e + 1)),
        None => at(format!("{NAME} without its {} (its pretty form is read)", key.trim_end_matches('=')), line),
    }
}

fn tupled(em: &mut Emitter, comp: &mut Comp, mut value: Value, shapes: &[String], line: usize) -> R<Vec<Value>> {
    if shapes.len() == 1 {
        return Ok(vec![value]);
    }
    value.elements = Some(Rc::new(shapes.to_vec()));
    let out: Vec<_> =
        (0..shapes.len()).map(|k| em.element(comp, &value, k, line)).collect::<Result<_, _>>()?;
    Ok(out)
}

fn shape_of(shapes: &[String]) -> String {
    if shapes.len() == 1 {
        shapes[0].clone()
    } else {
        format!("({})", shapes.join(", "))
    }
}

pub(crate) fn manual_computation(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let line = op.line;
    let text = strip(&op.text).to_string();
    let Some(close) = (if text.starts_with('(') { matching(&text, 0) } else { None }) else {
        return at(format!("{NAME} without its operands (its pretty form is read)"), line);
    };
    let refs: Vec<String> = comma(&text[1..close]).into_iter().map(String::from).collect();
    let (in_text, k) = after(line, &text, "in_shardings=", close, '[')?;
    let (out_text, k) = after(line, &text, "out_shardings=", k, '[')?;
    let (axes, k) = after(line, &text, "manual_axes=", k, '{')?;
    let rest = lstrip(&text[k..]);
    let Some(end) = (if rest.starts_with('(') { matching(rest, 0) } else { None }) else {
        return at(format!("{NAME} without its body's arguments"), line);
    };
    let mut args = Vec::new();
    for arg in comma(&rest[1..end]) {
        let (name, _, type_) = partition(strip_loc(arg).0, ":");
        args.push((strip(name).to_string(), strip(type_).to_string()));
    }
    let tail = lstrip(&rest[end + 1..]);
    if !tail.starts_with("{}") || !lstrip(&tail[2..]).starts_with(':') {
        return at(format!("{NAME}: attributes beside its shardings and manual axes are not read"), line);
    }
    let keys: Vec<String> = p.attrs.dict.0.iter().map(|(k, _)| k.clone()).collect();
    for key in keys {
        p.attrs.get(&key); // all read above, from the text
    }
    if op.regions.len() != 1 {
        return at(format!("{NAME} without its one region"), line);
    }
    let region = &mut op.regions[0];
    region.args = args.clone();
    if let Some(last) = region.ops.last_mut().filter(|o| o.name == "sdy.return") {
        last.name = "stablehlo.return".into(); // the body's terminator, as a region's
    }
    if refs.is_empty() || p.outs.is_empty() {
        return at(format!("{NAME} of no operands or no results is not read"), line);
    }
    if args.len() != refs.len() {
        return at(format!("{NAME} has {} operands and {} body arguments", refs.len(), args.len()), line);
    }
    let (ins, in_kept) = em.meshes.per_value(&format!("#sdy.sharding_per_value<{in_text}>"), line)?;
    let (outs, out_kept) = em.meshes.per_value(&format!("#sdy.sharding_per_value<{out_text}>"), line)?;
    if ins.len() != refs.len() || outs.len() != p.outs.len() {
        return at(
            format!(
                "{NAME} has {} in_shardings for {} operands, {} out_shardings for {} results",
                ins.len(),
                refs.len(),
                outs.len(),
                p.outs.len()
            ),
            line,
        );
    }
    let manual = quote(&format!("#sdy<manual_axes{axes}>"));
    let operands: Vec<_> = refs.iter().map(|r| em.lookup(comp, r, line)).collect::<Result<_, _>>()?;
    let local_in: Vec<_> = args.iter().map(|(_, t)| hlo_shape(t)).collect::<Result<_, _>>()?;
    let loc = op.loc.clone();
    let refs_in: Vec<&Value> = operands.iter().collect();
    let g2l = em.inst(
        comp,
        "custom-call",
        &shape_of(&local_in),
        &refs_in,
        vec![
            "custom_call_target=\"xla.sdy.GlobalToLocalShape\"".into(),
            "custom_call_has_side_effect=true".into(),
            format!("frontend_attributes={{xla.sdy.in_shardings={},xla.sdy.manual_axes={manual}}}", quote(&in_kept)),
        ],
        line,
        &loc,
        "",
    );
    let locals = tupled(em, comp, g2l, &local_in, line)?;
    let params: Vec<Vec<(String, String)>> =
        args.iter().zip(&local_in).map(|((name, _), shape)| vec![(name.clone(), shape.clone())]).collect();
    let name = em.fresh("xla.sdy.manual_computation_body");
    let region = &mut op.regions[0];
    let (body, local_out) = em.computation(name, region.line, &params, &mut region.ops, Shape::default())?;
    if local_out.len() != p.outs.len() {
        return at(format!("{NAME} returns {} values for {} results", local_out.len(), p.outs.len()), line);
    }
    let refs_locals: Vec<&Value> = locals.iter().collect();
    let call = em.inst(
        comp,
        "call",
        &shape_of(&local_out),
        &refs_locals,
        vec![format!("to_apply={body}"), INLINEABLE.into()],
        line,
        &loc,
        "",
    );
    let mut results = vec![call.clone()];
    if local_out.len() > 1 {
        results.clear();
        for (k, shape) in local_out.iter().enumerate() {
            let attrs = vec![format!("index={k}"), INLINEABLE.into()];
            results.push(em.inst(comp, "get-tuple-element", shape, &[&call], attrs, line, &loc, ""));
        }
    }
    let refs_results: Vec<&Value> = results.iter().collect();
    let mut l2g = em.inst(
        comp,
        "custom-call",
        &shape_of(&p.outs),
        &refs_results,
        vec![
            "custom_call_target=\"xla.sdy.LocalToGlobalShape\"".into(),
            "custom_call_has_side_effect=true".into(),
            format!("frontend_attributes={{xla.sdy.manual_axes={manual},xla.sdy.out_shardings={}}}", quote(&out_kept)),
        ],
        line,
        &loc,
        "",
    );
    if p.outs.len() > 1 {
        l2g.elements = Some(Rc::new(p.outs.clone()));
    }
    Ok(l2g)
}
