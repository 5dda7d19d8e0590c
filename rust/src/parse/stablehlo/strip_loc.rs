//! An operation's trailing location taken apart from its text: `text loc(...)`, and MLIR's
//! pretty debug form (torch_xla's `XLA_SAVE_TENSORS_FMT=stablehlo`) that writes locations without
//! `loc(...)` after the type: `"aten__add"(#loc5)`, `[unknown]`, `#loc3`, `file.py:11:0`, a call
//! site `#loc3 at #loc4` (the reference's `_PRETTY_LOC`).

use crate::parse::stablehlo::text::{depth, digits, is_space, is_word, matching, rstrip};

/// `text loc(...)` -> (`text`, `loc(...)`); text without a trailing location is kept whole.
pub(crate) fn strip_loc(s: &str) -> (&str, &str) {
    let s = rstrip(s);
    if let Some((start, at)) = pretty_loc(s) {
        let loc = &s[at..];
        if !loc.starts_with("loc(") && depth(&s[..start]) == 0 {
            return (rstrip(&s[..start]), loc);
        }
    }
    if !s.ends_with(')') {
        return (s, "");
    }
    let b = s.as_bytes();
    let mut end = s.len();
    while let Some(k) = s[..end].rfind("loc(") {
        let boundary = k == 0 || {
            let prev = s[..k].chars().next_back().unwrap_or(' ');
            !(prev.is_alphanumeric() || prev == '_' || prev == '.')
        };
        if boundary && matching(s, k + 3) == Some(b.len() - 1) {
            return (rstrip(&s[..k]), &s[k..]);
        }
        // `rfind("loc(", 0, k)`: the last one wholly before k
        end = k;
    }
    (s, "")
}

/// The leftmost whitespace run after which the rest is one pretty location: (run start, rest).
/// Without a token `at` (a call site), only a rest that starts with `"` or `fused`, or the last
/// token, can be one: those are tried, left to right, without listing the tokens.
fn pretty_loc(s: &str) -> Option<(usize, usize)> {
    if !s.is_ascii() {
        return pretty_loc_chars(s);
    }
    // ASCII: Python's whitespace is `\t`-`\r`, `\x1c`-`\x1f` and the space, one byte each.
    let b = s.as_bytes();
    let ws = |c: u8| matches!(c, b'\t'..=b'\r' | 0x1c..=0x1f | b' ');
    let callsite = (1..b.len().saturating_sub(2)).any(|k| b[k] == b'a' && b[k + 1] == b't' && ws(b[k - 1]) && ws(b[k + 2]));
    if callsite {
        return pretty_loc_tokens(s);
    }
    let last = b.iter().rposition(|&c| ws(c)).map(|k| k + 1);
    let mut run: Option<usize> = None;
    for (k, &c) in b.iter().enumerate() {
        if ws(c) {
            run.get_or_insert(k);
            continue;
        }
        let Some(r) = run.take() else { continue };
        let rest = &s[k..];
        if (c == b'"' || rest.starts_with("fused") || Some(k) == last) && one_location(rest) {
            return Some((r, k));
        }
    }
    None
}

/// `pretty_loc` of text beyond ASCII (whitespace of several bytes).
fn pretty_loc_chars(s: &str) -> Option<(usize, usize)> {
    let callsite = s.match_indices("at").any(|(k, _)| {
        s[..k].chars().next_back().is_some_and(is_space) && s[k + 2..].chars().next().is_some_and(is_space)
    });
    if callsite {
        return pretty_loc_tokens(s);
    }
    let last = s.rfind(is_space).map(|k| k + s[k..].chars().next().map_or(1, |c| c.len_utf8()));
    let mut run: Option<usize> = None;
    for (k, c) in s.char_indices() {
        if is_space(c) {
            run.get_or_insert(k);
            continue;
        }
        let Some(r) = run.take() else { continue };
        let rest = &s[k..];
        if (c == '"' || rest.starts_with("fused") || Some(k) == last) && one_location(rest) {
            return Some((r, k));
        }
    }
    None
}

/// `pretty_loc` by the list of tokens, where a call site may be the location.
fn pretty_loc_tokens(s: &str) -> Option<(usize, usize)> {
    // tokens: (start, end) of the runs of non-space text
    let mut toks: Vec<(usize, usize)> = Vec::new();
    let mut runs: Vec<usize> = Vec::new(); // the whitespace run before each token (token 0: none)
    let mut cur: Option<usize> = None;
    let mut ws: Option<usize> = None;
    for (k, c) in s.char_indices() {
        if is_space(c) {
            if let Some(a) = cur.take() {
                toks.push((a, k));
            }
            ws.get_or_insert(k);
        } else if cur.is_none() {
            cur = Some(k);
            runs.push(ws.take().unwrap_or(usize::MAX));
        }
    }
    if let Some(a) = cur {
        toks.push((a, s.len()));
    }
    let n = toks.len();
    // valid[t]: tokens t.. are `X at Y (at Z)*`
    let mut callsite = vec![false; n + 2];
    for t in (0..n).rev() {
        let left = n - t;
        if left >= 3 && &s[toks[t + 1].0..toks[t + 1].1] == "at" {
            callsite[t] = left == 3 || callsite[t + 2];
        }
    }
    for t in 0..n {
        let run = runs[t];
        if run == usize::MAX {
            continue;
        }
        let at = toks[t].0;
        if callsite[t] || one_location(&s[at..]) {
            return Some((run, at));
        }
    }
    None
}

/// The alternatives of the reference's `_PRETTY_LOC` but the call site, matching all of `t`.
fn one_location(t: &str) -> bool {
    if let Some(rest) = t.strip_prefix('"') {
        let b = rest.as_bytes();
        let mut i = 0;
        let close = loop {
            match b.get(i) {
                None => return false,
                Some(b'"') => break i,
                Some(b'\\') if i + 1 < b.len() && b[i + 1] != b'\n' => i += 2,
                Some(b'\\') => return false,
                Some(_) => i += 1,
            }
        };
        let after = &rest[close + 1..];
        return after.is_empty() || (after.len() >= 2 && after.starts_with('(') && after.ends_with(')'));
    }
    if t == "[unknown]" {
        return true;
    }
    if let Some(d) = t.strip_prefix("#loc") {
        if d.bytes().all(|c| c.is_ascii_digit()) {
            return true;
        }
    }
    if let Some(rest) = t.strip_prefix("fused") {
        let rest = if rest.starts_with('<') {
            match rest.find('>') {
                Some(k) => &rest[k + 1..],
                None => rest,
            }
        } else {
            rest
        };
        if rest.len() >= 2 && rest.starts_with('[') && rest.ends_with(']') {
            return true;
        }
    }
    // `[\w./<>-]+:\d+:\d+`
    let Some(k) = t.find(':') else { return false };
    let name = &t[..k];
    if name.is_empty() || !name.chars().all(|c| is_word(c) || "./<>-".contains(c)) {
        return false;
    }
    let mut parts = t[k + 1..].split(':');
    let (a, b) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    parts.next().is_none() && digits(a) && digits(b)
}
