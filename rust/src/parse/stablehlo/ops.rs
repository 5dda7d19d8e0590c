//! StableHLO operations -> HLO instructions: the op table (which HLO opcode each `stablehlo.*`
//! name is, and which translation reads the rest) and what every operation shares (its shardings,
//! its frontend attributes). Each operation's attributes as HLO prints them (xla/hlo/translate/
//! mhlo_to_hlo and hlo_instruction.cc's printer: `dimensions={1}`, `slice={[1:3]}`,
//! `direction=LT`, ...) are ops_array.rs's and the other ops_*.rs files'.
//!
//! `chlo` is ops_chlo.rs's, Shardy's `sdy` ops_shardy.rs's. An operation not in the tables, and
//! every other dialect's (`shape`, `tensor`, `arith`), is refused by name: a guess would compare
//! wrongly.

use crate::parse::stablehlo::attributes::{lookups, one, parse, Handler, Parsed};
use crate::parse::stablehlo::emit::Emitter;
use crate::parse::stablehlo::error::{at, Error, R};
use crate::parse::stablehlo::ops_array::{
    broadcast, compare, constant, dims_op, dot, dot_general, dynamic_slice, get_tuple_element, iota, optimization_barrier,
    pad, reduce_precision, slice, tuple,
};
use crate::parse::stablehlo::ops_chlo::chlo_handler;
use crate::parse::stablehlo::ops_custom_call::{composite, custom_call};
use crate::parse::stablehlo::ops_numeric::numeric_handler;
use crate::parse::stablehlo::ops_parallel::parallel_handler;
use crate::parse::stablehlo::ops_regions::region_handler;
use crate::parse::stablehlo::ops_shardy::{op_shardings, sdy_handler};
use crate::parse::stablehlo::structure::Op;
use crate::parse::stablehlo::structure_lines::symbol_len;
use crate::parse::stablehlo::text::{lstrip, partition};
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
