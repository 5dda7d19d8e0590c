//! `hashes_reference.content_key`: an instruction's own content (opcode, shape without layout, compared
//! attributes, the hashes of the computations it calls, its literal), hashed with `stable_hash`.

use std::borrow::Cow;

use crate::canon::attributes::{compared_value, IGNORED_ATTRIBUTES};
use crate::canon::blake2b::{hexdigest, stable_hash};
use crate::canon::model::R;
use crate::canon::py_semantics::is_word;
use crate::canon::py_text::drop_spaces;
use crate::canon::shape_text::strip_layout;
use crate::parse::text::{FxMap, Inst, COMPUTATION_ATTRIBUTES};

const LONG_LITERAL: usize = 256;

/// `re.findall(r"[A-Za-z_][\w.\-]*", value)`, `\w` as Python's (Unicode-aware).
fn computation_names(value: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut chars = value.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if !(c.is_ascii_alphabetic() || c == '_') {
            continue;
        }
        let mut j = i + c.len_utf8();
        while let Some(&(k, d)) = chars.peek() {
            if !(is_word(d) || d == '.' || d == '-') {
                break;
            }
            j = k + d.len_utf8();
            chars.next();
        }
        out.push(&value[i..j]);
    }
    out
}

/// `hashes_reference._literal_key`.
fn literal_key(payload: &str) -> String {
    let text = drop_spaces(payload);
    if text.chars().count() <= LONG_LITERAL {
        return text;
    }
    format!("literal:{}", hexdigest(&text, 16))
}

/// `hashes_reference.content_key`, hashed with `stable_hash`.
pub(crate) fn content_key(ins: &Inst, parameter: bool, callee_hash: &FxMap<&str, i64>) -> R<u64> {
    let mut s = String::with_capacity(64);
    s.push_str(if parameter { "parameter" } else { &ins.opcode });
    s.push('|');
    s.push_str(&strip_layout(&ins.shape).replace(' ', ""));
    for (key, value) in &ins.attrs {
        if IGNORED_ATTRIBUTES.contains(key) || (parameter && *key == "index") {
            continue;
        }
        s.push('|');
        s.push_str(key);
        s.push('=');
        if COMPUTATION_ATTRIBUTES.contains(key) {
            let hashes: Vec<String> = computation_names(value)
                .iter()
                .map(|n| callee_hash.get(n).copied().unwrap_or(0).to_string())
                .collect();
            s.push_str(&hashes.join(","));
        } else {
            match compared_value(ins, key, value)? {
                Some(v) => s.push_str(&v),
                None => {
                    // nothing to compare: the `|key=` pushed above is taken back
                    s.truncate(s.len() - key.len() - 2);
                }
            }
        }
    }
    if !ins.payload.is_empty() && !parameter {
        s.push('|');
        s.push_str(&literal_key(&ins.payload));
    }
    Ok(stable_hash(&s))
}

pub(crate) type CacheKey<'b, 'a> = (
    &'b str,
    &'b str,
    &'b [(&'a str, Cow<'a, str>)],
    &'b str,
    bool,
);

/// Content keys and layouts of instructions that call nothing, by what `content_key` reads.
pub(crate) type KeyCache<'b, 'a> = FxMap<CacheKey<'b, 'a>, (u64, String)>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn computation_names_as_python() {
        // re.findall(r"[A-Za-z_][\w.\-]*", "%fus\u{e9}e.1, \u{e9}x {b\u{24b6}}")
        assert_eq!(
            computation_names("%fus\u{e9}e.1, \u{e9}x {b\u{24b6}}"),
            ["fus\u{e9}e.1", "x", "b"]
        );
    }
}
