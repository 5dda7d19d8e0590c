//! A function's signature: its arguments `(name, type, attributes)` and results `(type,
//! attributes)`, from the text between its name and its body's `{`.

use crate::parse::stablehlo::error::{at, R};
use crate::parse::stablehlo::mlir_types::split_types;
use crate::parse::stablehlo::strip_loc::strip_loc;
use crate::parse::stablehlo::structure::Func;
use crate::parse::stablehlo::text::{comma, matching, partition, split_top, strip};
use crate::parse::stablehlo::values::{attr_dict, Dict};

pub(crate) type Args = Vec<(String, String, Dict)>;
pub(crate) type Results = Vec<(String, Dict)>;

pub(crate) fn parse_signature(f: &Func) -> R<(Args, Results)> {
    let sig = f.signature.as_str();
    let close = matching(sig, 0);
    let Some(close) = close.filter(|_| sig.starts_with('(')) else {
        return at(format!("malformed signature of @{}", f.name), f.line);
    };
    let mut args = Vec::new();
    for part in comma(&sig[1..close]) {
        let (part, _) = strip_loc(part);
        let (name, _, rest) = partition(part, ":");
        let (type_, attrs) = type_and_attrs(rest);
        args.push((strip(name).to_string(), type_, attrs));
    }
    let rest = strip(&sig[close + 1..]);
    let mut results = Vec::new();
    if let Some(r) = rest.strip_prefix("->") {
        for part in split_types(strip(r)) {
            results.push(type_and_attrs(part));
        }
    }
    Ok((args, results))
}

fn type_and_attrs(text: &str) -> (String, Dict) {
    let parts = split_top(strip(text), " {");
    let type_ = parts.first().copied().unwrap_or("");
    let attrs = if parts.len() > 1 {
        attr_dict(&format!("{{{}", parts[1]))
    } else {
        Dict::default()
    };
    (strip(type_).to_string(), attrs)
}
