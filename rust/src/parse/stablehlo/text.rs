//! Text helpers every stage shares, with Python's meaning: `str.strip()`'s whitespace, slices
//! counted in characters, `repr()` of a string, and bracket scanning (`split_top`, `matching`):
//! strings are skipped whole and `->` is an arrow, not a closing `>`.

/// Python's `str.isspace()` (what `strip()` and the reference's `\s` take).
pub(crate) fn is_space(c: char) -> bool {
    matches!(c, '\t'..='\r' | '\x1c'..='\x1f' | ' ' | '\u{85}' | '\u{a0}' | '\u{1680}')
        || ('\u{2000}'..='\u{200a}').contains(&c)
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}')
}

pub(crate) fn strip(s: &str) -> &str {
    s.trim_matches(is_space)
}

pub(crate) fn rstrip(s: &str) -> &str {
    s.trim_end_matches(is_space)
}

pub(crate) fn lstrip(s: &str) -> &str {
    s.trim_start_matches(is_space)
}

/// `\d+` matched whole: not empty, ASCII digits only.
pub(crate) fn digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit())
}

/// `\w` of Python's `re` on text: a letter, digit or `_`.
pub(crate) fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// `s[:n]` in characters.
pub(crate) fn head(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((k, _)) => &s[..k],
        None => s,
    }
}

/// Python's `repr()` of a string.
pub(crate) fn repr(s: &str) -> String {
    let quote = if s.contains('\'') && !s.contains('"') { '"' } else { '\'' };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() && (c as u32) < 0x100 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if c.is_control() => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

#[derive(PartialEq, Eq, Clone, Copy)]
pub(crate) enum Tok {
    Str,
    Sep,
    Arrow,
    Open,
    Close,
}

/// The end of the string literal starting at `b[p]` (`"`): after its closing quote, or where the
/// text (or a trailing lone backslash) ends it.
fn str_end(b: &[u8], p: usize) -> usize {
    let mut i = p + 1;
    while i < b.len() {
        match b[i] {
            b'"' => return i + 1,
            b'\\' => {
                if i + 1 < b.len() && b[i + 1] != b'\n' {
                    i += 2;
                } else {
                    return i;
                }
            }
            _ => i += 1,
        }
    }
    b.len()
}

/// Bytes a token can start with (a string, `->`, a bracket); a separator's first byte is checked
/// apart.
const fn token_starts() -> [bool; 256] {
    let mut t = [false; 256];
    let special = b"\"-([{<)]}>";
    let mut k = 0;
    while k < special.len() {
        t[special[k] as usize] = true;
        k += 1;
    }
    t
}

static TOKEN_STARTS: [bool; 256] = token_starts();

/// The next token at or after `p`: a string, `sep`, `->`, or a bracket.
pub(crate) fn next_tok(b: &[u8], mut p: usize, sep: &[u8]) -> Option<(usize, usize, Tok)> {
    let first = sep.first().copied();
    while p < b.len() {
        let c = b[p];
        if !TOKEN_STARTS[c as usize] && Some(c) != first {
            p += 1;
            continue;
        }
        if c == b'"' {
            return Some((p, str_end(b, p).min(b.len()), Tok::Str));
        }
        if Some(c) == first && b[p..].starts_with(sep) {
            return Some((p, p + sep.len(), Tok::Sep));
        }
        if c == b'-' && b.get(p + 1) == Some(&b'>') {
            return Some((p, p + 2, Tok::Arrow));
        }
        match c {
            b'(' | b'[' | b'{' | b'<' => return Some((p, p + 1, Tok::Open)),
            b')' | b']' | b'}' | b'>' => return Some((p, p + 1, Tok::Close)),
            _ => p += 1,
        }
    }
    None
}

/// Index of the bracket closing the one at `start`; None when the text ends first.
pub(crate) fn matching(s: &str, start: usize) -> Option<usize> {
    let b = s.as_bytes();
    let mut depth = 0i64;
    let mut p = start;
    while let Some((a, e, t)) = next_tok(b, p, b"") {
        match t {
            Tok::Open => depth += 1,
            Tok::Close => {
                depth -= 1;
                if depth == 0 {
                    return Some(a);
                }
            }
            _ => {}
        }
        p = e;
    }
    None
}

/// The index after the string literal that starts at `i`.
pub(crate) fn string_end(s: &str, i: usize) -> usize {
    let b = s.as_bytes();
    match b.get(i) {
        Some(b'"') => str_end(b, i),
        Some(b'-') if b.get(i + 1) == Some(&b'>') => i + 2,
        Some(b'(' | b'[' | b'{' | b'<' | b')' | b']' | b'}' | b'>') => i + 1,
        _ => s.len(),
    }
}

/// Brackets opened and not closed (negative: more closed).
pub(crate) fn depth(s: &str) -> i64 {
    let b = s.as_bytes();
    let mut d = 0i64;
    let mut p = 0;
    while let Some((_, e, t)) = next_tok(b, p, b"") {
        match t {
            Tok::Open => d += 1,
            Tok::Close => d -= 1,
            _ => {}
        }
        p = e;
    }
    d
}

/// Split at `sep` outside brackets and strings, each part stripped; empty text gives no parts.
pub(crate) fn split_top<'a>(s: &'a str, sep: &str) -> Vec<&'a str> {
    let b = s.as_bytes();
    let sb = sep.as_bytes();
    let mut parts = Vec::new();
    let (mut d, mut start, mut p) = (0i64, 0usize, 0usize);
    while let Some((a, e, t)) = next_tok(b, p, sb) {
        p = e;
        match t {
            Tok::Sep if d == 0 => {
                parts.push(strip(&s[start..a]));
                start = e;
            }
            Tok::Str | Tok::Arrow => {}
            Tok::Sep if &b[a..e] == b"->" => {}
            _ => {
                for &ch in &b[a..e] {
                    match ch {
                        b'(' | b'[' | b'{' | b'<' => d += 1,
                        b')' | b']' | b'}' | b'>' => d -= 1,
                        _ => {}
                    }
                }
            }
        }
    }
    let last = strip(&s[start..]);
    if !last.is_empty() || !parts.is_empty() {
        parts.push(last);
    }
    parts
}

pub(crate) fn comma(s: &str) -> Vec<&str> {
    split_top(s, ",")
}

/// `s[1:-1]` in characters (empty when shorter).
pub(crate) fn inner(s: &str) -> &str {
    let mut it = s.char_indices();
    let start = match it.next() {
        Some((_, c)) => c.len_utf8(),
        None => return "",
    };
    match s.char_indices().next_back() {
        Some((k, _)) if k >= start => &s[start..k],
        _ => "",
    }
}

/// `s.partition(sep)`: (before, found, after).
pub(crate) fn partition<'a>(s: &'a str, sep: &str) -> (&'a str, bool, &'a str) {
    match s.find(sep) {
        Some(k) => (&s[..k], true, &s[k + sep.len()..]),
        None => (s, false, ""),
    }
}

/// `re.findall(r"-?\d+", s)` as integers.
pub(crate) fn find_ints(s: &str) -> Vec<i64> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        if b[i] == b'-' && b.get(i + 1).is_some_and(|c| c.is_ascii_digit()) {
            i += 1;
        }
        if b[i].is_ascii_digit() {
            let j = i + b[i..].iter().take_while(|c| c.is_ascii_digit()).count();
            out.push(s[start..j].parse::<i64>().unwrap_or(i64::MAX));
            i = j;
        } else {
            i = start + 1;
        }
    }
    out
}
