//! `stablehlo.custom_call` as XLA's export writes it: the target, `api_version` (a dictionary
//! `mhlo.backend_config` is the typed FFI's), `backend_config`, side effect, operand layouts
//! (`operand_layout_constraints`), result layouts (in the result's shape) and
//! `output_to_operand_aliasing`.

use crate::parse::stablehlo::attributes::{braces, ints, numbers, one, Parsed};
use crate::parse::stablehlo::emit::Emitter;
use crate::parse::stablehlo::error::{at, index_error, zip_strict, R};
use crate::parse::stablehlo::mlir_types::{dims_of, hlo_shape};
use crate::parse::stablehlo::structure::Op;
use crate::parse::stablehlo::structure_lines::symbol_len;
use crate::parse::stablehlo::text::{comma, head, inner, lstrip, strip};
use crate::parse::stablehlo::values::{attr_dict, quote, unquote, Comp, Value};

/// `f32[4,4]` and `dense<[0, 1]> : tensor<2xindex>` -> `f32[4,4]{0,1}` (none for a scalar).
fn with_layout(shape: &str, layout: &str) -> R<String> {
    let minor_to_major = ints(&layout.split(" : ").next().unwrap_or("").replace("dense<", ""));
    if minor_to_major.len() != dims_of(shape)?.len() {
        return at(format!("layout {} is not of {shape}", head(layout, 40)), 0);
    }
    Ok(if minor_to_major.is_empty() { shape.to_string() } else { format!("{shape}{}", braces(&minor_to_major)) })
}

fn api(version: &str) -> &'static str {
    match version {
        "2" => "API_VERSION_STATUS_RETURNING",
        "3" => "API_VERSION_STATUS_RETURNING_UNIFIED",
        "4" => "API_VERSION_TYPED_FFI",
        _ => "",
    }
}

fn listed(p: &mut Parsed, key: &str) -> Vec<String> {
    let v = p.attrs.or(key, "[]");
    comma(inner(strip(&v))).into_iter().map(String::from).collect()
}

pub(crate) fn custom_call(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let t = lstrip(&op.text);
    let target = match t.strip_prefix('@').and_then(symbol_len) {
        Some(n) => t[1..1 + n].trim_matches('"').to_string(),
        None => unquote(&p.attrs.or("call_target_name", "")),
    };
    if target.is_empty() {
        return at("custom_call without a target", op.line);
    }
    let mut attrs = vec![format!("custom_call_target=\"{target}\"")];
    if p.attrs.get("has_side_effect") == Some("true") {
        attrs.push("custom_call_has_side_effect=true".into());
    }
    let config = p.attrs.or("backend_config", "");
    let typed = p.attrs.or("mhlo.backend_config", "");
    if typed.starts_with('{') {
        attrs.push(format!("backend_config={typed}"));
    } else if (config.starts_with('"') && !unquote(&config).is_empty()) || config.starts_with('{') {
        attrs.push(format!("backend_config={config}"));
    }
    let version = p.attrs.or("api_version", if typed.is_empty() { "1" } else { "4" });
    let version = strip(version.split(':').next().unwrap_or(""));
    if !api(version).is_empty() {
        attrs.push(format!("api_version={}", api(version)));
    }
    let called = p.attrs.or("called_computations", "[]");
    if called != "[]" && !called.is_empty() {
        return at("custom_call with called computations is not read", op.line);
    }
    let layouts = listed(p, "operand_layouts");
    if !layouts.is_empty() {
        let mut shapes = Vec::new();
        for (t, lay) in p.ins.iter().zip(&layouts) {
            shapes.push(with_layout(&hlo_shape(t)?, lay)?);
        }
        zip_strict(&[p.ins.len(), layouts.len()])?;
        attrs.push(format!("operand_layout_constraints={{{}}}", shapes.join(", ")));
    }
    let aliases = listed(p, "output_operand_aliases");
    if !aliases.is_empty() {
        let mut pairs = Vec::new();
        for alias in &aliases {
            let n = numbers(alias);
            let out = ints(n.get("output_tuple_indices").unwrap_or("[]"));
            let Some(&operand) = ints(n.get("operand_index").unwrap_or("0")).first() else { return index_error() };
            let tuple = ints(n.get("operand_tuple_indices").unwrap_or("[]"));
            pairs.push(format!("{}: ({operand}, {})", braces(&out), braces(&tuple)));
        }
        attrs.push(format!("output_to_operand_aliasing={{{}}}", pairs.join(", ")));
    }
    let results = listed(p, "result_layouts");
    if !results.is_empty() {
        let mut outs = Vec::new();
        for (s, lay) in p.outs.iter().zip(&results) {
            outs.push(with_layout(s, lay)?);
        }
        zip_strict(&[p.outs.len(), results.len()])?;
        p.outs = outs;
    }
    one(em, comp, op, p, "custom-call", attrs, None)
}

/// `stablehlo.composite "name" %x {composite_attributes = {...}, decomposition = @f, version = 2 :
/// i32}` as XLA's export writes it: a call of the decomposition marked `is_composite=true`, the
/// name, version and attributes as frontend attributes (`composite.name="..."`).
pub(crate) fn composite(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let quoted = lstrip(&op.text).strip_prefix('"').and_then(|r| r.find('"').map(|k| r[..k].to_string()));
    let name = match quoted {
        Some(n) => n,
        None => unquote(&p.attrs.or("name", "")),
    };
    let decomposition = p.attrs.or("decomposition", "");
    let t = lstrip(&decomposition);
    let target = t.strip_prefix('@').and_then(symbol_len).map(|n| t[1..1 + n].trim_matches('"').to_string());
    let Some(target) = target.filter(|_| !name.is_empty()) else {
        return at(format!("{}: expected a name and a decomposition", op.name), op.line);
    };
    let callee = em.func(&target, op.line)?;
    let version = ints(&p.attrs.or("version", "0")).first().copied().unwrap_or(0);
    let front = p.attrs.or("mhlo.frontend_attributes", "");
    let mut items: Vec<(String, String)> = if front.starts_with('{') { attr_dict(&front).0 } else { Vec::new() };
    items.push(("composite.attributes".into(), quote(&p.attrs.or("composite_attributes", "{}"))));
    items.push(("composite.name".into(), quote(&name)));
    items.push(("composite.version".into(), quote(&version.to_string())));
    let text: Vec<String> = items.iter().map(|(k, v)| format!("{k} = {v}")).collect();
    p.attrs.set("mhlo.frontend_attributes", format!("{{{}}}", text.join(", ")));
    one(em, comp, op, p, "call", vec![format!("to_apply={callee}"), "is_composite=true".into()], None)
}
