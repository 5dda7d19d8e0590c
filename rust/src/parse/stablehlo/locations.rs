//! MLIR locations -> the HLO metadata JAX's own export writes: `op_name` from the outermost name
//! (`"jit(f)/dot_general"(...)`), `source_file`/`source_line` from the first file location found
//! callee first (`callsite(callee at caller)`: the user's frame is the callee), through the
//! `#locN = loc(...)` alias table the printer writes after the module.

use std::collections::HashMap;

use crate::parse::stablehlo::text::{digits, is_space, lstrip, strip};

const DEPTH: usize = 64; // alias chains are short; a cycle must not loop

pub(crate) struct Locations {
    aliases: HashMap<String, String>,
    cache: HashMap<String, (String, String, String)>,
}

type Found = (String, String, String); // (op_name, source_file, source_line)

fn none() -> Found {
    (String::new(), String::new(), String::new())
}

/// `"..."` at the start of `s` (escapes kept): (its inside, the rest).
fn string_at(s: &str, dot_newline: bool) -> Option<(&str, &str)> {
    let rest = s.strip_prefix('"')?;
    let b = rest.as_bytes();
    let mut i = 0;
    loop {
        match b.get(i)? {
            b'"' => return Some((&rest[..i], &rest[i + 1..])),
            b'\\' => {
                let next = *b.get(i + 1)?;
                if next == b'\n' && !dot_newline {
                    return None;
                }
                i += 2;
            }
            _ => i += 1,
        }
    }
}

fn number(s: &str) -> String {
    s.parse::<u128>().map(|v| v.to_string()).unwrap_or_else(|_| s.to_string())
}

fn unescape(s: &str) -> String {
    if s.contains('\\') {
        s.replace("\\\"", "\"").replace("\\\\", "\\")
    } else {
        s.to_string()
    }
}

/// `^callsite\((.*)\s+at\s+(.*)\)$`: the last ` at ` splits callee from caller.
fn callsite(s: &str) -> Option<(&str, &str)> {
    let body = s.strip_prefix("callsite(")?.strip_suffix(')')?;
    for (p, _) in body.rmatch_indices("at") {
        let before = body[..p].chars().next_back().is_some_and(is_space);
        let after = body[p + 2..].chars().next().is_some_and(is_space);
        if before && after {
            let callee_end = p - body[..p].chars().next_back().map_or(0, |c| c.len_utf8());
            return Some((&body[..callee_end], lstrip(&body[p + 2..])));
        }
    }
    None
}

impl Locations {
    pub(crate) fn new(aliases: HashMap<String, String>) -> Self {
        Locations { aliases, cache: HashMap::new() }
    }

    /// (op_name, source_file, source_line) of `loc(...)`; empty where it has none.
    pub(crate) fn resolve(&mut self, loc: &str) -> Found {
        if loc.is_empty() {
            return none();
        }
        if let Some(got) = self.cache.get(loc) {
            return got.clone();
        }
        let got = self.walk(loc, 0);
        self.cache.insert(loc.to_string(), got.clone());
        got
    }

    fn walk(&self, loc: &str, depth: usize) -> Found {
        let mut s = strip(loc);
        if depth > DEPTH {
            return none();
        }
        if s.starts_with("loc(") && s.ends_with(')') && s.len() >= 5 {
            s = strip(&s[4..s.len() - 1]);
        }
        if let Some(d) = s.strip_prefix("#loc") {
            if d.bytes().all(|c| c.is_ascii_digit()) {
                return match self.aliases.get(s) {
                    Some(t) if !t.is_empty() => self.walk(t, depth + 1),
                    _ => none(),
                };
            }
        }
        if let Some((file, rest)) = string_at(s, false) {
            if let Some(r) = rest.strip_prefix(':') {
                let k = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
                if k > 0 && r[k..].strip_prefix(':').is_some_and(|t| t.starts_with(|c: char| c.is_ascii_digit())) {
                    return (String::new(), unescape(file), number(&r[..k]));
                }
            }
        }
        let mut parts = s.rsplitn(3, ':');
        if let (Some(col), Some(line), Some(file)) = (parts.next(), parts.next(), parts.next()) {
            if digits(col)
                && digits(line)
                && !file.is_empty()
                && !file.chars().any(|c| is_space(c) || "\"()#[".contains(c))
            {
                return (String::new(), file.to_string(), number(line));
            }
        }
        let pair = callsite(s).or_else(|| {
            if s.starts_with('"') {
                return None;
            }
            let k = s.find(is_space)?;
            let rest = lstrip(&s[k..]);
            let after = rest.strip_prefix("at")?;
            (k > 0 && after.starts_with(is_space)).then(|| (&s[..k], lstrip(after)))
        });
        if let Some((callee, caller)) = pair {
            let (_, mut f, mut ln) = self.walk(callee, depth + 1);
            if f.is_empty() {
                (_, f, ln) = self.walk(caller, depth + 1);
            }
            return (String::new(), f, ln);
        }
        if let Some((name, rest)) = string_at(s, true) {
            let r = lstrip(rest);
            if r.is_empty() {
                return (unescape(name), String::new(), String::new());
            }
            if r.len() >= 2 && r.starts_with('(') && r.ends_with(')') {
                let name = unescape(name);
                let (inner, f, ln) = self.walk(&r[1..r.len() - 1], depth + 1);
                return (if name.is_empty() { inner } else { name }, f, ln);
            }
        }
        if s.starts_with("fused") {
            if let Some(start) = s.find('[') {
                let end = s.rfind(']').unwrap_or(s.len().saturating_sub(1));
                let list = if start < end { &s[start + 1..end] } else { "" };
                for part in list.split(", ") {
                    let (name, f, ln) = self.walk(part, depth + 1);
                    if !f.is_empty() {
                        return (name, f, ln);
                    }
                }
            }
        }
        none()
    }
}
