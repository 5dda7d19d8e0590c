//! Operations that hold regions, each region written as a computation of its own: reductions
//! (`reduce`, `reduce_window`, `sort`, `scatter`: the region is the `to_apply` computation) and
//! control flow (`while`, `case`, `if`: the region's values from outside are passed in, emit.rs).

use crate::parse::stablehlo::attributes::{lookups, braces, ints, numbers, one, Handler, Parsed};
use crate::parse::stablehlo::emit::{Emitter, Shape};
use crate::parse::stablehlo::error::{at, index_error, zip_strict, R};
use crate::parse::stablehlo::mlir_types::{dims_of, element_of, hlo_shape};
use crate::parse::stablehlo::strip_loc::strip_loc;
use crate::parse::stablehlo::structure::{Op, Region};
use crate::parse::stablehlo::text::{comma, is_space, is_word, matching, partition, strip};
use crate::parse::stablehlo::values::{free_refs, Comp, Value};

pub(crate) fn region_handler(short: &str) -> Option<Handler> {
    Some(match short {
        "reduce" => reduce,
        "reduce_window" => reduce_window,
        "select_and_scatter" => select_and_scatter,
        "sort" => sort,
        "scatter" => scatter,
        "while" => while_,
        "case" => case,
        "if" => if_,
        _ => return None,
    })
}

fn binary(short: &str) -> Option<&'static str> {
    Some(match short {
        "add" => "add",
        "multiply" => "multiply",
        "maximum" => "maximum",
        "minimum" => "minimum",
        "and" => "and",
        "or" => "or",
        "xor" => "xor",
        _ => return None,
    })
}

fn region_at(op: &mut Op, k: usize) -> R<&mut Region> {
    match op.regions.get_mut(k) {
        Some(r) => Ok(r),
        None => index_error(),
    }
}

/// A region that must not read values from outside (a reducer, a comparator) as a computation
/// with one parameter per block argument.
pub(crate) fn reducer(em: &mut Emitter, name: &str, line: usize, region: &mut Region) -> R<String> {
    let free = free_refs(region);
    if let Some(first) = free.first() {
        return at(format!("{name}: its region reads {first} from outside"), line);
    }
    let mut params = Vec::new();
    for (n, t) in &region.args {
        params.push(vec![(n.clone(), hlo_shape(t)?)]);
    }
    Ok(em.region(region, &params, Shape::default())?.0)
}

/// The first region of `op` as a reducer.
pub(crate) fn reducer0(em: &mut Emitter, op: &mut Op) -> R<String> {
    let (name, line) = (op.name.clone(), op.line);
    reducer(em, &name, line, region_at(op, 0)?)
}

/// `applies stablehlo.add`: the two-parameter computation XLA's export writes for it.
fn applied(em: &mut Emitter, op: &Op, opname: &str, shapes: &[String]) -> R<String> {
    let (dialect, _, short) = partition(opname, ".");
    let Some(opcode) = binary(short).filter(|_| dialect == "stablehlo") else {
        return at(format!("{} applies {opname}, which is not read", op.name), op.line);
    };
    let mut comp = Comp::new(em.fresh("region"), op.line);
    let mut params = Vec::new();
    for (k, shape) in shapes.iter().enumerate() {
        params.push(em.inst(&mut comp, "parameter", shape, &[], vec![], op.line, "", "Arg"));
        comp.last().opcode = format!("parameter({k})").into();
    }
    let refs: Vec<&Value> = params.iter().collect();
    let Some(shape) = shapes.first() else { return index_error() };
    em.inst(&mut comp, opcode, shape, &refs, vec![], op.line, &op.loc, "");
    comp.last().root = true;
    let name = comp.name.clone();
    em.comps.push(comp);
    Ok(name)
}

/// `reducer(%a: T, %c: T) (%b: T, %d: T)` -> [a, b, c, d]: accumulators, then elements.
fn reducer_args(label: &str) -> R<Vec<(String, String)>> {
    let mut pairs: Vec<Vec<(String, String)>> = Vec::new();
    let mut k = label.find('(');
    while let Some(start) = k {
        let Some(end) = matching(label, start) else { break };
        let mut group = Vec::new();
        for arg in comma(&label[start + 1..end]) {
            let (name, _, type_) = partition(strip_loc(arg).0, ":");
            group.push((strip(name).to_string(), strip(type_).to_string()));
        }
        pairs.push(group);
        k = label[end..].find('(').map(|j| j + end);
    }
    let mut out = Vec::new();
    for p in &pairs {
        match p.first() {
            Some(x) => out.push(x.clone()),
            None => return index_error(),
        }
    }
    for p in &pairs {
        match p.get(1) {
            Some(x) => out.push(x.clone()),
            None => return index_error(),
        }
    }
    Ok(out)
}

fn inputs_and_inits(p: &Parsed) -> (Vec<String>, Vec<String>) {
    if p.body.contains("init:") {
        let a = p.operands.iter().step_by(2).cloned().collect();
        let b = p.operands.iter().skip(1).step_by(2).cloned().collect();
        return (a, b);
    }
    let half = p.operands.len() / 2;
    (p.operands[..half].to_vec(), p.operands[half..].to_vec())
}

/// `applies\s+([\w.]+)` searched.
fn applies(body: &str) -> Option<&str> {
    for (k, _) in body.match_indices("applies") {
        let r = &body[k + 7..];
        let t = r.trim_start_matches(is_space);
        if t.len() == r.len() {
            continue;
        }
        let n = t.find(|c: char| !(is_word(c) || c == '.')).unwrap_or(t.len());
        if n > 0 {
            return Some(&t[..n]);
        }
    }
    None
}

fn reduce(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let (inputs, inits) = inputs_and_inits(p);
    let all: Vec<String> = inputs.iter().chain(&inits).cloned().collect();
    let operands = lookups(em, comp, &all, op.line)?;
    let dims = ints(&p.attrs.or("dimensions", "[]"));
    let mut scalars = Vec::new();
    for v in &operands[inputs.len()..] {
        scalars.push(format!("{}[]", element_of(&v.shape)?));
    }
    let body = if let Some(name) = applies(&p.body) {
        let twice: Vec<String> = scalars.iter().chain(&scalars).cloned().collect();
        applied(em, op, name, &twice)?
    } else {
        let region = region_at(op, 0)?;
        if region.label.starts_with("reducer(") {
            region.args = reducer_args(&region.label)?;
        }
        reducer0(em, op)?
    };
    one(em, comp, op, p, "reduce", vec![format!("dimensions={}", braces(&dims)), format!("to_apply={body}")], Some(operands))
}

fn join_x(xs: &[i64]) -> String {
    xs.iter().map(|x| x.to_string()).collect::<Vec<_>>().join("x")
}

/// `window={size=2x2 stride=... pad=... lhs_dilate=... rhs_dilate=...}` of the attributes `get`
/// reads (an operation's, or a convolution's renamed ones).
pub(crate) fn window(get: &mut dyn FnMut(&str) -> String, rank: usize, size_key: &str) -> R<String> {
    let or = |xs: Vec<i64>, fill: i64, n: usize| if xs.is_empty() { vec![fill; n] } else { xs };
    let size = or(ints(&get(size_key)), 1, rank);
    let mut parts = vec![format!("size={}", join_x(&size))];
    let stride = or(ints(&get("window_strides")), 1, rank);
    if stride.iter().any(|&s| s != 1) {
        parts.push(format!("stride={}", join_x(&stride)));
    }
    let mut pad = or(ints(&get("padding")), 0, 2 * rank);
    if pad.len() == 1 {
        pad = vec![pad[0]; 2 * rank];
    }
    if pad.iter().any(|&x| x != 0) {
        let mut pads = Vec::new();
        for k in 0..rank {
            let (Some(a), Some(b)) = (pad.get(2 * k), pad.get(2 * k + 1)) else { return index_error() };
            pads.push(format!("{a}_{b}"));
        }
        parts.push(format!("pad={}", pads.join("x")));
    }
    for (key, name) in [("base_dilations", "lhs_dilate"), ("window_dilations", "rhs_dilate")] {
        let d = or(ints(&get(key)), 1, rank);
        if d.iter().any(|&x| x != 1) {
            parts.push(format!("{name}={}", join_x(&d)));
        }
    }
    Ok(format!("window={{{}}}", parts.join(" ")))
}

fn reduce_window(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let operands = lookups(em, comp, &p.operands, op.line)?;
    let Some(first) = operands.first() else { return index_error() };
    let rank = dims_of(&first.shape)?.len();
    let body = reducer0(em, op)?;
    let w = window(&mut |k| p.attrs.or(k, ""), rank, "window_dimensions")?;
    one(em, comp, op, p, "reduce-window", vec![w, format!("to_apply={body}")], Some(operands))
}

/// `select-and-scatter(operand, source, init), window={...}, select=..., scatter=...`.
fn select_and_scatter(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let operands = lookups(em, comp, &p.operands, op.line)?;
    let Some(first) = operands.first() else { return index_error() };
    let rank = dims_of(&first.shape)?.len();
    let select = reducer0(em, op)?;
    let (name, line) = (op.name.clone(), op.line);
    let scatter = reducer(em, &name, line, region_at(op, 1)?)?;
    let w = window(&mut |k| p.attrs.or(k, ""), rank, "window_dimensions")?;
    let attrs = vec![w, format!("select={select}"), format!("scatter={scatter}")];
    one(em, comp, op, p, "select-and-scatter", attrs, Some(operands))
}

fn sort(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let Some(&dim) = ints(&p.attrs.or("dimension", "-1")).first() else { return index_error() };
    let mut attrs = vec![format!("dimensions={{{dim}}}")];
    if p.attrs.get("is_stable") == Some("true") {
        attrs.push("is_stable=true".into());
    }
    attrs.push(format!("to_apply={}", reducer0(em, op)?));
    one(em, comp, op, p, "sort", attrs, None)
}

fn scatter(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let mut attrs = index_dims(
        &p.attrs.or("scatter_dimension_numbers", ""),
        ["update_window_dims", "inserted_window_dims"],
        ["input_batching_dims", "scatter_indices_batching_dims"],
        "scatter_dims_to_operand_dims",
    )?;
    for k in ["indices_are_sorted", "unique_indices"] {
        if p.attrs.get(k) == Some("true") {
            attrs.push(format!("{k}=true"));
        }
    }
    attrs.push(format!("to_apply={}", reducer0(em, op)?));
    one(em, comp, op, p, "scatter", attrs, None)
}

/// A gather's or scatter's dimension numbers as HLO prints them: `dims` always, `batching`
/// where not empty, then `map` and `index_vector_dim`.
pub(crate) fn index_dims(text: &str, dims: [&str; 2], batching: [&str; 2], map: &str) -> R<Vec<String>> {
    let n = numbers(text);
    let get = |k: &str| ints(n.get(k).unwrap_or("[]"));
    let mut attrs: Vec<String> = dims.iter().map(|k| format!("{k}={}", braces(&get(k)))).collect();
    for k in batching {
        if !get(k).is_empty() {
            attrs.push(format!("{k}={}", braces(&get(k))));
        }
    }
    attrs.push(format!("{map}={}", braces(&get(map))));
    let Some(&ivd) = ints(n.get("index_vector_dim").unwrap_or("0")).first() else { return index_error() };
    attrs.push(format!("index_vector_dim={ivd}"));
    Ok(attrs)
}

/// `(%[\w.$-]+)\s*=\s*%` found in the pretty `while`'s text: its iteration arguments.
fn iter_args(body: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut p = 0;
    while let Some(k) = body[p..].find('%') {
        let start = p + k;
        let r = &body[start + 1..];
        let n = r.find(|c: char| !(is_word(c) || c == '.' || c == '$' || c == '-')).unwrap_or(r.len());
        p = start + 1;
        if n == 0 {
            continue;
        }
        let after = r[n..].trim_start_matches(is_space);
        if let Some(a) = after.strip_prefix('=') {
            let a = a.trim_start_matches(is_space);
            if a.starts_with('%') {
                out.push(body[start..start + 1 + n].to_string());
                p = body.len() - a.len() + 1;
            }
        }
    }
    out
}

fn while_(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    if op.regions.len() != 2 {
        return at("while without its two regions", op.line);
    }
    if op.regions[0].args.is_empty() {
        let names = iter_args(&p.body);
        zip_strict(&[names.len(), p.ins.len()])?;
        let args: Vec<(String, String)> = names.into_iter().zip(p.ins.iter().cloned()).collect();
        op.regions[0].args = args.clone();
        op.regions[1].args = args;
    }
    let inits = lookups(em, comp, &p.operands, op.line)?;
    let mut captured: Vec<String> = Vec::new();
    for r in free_refs(&op.regions[0]).into_iter().chain(free_refs(&op.regions[1])) {
        if !captured.contains(&r) {
            captured.push(r);
        }
    }
    let outside = lookups(em, comp, &captured, op.line)?;
    let carried: Vec<&Value> = inits.iter().chain(&outside).collect();
    let state = format!("({})", carried.iter().map(|v| &*v.shape).collect::<Vec<_>>().join(", "));
    let whole = em.inst(comp, "tuple", &state, &carried, vec![], op.line, &op.loc, "");
    zip_strict(&[op.regions[0].args.len(), inits.len()])?;
    let mut group: Vec<(String, String)> =
        op.regions[0].args.iter().zip(&inits).map(|((n, _), v)| (n.clone(), v.shape.to_string())).collect();
    group.extend(captured.iter().zip(&outside).map(|(c, v)| (c.clone(), v.shape.to_string())));
    let params = vec![group];
    let (condition, _) = em.region(&mut op.regions[0], &params, Shape { tuple_param: true, ..Shape::default() })?;
    zip_strict(&[op.regions[1].args.len(), inits.len()])?;
    let mut body_group: Vec<(String, String)> =
        op.regions[1].args.iter().zip(&inits).map(|((n, _), v)| (n.clone(), v.shape.to_string())).collect();
    body_group.extend(params[0][inits.len().min(params[0].len())..].iter().cloned());
    let how = Shape { tuple_root: true, carry: &captured, tuple_param: true, ..Shape::default() };
    let (body, _) = em.region(&mut op.regions[1], &[body_group], how)?;
    let mut value = em.inst(
        comp,
        "while",
        &state,
        &[&whole],
        vec![format!("condition={condition}"), format!("body={body}")],
        op.line,
        &op.loc,
        "",
    );
    value.elements = Some(std::rc::Rc::new(inits.iter().map(|v| v.shape.to_string()).collect()));
    Ok(value)
}

fn branches(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &Parsed) -> R<(Vec<Value>, Vec<String>)> {
    let (mut operands, mut names) = (Vec::new(), Vec::new());
    for region in op.regions.iter_mut() {
        let captured = free_refs(region);
        let values = lookups(em, comp, &captured, op.line)?;
        if values.len() == 1 {
            operands.push(values[0].clone());
        } else {
            let shape = format!("({})", values.iter().map(|v| &*v.shape).collect::<Vec<_>>().join(", "));
            let refs: Vec<&Value> = values.iter().collect();
            operands.push(em.inst(comp, "tuple", &shape, &refs, vec![], op.line, &op.loc, ""));
        }
        let group: Vec<(String, String)> = captured.iter().zip(&values).map(|(c, v)| (c.clone(), v.shape.to_string())).collect();
        let how = Shape { tuple_root: p.outs.len() > 1, ..Shape::default() };
        let (name, _) = em.region(region, &[group], how)?;
        names.push(name);
    }
    Ok((operands, names))
}

fn case(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let Some(r) = p.operands.first() else { return index_error() };
    let index = em.lookup(comp, r, op.line)?;
    let (operands, names) = branches(em, comp, op, p)?;
    let attrs = vec![format!("branch_computations={{{}}}", names.join(", "))];
    let all: Vec<Value> = std::iter::once(index).chain(operands).collect();
    one(em, comp, op, p, "conditional", attrs, Some(all))
}

fn if_(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let Some(r) = p.operands.first() else { return index_error() };
    let pred = em.lookup(comp, r, op.line)?;
    let (operands, names) = branches(em, comp, op, p)?;
    let (Some(t), Some(f)) = (names.first(), names.get(1)) else { return index_error() };
    let attrs = vec![format!("true_computation={t}"), format!("false_computation={f}")];
    let all: Vec<Value> = std::iter::once(pred).chain(operands).collect();
    one(em, comp, op, p, "conditional", attrs, Some(all))
}
