//! The lines of StableHLO text that carry structure, each recognized alone: a `#loc` or other
//! alias, the `module` line, a Shardy mesh, a `func.func` line, a block's label, an operation's
//! results (structure.rs puts them together).

use crate::parse::stablehlo::text::{lstrip, rstrip, strip};

fn name_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '.' || c == '$' || c == '-'
}

/// `[\w.$-]+|"[^"]*"` at the start of `s`: its length.
pub(crate) fn symbol_len(s: &str) -> Option<usize> {
    if let Some(rest) = s.strip_prefix('"') {
        return rest.find('"').map(|k| k + 2);
    }
    let n = s.find(|c: char| !name_char(c)).unwrap_or(s.len());
    (n > 0).then_some(n)
}

pub(crate) fn skip_space(s: &str) -> &str {
    lstrip(s)
}

/// `^(#loc\d*)\s*=\s*(.*?)\s*$`
pub(crate) fn loc_alias(s: &str) -> Option<(&str, &str)> {
    let rest = s.strip_prefix("#loc")?;
    let d = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
    let after = skip_space(&rest[d..]).strip_prefix('=')?;
    Some((&s[..4 + d], strip(after)))
}

/// A location whole (`loc(...)`, or the pretty form without it): its strings closed and its
/// parentheses balanced (a file cut inside the location table must not read as whole).
pub(crate) fn complete_loc(value: &str) -> bool {
    let (mut depth, mut quoted, mut escaped) = (0i64, false, false);
    for ch in value.chars() {
        if quoted {
            if escaped {
                escaped = false;
            } else if ch == '\\' {
                escaped = true;
            } else if ch == '"' {
                quoted = false;
            }
        } else if ch == '"' {
            quoted = true;
        } else if ch == '(' {
            depth += 1;
        } else if ch == ')' {
            depth -= 1;
            if depth < 0 {
                return false;
            }
        }
    }
    !quoted && depth == 0
}

/// `^[#!][\w.$-]+\s*=`
pub(crate) fn other_alias(s: &str) -> bool {
    let Some(rest) = s.strip_prefix(['#', '!']) else { return false };
    let n = rest.find(|c: char| !name_char(c)).unwrap_or(rest.len());
    n > 0 && skip_space(&rest[n..]).starts_with('=')
}

/// `module(\s+@name)?(\s+attributes\s*(\{.*\}))?\s*\{\s*$` -> (name, attributes).
pub(crate) fn module_line(s: &str) -> Option<(String, String)> {
    let rest = s.strip_prefix("module")?;
    let mut name = String::new();
    let mut rest = rest;
    let t = lstrip(rest);
    if t.len() < rest.len() && t.starts_with('@') {
        if let Some(n) = symbol_len(&t[1..]) {
            name = t[1..1 + n].trim_matches('"').to_string();
            rest = &t[1 + n..];
        }
    }
    let t = lstrip(rest);
    if t.len() < rest.len() {
        if let Some(a) = t.strip_prefix("attributes") {
            let a = lstrip(a);
            if let Some(body) = rstrip(a).strip_suffix('{') {
                let body = rstrip(body);
                if body.len() >= 2 && body.starts_with('{') && body.ends_with('}') {
                    return Some((name, body.to_string()));
                }
            }
        }
    }
    (strip(rest) == "{").then_some((name, String::new()))
}

/// `sdy.mesh @name = <...> {...}?` -> (name, `<...>`).
pub(crate) fn mesh_line(s: &str) -> Option<(String, String)> {
    let rest = s.strip_prefix("sdy.mesh")?;
    let t = lstrip(rest);
    if t.len() == rest.len() {
        return None;
    }
    let t = t.strip_prefix('@')?;
    let n = symbol_len(t)?;
    let name = t[..n].trim_matches('"').to_string();
    let t = lstrip(&t[n..]).strip_prefix('=')?;
    let t = lstrip(t);
    if !t.starts_with('<') {
        return None;
    }
    for (q, _) in t.match_indices('>') {
        let rem = &t[q + 1..];
        let r = strip(rem);
        if r.is_empty() || (lstrip(rem).starts_with('{') && r.ends_with('}') && r.len() >= 2) {
            return Some((name, t[..q + 1].to_string()));
        }
    }
    None
}

/// `func.func (public|private|nested)? @name (` -> (visibility, name, index after `(`).
pub(crate) fn func_line(s: &str) -> Option<(String, String, usize)> {
    let rest = s.strip_prefix("func.func")?;
    let mut t = lstrip(rest);
    if t.len() == rest.len() {
        return None;
    }
    let mut visibility = String::new();
    for v in ["public", "private", "nested"] {
        if let Some(after) = t.strip_prefix(v) {
            let a = lstrip(after);
            if a.len() < after.len() && a.starts_with('@') {
                visibility = v.to_string();
                t = a;
                break;
            }
        }
    }
    let t2 = t.strip_prefix('@')?;
    let n = symbol_len(t2)?;
    let name = t2[..n].to_string();
    let after = lstrip(&t2[n..]);
    if !after.starts_with('(') {
        return None;
    }
    let end = s.len() - after.len() + 1;
    Some((visibility, name, end))
}

/// `^\^bb\d*(?:\((.*)\))?\s*:\s*$` -> the arguments' text (None: not a block line).
pub(crate) fn block_line(s: &str) -> Option<&str> {
    let rest = s.strip_prefix("^bb")?;
    let d = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
    let rest = &rest[d..];
    if rest.starts_with('(') {
        let body = rstrip(rstrip(rest).strip_suffix(':')?);
        return (body.len() >= 2 && body.ends_with(')')).then(|| &body[1..body.len() - 1]);
    }
    (strip(rest) == ":").then_some("")
}

/// `%a, %b:2 = ` at the start of an operation: the results and the length of that text.
pub(crate) fn results(s: &str) -> Option<(Vec<(String, usize)>, usize)> {
    let mut out = Vec::new();
    let mut t = s;
    loop {
        let r = t.strip_prefix('%')?;
        let n = r.find(|c: char| !name_char(c)).unwrap_or(r.len());
        if n == 0 {
            return None;
        }
        let name = format!("%{}", &r[..n]);
        let mut r = &r[n..];
        let mut count = 1;
        if let Some(c) = r.strip_prefix(':') {
            let k = c.find(|ch: char| !ch.is_ascii_digit()).unwrap_or(c.len());
            if k > 0 {
                count = c[..k].parse().unwrap_or(usize::MAX);
                r = &c[k..];
            }
        }
        out.push((name, count));
        let after = lstrip(r);
        if let Some(next) = after.strip_prefix(',') {
            let next = lstrip(next);
            if next.starts_with('%') {
                t = next;
                continue;
            }
            return None;
        }
        let eq = after.strip_prefix('=')?;
        let end = s.len() - lstrip(eq).len();
        return Some((out, end));
    }
}
