//! `/* ... */` and `// ...` comments taken out of a span of HLO text that a later reading sees
//! whole (an attribute's value, a layout, an implied computation's text), strings kept intact.

use crate::parse::scan::find;

/// Whether `/*` or `//` occurs in `b`: one pass over the bytes. It runs on every instruction's
/// shape, where two substring searches (`str::contains`) each paid a searcher's set-up.
fn opens_comment(b: &[u8]) -> bool {
    let mut rest = b;
    while let Some(i) = rest.iter().position(|&c| c == b'/') {
        if matches!(rest.get(i + 1), Some(b'*' | b'/')) {
            return true;
        }
        rest = &rest[i + 1..];
    }
    false
}

/// Remove `/* ... */` comments from a span of source text (strings kept intact). Cheap when the
/// span has none, which is nearly always.
pub fn strip_comments(s: &str) -> std::borrow::Cow<'_, str> {
    if !opens_comment(s.as_bytes()) {
        return std::borrow::Cow::Borrowed(s);
    }
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let mut last = 0;
    while i < b.len() {
        match b[i] {
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
            }
            b'/' if i + 1 < b.len() && b[i + 1] == b'*' => {
                out.push_str(&s[last..i]);
                i = match find(&b[i + 2..], b"*/") {
                    Some(j) => i + 2 + j + 2,
                    None => b.len(),
                };
                last = i;
            }
            b'/' if i + 1 < b.len() && b[i + 1] == b'/' => {
                out.push_str(&s[last..i]);
                while i < b.len() && b[i] != b'\n' && b[i] != b'\r' {
                    i += 1;
                }
                last = i;
            }
            _ => i += 1,
        }
    }
    out.push_str(&s[last.min(s.len())..]);
    std::borrow::Cow::Owned(out)
}
