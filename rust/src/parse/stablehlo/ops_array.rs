//! StableHLO's array operations whose HLO attributes are their own: `constant` (its literal),
//! `broadcast_in_dim`, `transpose`/`reverse`/`concatenate`, `iota`, slices, `pad`, `compare`,
//! `dot_general`/`dot`, tuples, `optimization_barrier`, `reduce_precision` (ops.rs routes to them).

use crate::parse::stablehlo::attributes::{lookups, either, braces, enum_, first, ints, one, Parsed};
use crate::parse::stablehlo::emit::{Emitter, LITERAL_BUDGET};
use crate::parse::stablehlo::error::{at, index_error, type_err, zip_strict, Error, R};
use crate::parse::stablehlo::mlir_types::{dims_of, element_of, hlo_literal, hlo_shape};
use crate::parse::stablehlo::numbers::py_int;
use crate::parse::stablehlo::structure::Op;
use crate::parse::stablehlo::text::{comma, head, inner, matching, partition, strip};
use crate::parse::stablehlo::values::{attr_dict, Comp, Value};

pub(crate) fn constant(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    // the custom form's `dense<...> : type`, or the generic form's `<{value = dense<...> : type}>`
    let value = if p.attrs.has("value") { Some(p.attrs.at("value")?) } else { None };
    let text = strip(value.as_deref().unwrap_or(&p.body));
    if text.starts_with("dense_resource") {
        return type_err("dense_resource constants (data kept outside the text) are not read");
    }
    if !text.starts_with("dense<") {
        return type_err(format!("constant {} is not read", head(text, 40)));
    }
    let shape = out0(p)?;
    let end = matching(text, 5).unwrap_or(text.len().saturating_sub(1));
    let literal = hlo_literal(text.get(6..end.max(6)).unwrap_or(""), &shape)?;
    em.literal_budget -= dims_of(&shape)?.iter().fold(1i128, |a, &d| a.saturating_mul(d.max(0) as i128));
    if em.literal_budget < 0 {
        return type_err(format!("constants of more than {LITERAL_BUDGET} elements in all are not read"));
    }
    let v = em.inst(comp, "constant", &shape, &[], vec![], op.line, &op.loc, "");
    let last = comp.last();
    last.opcode = format!("constant({literal})").into();
    last.operands.clear();
    Ok(v)
}

pub(crate) fn broadcast(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let mut dims = ints(&either(p, "dims", "broadcast_dimensions", "[]"));
    let Some(r) = p.operands.first() else { return index_error() };
    let mut operand = em.lookup(comp, r, op.line)?;
    let out = dims_of(&out0(p)?)?;
    let src = dims_of(&operand.shape)?;
    let mut keep = Vec::new();
    for (k, &d) in src.iter().enumerate() {
        let drop = d == 1 && py_index(&out, py_index(&dims, k as i64)?)? != 1;
        if !drop {
            keep.push(k);
        }
    }
    if keep.len() != src.len() {
        let sizes: Vec<String> = keep.iter().map(|&k| src[k].to_string()).collect();
        let shape = format!("{}[{}]", element_of(&operand.shape)?, sizes.join(","));
        operand = em.inst(comp, "reshape", &shape, &[&operand], vec![], op.line, &op.loc, "");
        let kept: Vec<_> =
            keep.iter().map(|&k| py_index(&dims, k as i64)).collect::<Result<_, _>>()?;
        dims = kept;
    }
    let shape = out0(p)?;
    Ok(em.inst(comp, "broadcast", &shape, &[&operand], vec![format!("dimensions={}", braces(&dims))], op.line, &op.loc, ""))
}

/// An operation whose one attribute is `dimensions={...}`, read from the first of `keys` present.
pub(crate) fn dims_op(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed, opcode: &str, keys: [&str; 2]) -> R<Value> {
    let mut value = None;
    for k in keys {
        if p.attrs.has(k) {
            value = Some(p.attrs.at(k)?);
            break;
        }
    }
    let Some(value) = value else { return at(format!("{} without {}", op.name, keys[0]), op.line) };
    one(em, comp, op, p, opcode, vec![format!("dimensions={}", braces(&ints(&value)))], None)
}

pub(crate) fn iota(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let dim = first(&ints(&either(p, "dim", "iota_dimension", "")))?;
    one(em, comp, op, p, "iota", vec![format!("iota_dimension={dim}")], None)
}

/// `\[([^\]]*)\]\s*$` searched: the last bracketed list, at the end.
pub(crate) fn last_brackets(body: &str) -> Option<&str> {
    let t = body.trim_end_matches(crate::parse::stablehlo::text::is_space);
    let q = t.strip_suffix(']')?.len();
    let from = t[..q].rfind(']').map_or(0, |k| k + 1);
    let open = t[from..q].find('[')? + from;
    Some(&t[open + 1..q])
}

pub(crate) fn slice(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let (mut starts, mut limits, mut strides): (Vec<i128>, Vec<i128>, Vec<i128>) = (vec![], vec![], vec![]);
    if p.attrs.has("start_indices") {
        starts = ints(&p.attrs.at("start_indices")?).into_iter().map(i128::from).collect();
        limits = ints(&p.attrs.at("limit_indices")?).into_iter().map(i128::from).collect();
        strides = ints(&p.attrs.or("strides", "")).into_iter().map(i128::from).collect();
        if strides.is_empty() {
            strides = vec![1; starts.len()];
        }
    } else {
        let Some(ranges) = last_brackets(&p.body) else { return at("slice without its ranges", op.line) };
        for r in comma(ranges) {
            let nums: Vec<_> =
                r.split(':').map(|x| py_int(x, 10)).collect::<Result<_, _>>()?;
            starts.push(nums[0]);
            let Some(&b) = nums.get(1) else { return index_error() };
            limits.push(b);
            strides.push(nums.get(2).copied().unwrap_or(1));
        }
    }
    let strided = strides.iter().any(|&x| x != 1);
    let n = starts.len().min(limits.len()).min(strides.len());
    let mut parts = Vec::new();
    for k in 0..n {
        let (a, b, x) = (starts[k], limits[k], strides[k]);
        parts.push(if strided { format!("[{a}:{b}:{x}]") } else { format!("[{a}:{b}]") });
    }
    zip_strict(&[starts.len(), limits.len(), strides.len()])?;
    one(em, comp, op, p, "slice", vec![format!("slice={{{}}}", parts.join(", "))], None)
}

pub(crate) fn dynamic_slice(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let sizes = ints(&either(p, "sizes", "slice_sizes", ""));
    one(em, comp, op, p, "dynamic-slice", vec![format!("dynamic_slice_sizes={}", braces(&sizes))], None)
}

pub(crate) fn pad(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let low = ints(&either(p, "low", "edge_padding_low", ""));
    let high = ints(&either(p, "high", "edge_padding_high", ""));
    let mut interior = ints(&either(p, "interior", "interior_padding", ""));
    if interior.is_empty() {
        interior = vec![0; low.len()];
    }
    let inner_ = interior.iter().any(|&x| x != 0);
    zip_strict(&[low.len(), high.len(), interior.len()])?;
    let pads: Vec<String> = (0..low.len())
        .map(|k| {
            let mut s = format!("{}_{}", low[k], high[k]);
            if inner_ {
                s.push_str(&format!("_{}", interior[k]));
            }
            s
        })
        .collect();
    one(em, comp, op, p, "pad", vec![format!("padding={}", pads.join("x"))], None)
}

pub(crate) fn compare(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let body = p.body.clone();
    let words = comma(&body);
    let direction = enum_(&p.attrs.or("comparison_direction", words.first().copied().unwrap_or("")));
    let kind_default = if words.len() > 3 { words[words.len() - 1] } else { "" };
    let kind = enum_(&p.attrs.or("compare_type", kind_default));
    let mut attrs = vec![format!("direction={direction}")];
    let Some(t) = p.ins.first() else { return index_error() };
    let element = element_of(&hlo_shape(t)?)?.to_string();
    let default = match element.chars().next() {
        Some('s') => "SIGNED",
        Some('u' | 'p') => "UNSIGNED",
        Some(_) => "FLOAT",
        None => return Err(Error::Py("IndexError", "string index out of range".into())),
    };
    if !kind.is_empty() && kind != "NOTYPE" && kind != default {
        attrs.push(format!("type={kind}"));
    }
    one(em, comp, op, p, "compare", attrs, None)
}

pub(crate) fn pair(value: &str) -> (Vec<i64>, Vec<i64>) {
    let (left, _, right) = partition(value, " x ");
    (ints(left), ints(right))
}

pub(crate) fn precision(p: &mut Parsed) -> Vec<String> {
    let value = either(p, "precision", "precision_config", "");
    let words: Vec<String> = if value.starts_with('[') {
        comma(inner(strip(&value))).iter().map(|w| enum_(w).to_lowercase()).collect()
    } else {
        Vec::new()
    };
    if words.iter().any(|w| w != "default") {
        vec![format!("operand_precision={{{}}}", words.join(","))]
    } else {
        Vec::new()
    }
}

pub(crate) fn dot_general(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let (lb, rb, lc, rc);
    if p.attrs.has("dot_dimension_numbers") {
        let v = p.attrs.at("dot_dimension_numbers")?;
        let Some((_, after)) = v.split_once('<') else { return index_error() };
        let inside = after.rsplit_once('>').map_or(after, |(a, _)| a);
        let d = attr_dict(&format!("{{{inside}}}"));
        let g = |k: &str| ints(d.get(k).unwrap_or(""));
        (lb, rb) = (g("lhs_batching_dimensions"), g("rhs_batching_dimensions"));
        (lc, rc) = (g("lhs_contracting_dimensions"), g("rhs_contracting_dimensions"));
    } else {
        (lb, rb) = pair(&p.attrs.or("batching_dims", "[] x []"));
        (lc, rc) = pair(&p.attrs.or("contracting_dims", "[] x []"));
    }
    let batch = !lb.is_empty() || !rb.is_empty();
    let mut attrs = Vec::new();
    if batch {
        attrs.push(format!("lhs_batch_dims={}", braces(&lb)));
    }
    attrs.push(format!("lhs_contracting_dims={}", braces(&lc)));
    if batch {
        attrs.push(format!("rhs_batch_dims={}", braces(&rb)));
    }
    attrs.push(format!("rhs_contracting_dims={}", braces(&rc)));
    attrs.extend(precision(p));
    one(em, comp, op, p, "dot", attrs, None)
}

pub(crate) fn dot(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let Some(t) = p.ins.first() else { return index_error() };
    let rank = dims_of(&hlo_shape(t)?)?.len() as i64;
    let mut attrs = vec![format!("lhs_contracting_dims={{{}}}", rank - 1), "rhs_contracting_dims={0}".to_string()];
    attrs.extend(precision(p));
    one(em, comp, op, p, "dot", attrs, None)
}

/// `re.findall(r"\[(\d+)\]", s)[0]`
pub(crate) fn bracketed_number(s: &str) -> Option<&str> {
    for (k, _) in s.match_indices('[') {
        let r = &s[k + 1..];
        let n = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
        if n > 0 && r[n..].starts_with(']') {
            return Some(&r[..n]);
        }
    }
    None
}

pub(crate) fn get_tuple_element(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let default = if p.body.contains('[') {
        match bracketed_number(&p.body) {
            Some(d) => d.to_string(),
            None => return index_error(),
        }
    } else {
        String::new()
    };
    let k = first(&ints(&p.attrs.or("index", &default)))?;
    one(em, comp, op, p, "get-tuple-element", vec![format!("index={k}")], None)
}

pub(crate) fn tuple(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let shape = out0(p)?;
    let operands = lookups(em, comp, &p.operands, op.line)?;
    let refs: Vec<&Value> = operands.iter().collect();
    Ok(em.inst(comp, "tuple", &shape, &refs, vec![], op.line, &op.loc, ""))
}

pub(crate) fn optimization_barrier(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let operands = lookups(em, comp, &p.operands, op.line)?;
    let refs: Vec<&Value> = operands.iter().collect();
    let shapes: Vec<String> = operands.iter().map(|v| v.shape.to_string()).collect();
    let whole = em.inst(comp, "tuple", &format!("({})", shapes.join(", ")), &refs, vec![], op.line, &op.loc, "");
    let mut value = em.inst(comp, "opt-barrier", &whole.shape.clone(), &[&whole], vec![], op.line, &op.loc, "");
    value.elements = Some(std::rc::Rc::new(shapes));
    Ok(value)
}

pub(crate) fn reduce_precision(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let text = either(p, "exponent_bits", "format", "");
    let both = ints(&text.replace(['e', 'm'], " "));
    let (e, m) = if p.attrs.has("format") {
        (first(&both)?, *both.get(1).ok_or(Error::Py("IndexError", "list index out of range".into()))?)
    } else {
        (first(&ints(&p.attrs.at("exponent_bits")?))?, first(&ints(&p.attrs.at("mantissa_bits")?))?)
    };
    one(em, comp, op, p, "reduce-precision", vec![format!("exponent_bits={e}"), format!("mantissa_bits={m}")], None)
}

/// `xs[i]` of a Python list (negative from the end).
pub(crate) fn py_index<T: Copy>(xs: &[T], i: i64) -> R<T> {
    let k = if i < 0 { i + xs.len() as i64 } else { i };
    if k < 0 || k as usize >= xs.len() {
        return index_error();
    }
    Ok(xs[k as usize])
}

pub(crate) fn out0(p: &Parsed) -> R<String> {
    match p.outs.first() {
        Some(s) => Ok(s.clone()),
        None => index_error(),
    }
}
