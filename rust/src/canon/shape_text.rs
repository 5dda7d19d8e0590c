//! What the canonical rules read of a printed shape: `ir.strip_layout`, and the layouts, tuple
//! skeleton and array shapes of `hashes_reference.py` / the oracle (tests/canonical_reference.py), on the
//! text as printed.

use std::borrow::Cow;

use crate::canon::py_text::py_space;

/// `ir.strip_layout`: one pass of `\{[^{}]*\}` removed, then `/\*.*?\*/` comments.
pub fn strip_layout(shape: &str) -> Cow<'_, str> {
    if !shape.contains('{') && !shape.contains("/*") {
        return Cow::Borrowed(shape);
    }
    let b = shape.as_bytes();
    let mut first = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'{' {
            if let Some(j) = b[i + 1..].iter().position(|&c| c == b'{' || c == b'}') {
                if b[i + 1 + j] == b'}' {
                    i += j + 2;
                    continue;
                }
            }
        }
        first.push(b[i]);
        i += 1;
    }
    let mut out = Vec::with_capacity(first.len());
    let mut i = 0;
    while i < first.len() {
        if first[i] == b'/' && first.get(i + 1) == Some(&b'*') {
            let mut j = i + 2;
            let mut end = None;
            while j < first.len() && first[j] != b'\n' {
                if first[j] == b'*' && first.get(j + 1) == Some(&b'/') {
                    end = Some(j + 2);
                    break;
                }
                j += 1;
            }
            if let Some(e) = end {
                i = e;
                continue;
            }
        }
        out.push(first[i]);
        i += 1;
    }
    // Only ASCII bytes were removed, so the rest is still UTF-8.
    Cow::Owned(String::from_utf8(out).expect("utf-8"))
}

/// The oracle's `_tuple_skeleton`.
pub(crate) fn tuple_skeleton(shape: &str) -> String {
    if !shape.starts_with('(') {
        return String::new();
    }
    let s = strip_layout(shape);
    let b = s.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'[' {
            if let Some(j) = b[i + 1..].iter().position(|&c| c == b']') {
                i += j + 2;
                continue;
            }
        }
        if matches!(b[i], b'(' | b')' | b',') {
            out.push(b[i] as char);
        }
        i += 1;
    }
    out
}

/// The oracle's `layout_of`: the non-default layouts of a shape's arrays (`_ARRAY` matches), or "".
pub fn layout_of(shape: &str) -> String {
    if !shape.contains('{') {
        return String::new();
    }
    let b = shape.as_bytes();
    let lower = |c: u8| c.is_ascii_lowercase();
    let word = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let mut found: Vec<String> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !lower(b[i]) {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        while j < b.len() && word(b[j]) {
            j += 1;
        }
        let close = if b.get(j) == Some(&b'[') {
            b[j + 1..]
                .iter()
                .position(|&c| c == b']')
                .map(|k| j + 1 + k)
        } else {
            None
        };
        let Some(close) = close else {
            i += 1;
            continue;
        };
        let dims = &shape[j + 1..close];
        let mut end = close + 1;
        let mut layout = None;
        if b.get(end) == Some(&b'{') {
            if let Some(k) = b[end + 1..].iter().position(|&c| c == b'{' || c == b'}') {
                if b[end + 1 + k] == b'}' {
                    layout = Some(&shape[end..end + k + 2]);
                    end += k + 2;
                }
            }
        }
        match layout {
            None => found.push(String::new()),
            Some(lay) => {
                let rank = if dims.trim_matches(py_space).is_empty() {
                    0
                } else {
                    dims.matches(',').count() + 1
                };
                let default: Vec<String> = (0..rank).rev().map(|d| d.to_string()).collect();
                let default = format!("{{{}}}", default.join(","));
                let lay = lay.replace(' ', "");
                found.push(if lay == default { String::new() } else { lay });
            }
        }
        i = end;
    }
    if found.iter().any(|f| !f.is_empty()) {
        found.join(";")
    } else {
        String::new()
    }
}

/// The oracle's `declared_shapes`: `re.findall(r"[a-z][a-z0-9]*\[[^\]]*\]")` over the shape without
/// layout and spaces, sorted and joined by `,`.
pub(crate) fn declared_shapes(shape: &str) -> String {
    let text = strip_layout(shape).replace(' ', "");
    let b = text.as_bytes();
    let mut found: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_lowercase() {
            let mut j = i + 1;
            while j < b.len() && (b[j].is_ascii_lowercase() || b[j].is_ascii_digit()) {
                j += 1;
            }
            if j < b.len() && b[j] == b'[' {
                if let Some(k) = b[j + 1..].iter().position(|&c| c == b']') {
                    let end = j + 1 + k;
                    found.push(&text[i..=end]);
                    i = end + 1;
                    continue;
                }
            }
        }
        i += 1;
    }
    found.sort();
    found.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shape_text_rules() {
        // Expected values printed by the oracle's layout_of and _tuple_skeleton, and ir.strip_layout.
        let cases = [
            ("f32[4,8]{1,0}", "", "f32[4,8]", ""),
            ("f32[4,8]{0,1}", "{0,1}", "f32[4,8]", ""),
            ("(f32[2]{0}, s32[]) ", "", "(f32[2], s32[]) ", "(,)"),
            (
                "(f32[4,8]{0,1:T(8,128)S(1)}, /*index=1*/bf16[2,2]{1,0})",
                "{0,1:T(8,128)S(1)};",
                "(f32[4,8], bf16[2,2])",
                "(,)",
            ),
            ("f32[ 4 , 8 ]{ 0, 1 }", "{0,1}", "f32[ 4 , 8 ]", ""),
            (
                "(f32[2]{0}, (s32[3]{0}, u8[1,2]{0,1}))",
                ";;{0,1}",
                "(f32[2], (s32[3], u8[1,2]))",
                "(,(,))",
            ),
            ("f32[2,3", "", "f32[2,3", ""),
            ("x{a{b}c}", "", "x{ac}", ""),
        ];
        for (shape, layout, stripped, skeleton) in cases {
            assert_eq!(layout_of(shape), layout, "{shape}");
            assert_eq!(strip_layout(shape), stripped, "{shape}");
            assert_eq!(tuple_skeleton(shape), skeleton, "{shape}");
        }
    }
}
