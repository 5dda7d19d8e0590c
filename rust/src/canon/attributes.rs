//! What an instruction's attributes add to its content key (`hashes.compared_value`): ignored
//! keys, text with spaces dropped, iota replica groups expanded, `frontend_attributes` and
//! `backend_config` in a canonical order; and a forwarded root's own attributes.

use crate::canon::backend_config::backend_config;
use crate::canon::iota::expand_iota;
use crate::canon::model::R;
use crate::canon::py_text::{drop_spaces, py_space};
use crate::parse::text::{Inst, COMPUTATION_ATTRIBUTES};

pub(crate) const IGNORED_ATTRIBUTES: [&str; 7] = [
    "metadata",
    "statistics",
    "control-predecessors",
    "channel_id",
    "origin",
    "schedule",
    "ir_op",
];

/// `hashes.normalize_attribute(key, value, strict=True)`.
fn normalize_attribute(key: &str, value: &str) -> R<String> {
    let value = if value.contains('"') {
        value.to_string()
    } else {
        drop_spaces(value)
    };
    if key == "replica_groups" {
        if let Some(expanded) = expand_iota(&value)? {
            return Ok(expanded);
        }
    }
    Ok(value)
}

/// `hashes.compared_value` for a key that is not ignored: `None` when nothing is left to compare.
pub(crate) fn compared_value(ins: &Inst, key: &str, value: &str) -> R<Option<String>> {
    if key == "frontend_attributes" {
        let out = frontend_attributes(ins, value);
        return Ok(if out.is_empty() { None } else { Some(out) });
    }
    if key == "backend_config" {
        let out = backend_config(value);
        return Ok(if out.is_empty() { None } else { Some(out) });
    }
    normalize_attribute(key, value).map(Some)
}

/// `hashes.plumbing_attributes`: a forwarded root's own attributes (`compared_value`, not strict).
pub(crate) fn plumbing_attributes(ins: &Inst) -> String {
    let mut parts = Vec::new();
    for (key, value) in &ins.attrs {
        if *key == "index"
            || IGNORED_ATTRIBUTES.contains(key)
            || COMPUTATION_ATTRIBUTES.contains(key)
        {
            continue;
        }
        let compared = match compared_value(ins, key, value) {
            Ok(v) => v,
            // `strict=False`: an invalid iota group stays as printed (spaces dropped).
            Err(_) => Some(if value.contains('"') {
                value.to_string()
            } else {
                drop_spaces(value)
            }),
        };
        if let Some(v) = compared {
            parts.push(format!("{key}={v}"));
        }
    }
    parts.join(";")
}

/// `hashes._frontend_attributes`: entries in key order, numbering-only entries dropped.
fn frontend_attributes(ins: &Inst, value: &str) -> String {
    let mut kept: Vec<String> = Vec::new();
    for entry in frontend_entries(value) {
        let (k, v) = entry.split_once('=').unwrap_or((entry, ""));
        if numbering(ins, k, v) {
            continue;
        }
        kept.push(if entry.contains('"') {
            entry.to_string()
        } else {
            drop_spaces(entry)
        });
    }
    if kept.is_empty() {
        return String::new();
    }
    kept.sort();
    format!("{{{}}}", kept.join(","))
}

/// `hashes._entries`: the top-level entries of a `{...}` dict.
fn frontend_entries(value: &str) -> Vec<&str> {
    let b = value.as_bytes();
    if b.len() < 2 || b[0] != b'{' || b[b.len() - 1] != b'}' {
        return if value.is_empty() {
            vec![]
        } else {
            vec![value]
        };
    }
    let (mut out, mut depth, mut start, mut quoted, mut i) = (Vec::new(), 0i64, 1, false, 1);
    let end = b.len() - 1;
    while i < end {
        let c = b[i];
        if quoted {
            if c == b'\\' {
                i += 1;
            } else if c == b'"' {
                quoted = false;
            }
        } else if c == b'"' {
            quoted = true;
        } else if c == b'{' {
            depth += 1;
        } else if c == b'}' {
            depth -= 1;
        } else if c == b',' && depth == 0 {
            out.push(&value[start..i]);
            start = i + 1;
        }
        i += 1;
    }
    out.push(&value[start.min(end)..end]);
    out.retain(|e: &&str| !e.is_empty());
    out
}

/// `hashes._numbering`: Neuron's `inputN` / `output0,...` names restate numbers.
fn numbering(ins: &Inst, key: &str, value: &str) -> bool {
    if key == "neff_input_names" {
        return ins.opcode == "parameter"
            && value == format!("\"input{}\"", ins.payload.trim_matches(py_space));
    }
    if key == "neff_output_names"
        && value.len() > 1
        && value.starts_with('"')
        && value.ends_with('"')
    {
        return value[1..value.len() - 1]
            .split(',')
            .enumerate()
            .all(|(i, n)| n == format!("output{i}"));
    }
    false
}
