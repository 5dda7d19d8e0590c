//! Collectives (`all_reduce`, `all_gather`, `reduce_scatter`, `all_to_all`, `collective_permute`)
//! and the operations whose attributes are structured dimension numbers (`gather`,
//! `convolution`), plus `rng_bit_generator`, as HLO prints them.

use crate::parse::stablehlo::attributes::{either, braces, enum_, first, ints, nested, one, Handler, Parsed};
use crate::parse::stablehlo::emit::Emitter;
use crate::parse::stablehlo::error::{at, index_error, R};
use crate::parse::stablehlo::mlir_types::{dims_of, hlo_shape};
use crate::parse::stablehlo::ops_regions::{index_dims, reducer0, window};
use crate::parse::stablehlo::structure::Op;
use crate::parse::stablehlo::text::{comma, head, inner, is_space, strip};
use crate::parse::stablehlo::values::{Comp, Value};

pub(crate) fn parallel_handler(short: &str) -> Option<Handler> {
    Some(match short {
        "all_reduce" => all_reduce,
        "reduce_scatter" => reduce_scatter,
        "all_gather" => all_gather,
        "all_to_all" => all_to_all,
        "collective_permute" => collective_permute,
        "gather" => gather,
        "convolution" => convolution,
        "rng_bit_generator" => rng_bit_generator,
        "collective_broadcast" => collective_broadcast,
        _ => return None,
    })
}

/// `handle\s*=\s*(\d+)` searched: the digits as written.
fn handle(s: &str) -> Option<&str> {
    for (k, _) in s.match_indices("handle") {
        let r = s[k + 6..].trim_start_matches(is_space);
        let Some(r) = r.strip_prefix('=') else { continue };
        let r = r.trim_start_matches(is_space);
        let n = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
        if n > 0 {
            return Some(&r[..n]);
        }
    }
    None
}

/// `channel_id=`, `replica_groups=` and `use_global_device_ids=` of a collective.
fn groups(p: &mut Parsed) -> R<Vec<String>> {
    let mut out = Vec::new();
    if let Some(h) = handle(&p.attrs.or("channel_handle", "")) {
        if h.bytes().any(|c| c != b'0') {
            out.push(format!("channel_id={h}"));
        }
    }
    let g = p.attrs.or("replica_groups", "");
    if !g.is_empty() {
        let empty = g.contains("0x0") || g.starts_with("dense<>");
        let rows = if empty { Vec::new() } else { nested(&g)? };
        out.push(format!("replica_groups={{{}}}", rows.iter().map(|r| braces(r)).collect::<Vec<_>>().join(",")));
    }
    if p.attrs.get("use_global_device_ids") == Some("true") {
        out.push("use_global_device_ids=true".into());
    }
    Ok(out)
}

fn collective_broadcast(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let attrs = groups(p)?;
    one(em, comp, op, p, "collective-broadcast", attrs, None)
}

fn all_reduce(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let mut attrs = groups(p)?;
    attrs.push(format!("to_apply={}", reducer0(em, op)?));
    one(em, comp, op, p, "all-reduce", attrs, None)
}

fn reduce_scatter(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let dim = first(&ints(&p.attrs.at("scatter_dimension")?))?;
    let mut attrs = groups(p)?;
    attrs.push(format!("dimensions={{{dim}}}"));
    attrs.push(format!("to_apply={}", reducer0(em, op)?));
    one(em, comp, op, p, "reduce-scatter", attrs, None)
}

fn all_gather(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let dim = first(&ints(&p.attrs.at("all_gather_dim")?))?;
    let mut attrs = groups(p)?;
    attrs.push(format!("dimensions={{{dim}}}"));
    one(em, comp, op, p, "all-gather", attrs, None)
}

fn all_to_all(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let split = first(&ints(&p.attrs.at("split_dimension")?))?;
    let concat = first(&ints(&p.attrs.at("concat_dimension")?))?;
    if split != concat {
        return at("all_to_all with split_dimension != concat_dimension is not read", op.line);
    }
    let mut attrs = groups(p)?;
    attrs.push(format!("dimensions={{{split}}}"));
    one(em, comp, op, p, "all-to-all", attrs, None)
}

fn collective_permute(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let pairs = nested(&p.attrs.at("source_target_pairs")?)?;
    let mut attrs = groups(p)?;
    attrs.push(format!("source_target_pairs={{{}}}", pairs.iter().map(|r| braces(r)).collect::<Vec<_>>().join(",")));
    one(em, comp, op, p, "collective-permute", attrs, None)
}

fn gather(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let mut attrs = index_dims(
        &p.attrs.or("dimension_numbers", ""),
        ["offset_dims", "collapsed_slice_dims"],
        ["operand_batching_dims", "start_indices_batching_dims"],
        "start_index_map",
    )?;
    attrs.push(format!("slice_sizes={}", braces(&ints(&p.attrs.or("slice_sizes", "")))));
    if p.attrs.get("indices_are_sorted") == Some("true") {
        attrs.push("indices_are_sorted=true".into());
    }
    one(em, comp, op, p, "gather", attrs, None)
}

/// `[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]` -> ["b01f", "01io", "b01f"].
fn labels(text: &str) -> R<Vec<String>> {
    let mut groups = Vec::new();
    let mut p = 0;
    while let Some(k) = text[p..].find('[') {
        let start = p + k + 1;
        let Some(e) = text[start..].find(']') else { break };
        groups.push(&text[start..start + e]);
        p = start + e + 1;
    }
    if groups.len() != 3 {
        return at(format!("convolution dimension numbers {} are not read", head(text, 60)), 0);
    }
    Ok(groups.iter().map(|g| comma(g).iter().map(|x| strip(x)).collect::<String>()).collect())
}

fn convolution(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let numbers_ = either(p, "dim_numbers", "dimension_numbers", "");
    let text = if numbers_.contains("#stablehlo.conv") {
        match numbers_.split_once('<') {
            Some((_, after)) => after.to_string(),
            None => return index_error(),
        }
    } else {
        numbers_.clone()
    };
    let l = labels(&text)?;
    let (lhs, rhs, out) = (&l[0], &l[1], &l[2]);
    let Some(t) = p.ins.get(1) else { return index_error() };
    let kernel = dims_of(&hlo_shape(t)?)?;
    let rhs_chars: Vec<char> = rhs.chars().collect();
    let mut spatial: Vec<char> = rhs_chars.iter().copied().filter(|c| c.is_ascii_digit()).collect();
    spatial.sort();
    let mut size = Vec::new();
    for c in &spatial {
        let k = rhs_chars.iter().position(|x| x == c).expect("from rhs");
        match kernel.get(k) {
            Some(&d) => size.push(d),
            None => return index_error(),
        }
    }
    let sizes = format!("[{}]", size.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(", "));
    let strides = either(p, "stride", "window_strides", "");
    let padding = either(p, "pad", "padding", "");
    let base = either(p, "lhs_dilate", "lhs_dilation", "");
    let dil = either(p, "rhs_dilate", "rhs_dilation", "");
    if either(p, "reverse", "window_reversal", "").contains("true") {
        return at("convolution with window reversal is not read", op.line);
    }
    let mut get = |k: &str| {
        match k {
            "window_dimensions" => sizes.clone(),
            "window_strides" => strides.clone(),
            "padding" => padding.clone(),
            "base_dilations" => base.clone(),
            "window_dilations" => dil.clone(),
            _ => String::new(),
        }
    };
    let mut attrs = vec![window(&mut get, size.len(), "window_dimensions")?, format!("dim_labels={lhs}_{rhs}->{out}")];
    for key in ["feature_group_count", "batch_group_count"] {
        let k = first(&ints(&p.attrs.or(key, "1")))?;
        if k != 1 {
            attrs.push(format!("{key}={k}"));
        }
    }
    let pc = p.attrs.or("precision_config", "[]");
    let words: Vec<String> = comma(inner(strip(&pc))).iter().map(|x| enum_(x).to_lowercase()).collect();
    if words.iter().any(|x| x != "default") {
        attrs.push(format!("operand_precision={{{}}}", words.join(",")));
    }
    one(em, comp, op, p, "convolution", attrs, None)
}

fn rng_bit_generator(em: &mut Emitter, comp: &mut Comp, op: &mut Op, p: &mut Parsed) -> R<Value> {
    let algorithm = enum_(&either(p, "algorithm", "rng_algorithm", "DEFAULT"));
    let name = match algorithm.as_str() {
        "DEFAULT" => "rng_default".to_string(),
        "THREE_FRY" => "rng_three_fry".to_string(),
        "PHILOX" => "rng_philox".to_string(),
        a => a.to_lowercase(),
    };
    one(em, comp, op, p, "rng-bit-generator", vec![format!("algorithm={name}")], None)
}
