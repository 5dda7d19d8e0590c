//! StableHLO operations -> HLO instructions: the op table (which HLO opcode each `stablehlo.*`
//! name is) and each operation's attributes as HLO prints them (xla/hlo/translate/mhlo_to_hlo and
//! hlo_instruction.cc's printer: `dimensions={1}`, `slice={[1:3]}`, `direction=LT`, ...).
//!
//! `chlo` is ops_chlo.rs's, Shardy's `sdy` ops_shardy.rs's. An operation not in the tables, and
//! every other dialect's (`shape`, `tensor`, `arith`), is refused by name: a guess would compare
//! wrongly.

use crate::parse::stablehlo::attributes::{lookups, either, braces, enum_, first, ints, one, parse, Handler, Parsed};
use crate::parse::stablehlo::emit::{Emitter, LITERAL_BUDGET};
use crate::parse::stablehlo::error::{at, index_error, type_err, zip_strict, Error, R};
use crate::parse::stablehlo::mlir_types::{dims_of, element_of, hlo_literal, hlo_shape};
use crate::parse::stablehlo::numbers::py_int;
use crate::parse::stablehlo::ops_chlo::chlo_handler;
use crate::parse::stablehlo::ops_custom_call::{composite, custom_call};
use crate::parse::stablehlo::ops_numeric::numeric_handler;
use crate::parse::stablehlo::ops_parallel::parallel_handler;
use crate::parse::stablehlo::ops_regions::region_handler;
use crate::parse::stablehlo::ops_shardy::{op_shardings, sdy_handler};
use crate::parse::stablehlo::structure::{symbol_len, Op};
use crate::parse::stablehlo::text::{comma, head, inner, lstrip, matching, partition, strip};
use crate::parse::stablehlo::values::{attr_dict, carry, unquote, Comp, Dict, Value};


/// Operations whose HLO instruction is the same operands under another name and no attributes.
fn simple(short: &str) -> Option<&'static str> {
    Some(match short {
        "abs" => "abs",
        "add" => "add",
        "and" => "and",
        "atan2" => "atan2",
        "cbrt" => "cbrt",
        "ceil" => "ceil",
        "clamp" => "clamp",
        "complex" => "complex",
        "cosine" => "cosine",
        "count_leading_zeros" => "count-leading-zeros",
        "divide" => "divide",
        "exponential" => "exponential",
        "exponential_minus_one" => "exponential-minus-one",
        "floor" => "floor",
        "imag" => "imag",
        "is_finite" => "is-finite",
        "log" => "log",
        "log_plus_one" => "log-plus-one",
        "logistic" => "logistic",
        "maximum" => "maximum",
        "minimum" => "minimum",
        "multiply" => "multiply",
        "negate" => "negate",
        "not" => "not",
        "or" => "or",
        "popcnt" => "popcnt",
        "power" => "power",
        "real" => "real",
        "remainder" => "remainder",
        "round_nearest_afz" => "round-nearest-afz",
        "round_nearest_even" => "round-nearest-even",
        "rsqrt" => "rsqrt",
        "select" => "select",
        "shift_left" => "shift-left",
        "shift_right_arithmetic" => "shift-right-arithmetic",
        "shift_right_logical" => "shift-right-logical",
        "sign" => "sign",
        "sine" => "sine",
        "sqrt" => "sqrt",
        "subtract" => "subtract",
        "tan" => "tan",
        "tanh" => "tanh",
        "xor" => "xor",
        "convert" => "convert",
        "reshape" => "reshape",
        "bitcast_convert" => "bitcast-convert",
        "dynamic_update_slice" => "dynamic-update-slice",
        "after_all" => "after-all",
        "replica_id" => "replica-id",
        "partition_id" => "partition-id",
        "create_token" => "after-all",
        _ => return None,
    })
}

fn handler(short: &str) -> Option<Handler> {
    Some(match short {
        "constant" => constant,
        "broadcast_in_dim" => broadcast,
        "transpose" => |em, c, op, p| dims_op(em, c, op, p, "transpose", ["dims", "permutation"]),
        "reverse" => |em, c, op, p| dims_op(em, c, op, p, "reverse", ["dims", "dimensions"]),
        "concatenate" => |em, c, op, p| dims_op(em, c, op, p, "concatenate", ["dim", "dimension"]),
        "iota" => iota,
        "slice" => slice,
        "dynamic_slice" => dynamic_slice,
        "pad" => pad,
        "compare" => compare,
        "dot_general" => dot_general,
        "dot" => dot,
        "get_tuple_element" => get_tuple_element,
        "tuple" => tuple,
        "optimization_barrier" => optimization_barrier,
        "reduce_precision" => reduce_precision,
        "custom_call" => custom_call,
        "composite" => composite,
        s => return region_handler(s).or_else(|| parallel_handler(s)).or_else(|| numeric_handler(s)),
    })
}

pub(crate) fn translate(em: &mut Emitter, comp: &mut Comp, op: &mut Op) -> R<()> {
    let (dialect, _, short) = partition(&op.name, ".");
    let std_ = dialect == "stablehlo" || dialect == "mhlo";
    let h: Handler = if op.name == "func.call" || op.name == "call" {
        call
    } else if std_ && simple(short).is_some() {
        simple_op
    } else if let Some(h) = (dialect == "chlo").then(|| chlo_handler(short)).flatten() {
        h
    } else if let Some(h) = std_.then(|| handler(short)).flatten() {
        h
    } else if let Some(h) = (dialect == "sdy").then(|| sdy_handler(short)).flatten() {
        h
    } else if dialect == "chlo" {
        return at(
            format!("{}: this chlo operation is not read (lower it: stablehlo-legalize-chlo)", op.name),
            op.line,
        );
    } else {
        return at(format!("operation {} is not read by xlagraph's StableHLO reader", op.name), op.line);
    };
    let result = match parse(op) {
        Ok(mut p) => h(em, comp, op, &mut p).map(|v| (p, v)),
        Err(e) => Err(e),
    };
    let (mut parsed, mut value) = match result {
        Ok(got) => got,
        Err(Error::Type(e)) => return at(format!("{}: {e}", op.name), op.line),
        Err(Error::Py(cls, e)) if matches!(cls, "ValueError" | "IndexError" | "KeyError") => {
            return at(format!("{}: malformed or unread form ({cls}: {e})", op.name), op.line);
        }
        Err(Error::Mesh(e)) => return at(format!("{}: malformed or unread form (MeshError: {e})", op.name), op.line),
        Err(e) => return Err(e),
    };
    if parsed.attrs.has("mhlo.sharding") {
        let s = unquote(&parsed.attrs.at("mhlo.sharding")?);
        comp.last().attr_first(format!("sharding={s}"));
    }
    let results: usize = op.results.iter().map(|(_, n)| *n).sum();
    let (sharding, sdy) = op_shardings(em, &mut parsed.attrs, results, op.line)?;
    if !sharding.is_empty() {
        comp.last().attr_first(sharding);
    }
    if parsed.attrs.has("xla_shape") && value.elements.is_none() {
        let s = unquote(&parsed.attrs.at("xla_shape")?);
        let s: std::rc::Rc<str> = s.into();
        comp.last().shape = s.clone();
        value.shape = s;
        parsed.attrs.get("result_layout");
    }
    let frontend = parsed.attrs.or("mhlo.frontend_attributes", "");
    let mut front = if frontend.starts_with('{') { attr_dict(&frontend) } else { Dict::default() };
    for (k, v) in sdy.0 {
        front.set(k, v);
    }
    let carried = carry(&parsed.attrs.unread(), &front);
    if !carried.is_empty() {
        comp.last().attrs.push(carried);
    }
    em.bind(comp, op, value)
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

fn simple_op(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let short = partition(&op.name, ".").2;
    one(em, comp, op, p, simple(short).expect("checked"), vec![], None)
}

fn call(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let symbol = |t: &str| -> Option<String> {
        let r = lstrip(t).strip_prefix('@')?;
        symbol_len(r).map(|n| r[..n].trim_matches('"').to_string())
    };
    let mut name = symbol(&op.text);
    if name.is_none() && p.attrs.has("callee") {
        name = symbol(&p.attrs.at("callee")?); // the generic form: `"func.call"(%x) <{callee = @f}>`
    }
    let Some(name) = name else { return at("call without a callee", op.line) };
    let callee = em.func(&name, op.line)?;
    if p.outs.len() == 1 {
        let operands = lookups(em, comp, &p.operands, op.line)?;
        let refs: Vec<&Value> = operands.iter().collect();
        return Ok(em.inst(comp, "call", &p.outs[0], &refs, vec![format!("to_apply={callee}")], op.line, &op.loc, ""));
    }
    one(em, comp, op, p, "call", vec![format!("to_apply={callee}")], None)
}

fn constant(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
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

fn broadcast(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
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
        let mut kept = Vec::new();
        for &k in &keep {
            kept.push(py_index(&dims, k as i64)?);
        }
        dims = kept;
    }
    let shape = out0(p)?;
    Ok(em.inst(comp, "broadcast", &shape, &[&operand], vec![format!("dimensions={}", braces(&dims))], op.line, &op.loc, ""))
}

/// An operation whose one attribute is `dimensions={...}`, read from the first of `keys` present.
fn dims_op(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed, opcode: &str, keys: [&str; 2]) -> R<Value> {
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

fn iota(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let dim = first(&ints(&either(p, "dim", "iota_dimension", "")))?;
    one(em, comp, op, p, "iota", vec![format!("iota_dimension={dim}")], None)
}

/// `\[([^\]]*)\]\s*$` searched: the last bracketed list, at the end.
fn last_brackets(body: &str) -> Option<&str> {
    let t = body.trim_end_matches(crate::parse::stablehlo::text::is_space);
    let q = t.strip_suffix(']')?.len();
    let from = t[..q].rfind(']').map_or(0, |k| k + 1);
    let open = t[from..q].find('[')? + from;
    Some(&t[open + 1..q])
}

fn slice(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
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
            let mut nums = Vec::new();
            for x in r.split(':') {
                nums.push(py_int(x, 10)?);
            }
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

fn dynamic_slice(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let sizes = ints(&either(p, "sizes", "slice_sizes", ""));
    one(em, comp, op, p, "dynamic-slice", vec![format!("dynamic_slice_sizes={}", braces(&sizes))], None)
}

fn pad(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
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

fn compare(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
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

fn pair(value: &str) -> (Vec<i64>, Vec<i64>) {
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

fn dot_general(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
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

fn dot(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let Some(t) = p.ins.first() else { return index_error() };
    let rank = dims_of(&hlo_shape(t)?)?.len() as i64;
    let mut attrs = vec![format!("lhs_contracting_dims={{{}}}", rank - 1), "rhs_contracting_dims={0}".to_string()];
    attrs.extend(precision(p));
    one(em, comp, op, p, "dot", attrs, None)
}

/// `re.findall(r"\[(\d+)\]", s)[0]`
fn bracketed_number(s: &str) -> Option<&str> {
    for (k, _) in s.match_indices('[') {
        let r = &s[k + 1..];
        let n = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
        if n > 0 && r[n..].starts_with(']') {
            return Some(&r[..n]);
        }
    }
    None
}

fn get_tuple_element(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
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

fn tuple(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let shape = out0(p)?;
    let operands = lookups(em, comp, &p.operands, op.line)?;
    let refs: Vec<&Value> = operands.iter().collect();
    Ok(em.inst(comp, "tuple", &shape, &refs, vec![], op.line, &op.loc, ""))
}

fn optimization_barrier(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let operands = lookups(em, comp, &p.operands, op.line)?;
    let refs: Vec<&Value> = operands.iter().collect();
    let shapes: Vec<String> = operands.iter().map(|v| v.shape.to_string()).collect();
    let whole = em.inst(comp, "tuple", &format!("({})", shapes.join(", ")), &refs, vec![], op.line, &op.loc, "");
    let mut value = em.inst(comp, "opt-barrier", &whole.shape.clone(), &[&whole], vec![], op.line, &op.loc, "");
    value.elements = Some(std::rc::Rc::new(shapes));
    Ok(value)
}

fn reduce_precision(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let text = either(p, "exponent_bits", "format", "");
    let both = ints(&text.replace(['e', 'm'], " "));
    let (e, m) = if p.attrs.has("format") {
        (first(&both)?, *both.get(1).ok_or(Error::Py("IndexError", "list index out of range".into()))?)
    } else {
        (first(&ints(&p.attrs.at("exponent_bits")?))?, first(&ints(&p.attrs.at("mantissa_bits")?))?)
    };
    one(em, comp, op, p, "reduce-precision", vec![format!("exponent_bits={e}"), format!("mantissa_bits={m}")], None)
}
