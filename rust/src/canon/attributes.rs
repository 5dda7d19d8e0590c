//! What an instruction's attributes add to its content key (`compared_value`): ignored keys, text
//! with spaces dropped, iota replica groups expanded, `frontend_attributes` and `backend_config`
//! in a canonical order; and a forwarded root's own attributes. The one implementation: the
//! library's diagnosis and rendering call these too (py/attributes.rs); the readable reference
//! is tests/oracles/hashes_reference.py.

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

/// `normalize_attribute(key, value, strict=True)`: an invalid iota group is an error.
fn normalize_attribute(key: &str, value: &str) -> R<String> {
    let value = spaces_dropped(value);
    if key == "replica_groups" {
        if let Some(expanded) = expand_iota(&value)? {
            return Ok(expanded);
        }
    }
    Ok(value)
}

/// `normalize_attribute(key, value)` (not strict): an invalid iota group stays as printed,
/// spaces dropped.
pub(crate) fn normalize_lenient(key: &str, value: &str) -> String {
    normalize_attribute(key, value).unwrap_or_else(|_| spaces_dropped(value))
}

/// `value` without its spaces, unless it holds a string (whose spaces are its text).
fn spaces_dropped(value: &str) -> String {
    if value.contains('"') {
        value.to_string()
    } else {
        drop_spaces(value)
    }
}

/// `compared_value` for a key that is not ignored: `None` when nothing is left to compare.
pub(crate) fn compared_value(ins: &Inst, key: &str, value: &str) -> R<Option<String>> {
    compared_value_of(&ins.opcode, &ins.payload, key, value)
}

/// `compared_value` of an instruction of opcode `opcode` and payload `payload` (what the
/// numbering-only frontend entries read), for a key that is not ignored.
pub(crate) fn compared_value_of(
    opcode: &str,
    payload: &str,
    key: &str,
    value: &str,
) -> R<Option<String>> {
    if key == "frontend_attributes" {
        let out = frontend_attributes(opcode, payload, value);
        return Ok(if out.is_empty() { None } else { Some(out) });
    }
    if key == "backend_config" {
        let out = backend_config(value);
        return Ok(if out.is_empty() { None } else { Some(out) });
    }
    normalize_attribute(key, value).map(Some)
}

/// `compared_value(..., strict=False)` of any key: None for an ignored one, an invalid iota
/// group as printed (spaces dropped).
pub(crate) fn compared_lenient(
    opcode: &str,
    payload: &str,
    key: &str,
    value: &str,
) -> Option<String> {
    if IGNORED_ATTRIBUTES.contains(&key) {
        return None;
    }
    compared_value_of(opcode, payload, key, value)
        .unwrap_or_else(|_| Some(normalize_lenient(key, value)))
}

/// `plumbing_attributes`: a forwarded root's own attributes (`compared_value`, not strict).
pub(crate) fn plumbing_attributes(ins: &Inst) -> String {
    plumbing_of(
        &ins.opcode,
        &ins.payload,
        ins.attrs.iter().map(|(k, v)| (*k, v.as_ref())),
    )
}

/// `plumbing_attributes` of an instruction of opcode `opcode` and payload `payload`.
pub(crate) fn plumbing_of<'v>(
    opcode: &str,
    payload: &str,
    attrs: impl Iterator<Item = (&'v str, &'v str)>,
) -> String {
    let mut parts = Vec::new();
    for (key, value) in attrs {
        if key == "index" || COMPUTATION_ATTRIBUTES.contains(&key) {
            continue;
        }
        if let Some(v) = compared_lenient(opcode, payload, key, value) {
            parts.push(format!("{key}={v}"));
        }
    }
    parts.join(";")
}

/// `_frontend_attributes`: entries in key order, numbering-only entries dropped.
fn frontend_attributes(opcode: &str, payload: &str, value: &str) -> String {
    let mut kept: Vec<String> = Vec::new();
    for entry in frontend_entries(value) {
        let (k, v) = entry.split_once('=').unwrap_or((entry, ""));
        if numbering(opcode, payload, k, v) {
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

/// `frontend_entries`: the top-level `key=value` entries of a `{...}` dict (commas in strings
/// and braces kept).
pub(crate) fn frontend_entries(value: &str) -> Vec<&str> {
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

/// `_numbering`: Neuron's `inputN` / `output0,...` names restate numbers.
fn numbering(opcode: &str, payload: &str, key: &str, value: &str) -> bool {
    if key == "neff_input_names" {
        return opcode == "parameter"
            && value == format!("\"input{}\"", payload.trim_matches(py_space));
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
