//! MLIR's syntax is free of line layout: hand-written tests, `mlir-opt` output, tools that wrap
//! long lines and users who reformat a module spread an operation, a signature or an alias over
//! lines. This pass joins each statement's lines onto its first line (the others left blank, so
//! that lines keep their numbers and errors name the line where the construct starts), by the
//! language's own rules: brackets `()[]<>{}` balanced outside `"..."` strings (with escapes; a
//! string never spans lines) and `//` comments; a `{` that ends a line opens a region (a statement
//! of its own) unless `=` precedes it or an attribute entry `name = ...` follows; a line ending in `,` `=` `->` `:`
//! or followed by one starting with `->` `:` `(` ... or `name =` continues. The line reader then runs unchanged.

use std::borrow::Cow;

use crate::parse::stablehlo::text::{lstrip, rstrip, strip};

/// The bytes `feed` looks at (in a string or out of it).
const SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let mut k = 0;
    let bytes = b"\"\\/()[]<>{}";
    while k < bytes.len() {
        t[bytes[k] as usize] = true;
        k += 1;
    }
    t
};

/// The line's code (before a `//` comment outside strings), and its brackets fed to `stack`.
/// Returns the code and whether its last code character is an unmatched `{`.
fn feed<'s>(line: &'s str, stack: &mut Vec<u8>) -> (&'s str, bool) {
    let b = line.as_bytes();
    let (mut i, mut in_str, mut end) = (0, false, b.len());
    let mut last_open_brace = usize::MAX; // stack depth at which the latest `{` was pushed
    while i < b.len() {
        let c = b[i];
        if !SPECIAL[c as usize] {
            i += 1; // most bytes (names, numbers, spaces) mean nothing here: skip them fast
            continue;
        }
        if in_str {
            match c {
                b'\\' => i += 1,
                b'"' => in_str = false,
                _ => {}
            }
        } else {
            match c {
                b'"' => in_str = true,
                b'/' if b.get(i + 1) == Some(&b'/') => {
                    end = i;
                    break;
                }
                b'(' | b'[' | b'<' => stack.push(c),
                b'{' => {
                    stack.push(c);
                    last_open_brace = stack.len();
                }
                b'>' if i > 0 && b[i - 1] == b'-' => {}
                b')' | b']' | b'>' | b'}' => {
                    let open = match c {
                        b')' => b'(',
                        b']' => b'[',
                        b'>' => b'<',
                        _ => b'{',
                    };
                    // a stray `<` (never closed) does not hide the bracket that closes here
                    let mut d = stack.len();
                    while d > 0 && stack[d - 1] != open && stack[d - 1] == b'<' {
                        d -= 1;
                    }
                    if d > 0 && stack[d - 1] == open {
                        stack.truncate(d - 1);
                    }
                }
                _ => {}
            }
        }
        i += 1;
    }
    let code = rstrip(&line[..end]);
    // `name = {` opens a dictionary, never a region
    let value = |before: &str| rstrip(before).ends_with('=');
    let brace_last = code.strip_suffix('{').is_some_and(|before| !value(before))
        && stack.len() == last_open_brace
        && stack.last() == Some(&b'{');
    (code, brace_last)
}

/// `name = ...`: an attribute entry (an operation never starts so).
fn attribute_entry(s: &str) -> bool {
    let n = s
        .bytes()
        .take_while(|c| c.is_ascii_alphanumeric() || b"_.$-".contains(c))
        .count();
    n > 0
        && !s.as_bytes()[0].is_ascii_digit()
        && s[n..]
            .trim_start()
            .strip_prefix('=')
            .is_some_and(|r| !r.starts_with('='))
}

fn continues_after(code: &str, first: &str) -> bool {
    (code.ends_with(',') && !first.starts_with('}'))
        || code.ends_with('=')
        || code.ends_with("->")
        || (code.ends_with(':') && !first.starts_with('^'))
}

fn continues_before(next: &str) -> bool {
    next.starts_with("->")
        || next.starts_with("attributes")
        || attribute_entry(next)
        || next.starts_with("loc(")
        || matches!(
            next.as_bytes().first(),
            Some(b':' | b'(' | b'[' | b'<' | b'=' | b',' | b')' | b']' | b'>' | b'{')
        )
}

/// The next line from `from` that is not blank or a comment: its index and its text stripped.
fn next_meaningful<'s>(lines: &'s [Cow<'_, str>], from: usize) -> Option<(usize, &'s str)> {
    (from..lines.len()).find_map(|j| {
        let t = strip(&lines[j]);
        (!t.is_empty() && !t.starts_with("//")).then_some((j, t))
    })
}

/// Joins each statement spread over lines onto its first line (see the module's comment).
pub(crate) fn join_statements(lines: &mut [Cow<'_, str>]) {
    let mut stack: Vec<u8> = Vec::new();
    let mut start = next_meaningful(lines, 0).map(|(k, _)| k);
    while let Some(k) = start {
        start = None;
        stack.clear();
        let (code, brace_last) = feed(&lines[k], &mut stack);
        let (mut code_len, mut brace_last, mut last) = (code.len(), brace_last, k);
        let mut joined: Option<String> = None;
        while let Some((next, nxt)) = next_meaningful(lines, last + 1) {
            let (first, cur) = match joined.as_deref() {
                Some(s) => (lstrip(s), s),
                None => (lstrip(&lines[k]), &lines[k][..code_len]),
            };
            let open = if brace_last {
                attribute_entry(nxt)
            } else {
                !stack.is_empty()
            };
            if !(open || (!brace_last && (continues_after(rstrip(cur), first) || continues_before(nxt)))) {
                start = Some(next); // the next statement's first line
                break;
            }
            let mut s = joined
                .take()
                .unwrap_or_else(|| rstrip(&lines[k][..code_len]).to_string());
            let (code, b) = feed(nxt, &mut stack);
            // the printer's spacing: none inside brackets
            let glue = !(s.ends_with(['(', '[', '<', '{']) || code.starts_with([')', ']', '>', '}']));
            if glue {
                s.push(' ');
            }
            s.push_str(code);
            brace_last = b;
            for line in lines.iter_mut().take(next + 1).skip(last + 1) {
                *line = Cow::Borrowed("");
            }
            code_len = s.len();
            joined = Some(s);
            last = next;
        }
        if let Some(s) = joined {
            lines[k] = Cow::Owned(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn joined(text: &str) -> Vec<String> {
        let mut lines: Vec<Cow<str>> = text.split('\n').map(Cow::Borrowed).collect();
        join_statements(&mut lines);
        lines.iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn a_statement_joins_its_first_line_and_lines_keep_their_numbers() {
        let got = joined(
            "func.func @f(\n  %a: tensor<f32>) // c\n  -> tensor<f32> {\n  return %a\n\n  : tensor<f32>\n}",
        );
        assert_eq!(
            got,
            [
                "func.func @f(%a: tensor<f32>) -> tensor<f32> {",
                "",
                "",
                "  return %a : tensor<f32>",
                "",
                "",
                "}"
            ]
        );
    }

    #[test]
    fn a_region_opens_a_statement_but_a_dictionary_continues() {
        let got = joined("  %0 = \"op\"(%a) ({\n  ^bb0(%x: tensor<f32>):\n  })\n  {\n    k = 1\n  } : (tensor<f32>) -> tensor<f32>");
        assert_eq!(
            got[..3],
            [
                "  %0 = \"op\"(%a) ({",
                "  ^bb0(%x: tensor<f32>):",
                "  }) {k = 1} : (tensor<f32>) -> tensor<f32>"
            ]
        );
        assert_eq!(
            joined("  window = {\n  stride = [4]\n  }")[0],
            "  window = {stride = [4]}"
        );
    }

    #[test]
    fn strings_and_comments_hide_brackets() {
        let got = joined("  %0 = op \"(//\" // (\n  %1 = op");
        assert_eq!(got, ["  %0 = op \"(//\" // (", "  %1 = op"]);
    }
}
