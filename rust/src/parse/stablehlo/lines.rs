//! The text's lines as the structure reader walks them: blank lines and `//` comments skipped,
//! and a pretty call site's `at #locN` lines joined to the line before (left blank, so that lines
//! keep their numbers), then each statement over several lines joined onto its first (statements.rs).

use std::borrow::Cow;

use crate::parse::stablehlo::statements::join_statements;
use crate::parse::stablehlo::text::{is_space, lstrip, strip};

pub(crate) struct Lines<'a> {
    lines: Vec<Cow<'a, str>>,
    /// The next line's index (so, after `next_meaningful`, the 1-based number of the line read).
    pub i: usize,
}

/// `^\s+at\s`
fn callsite_line(s: &str) -> bool {
    let t = lstrip(s);
    t.len() < s.len() && t.strip_prefix("at").is_some_and(|r| r.starts_with(is_space))
}

impl<'a> Lines<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        let mut lines: Vec<Cow<'a, str>> = text.split('\n').map(Cow::Borrowed).collect();
        for k in 1..lines.len() {
            if callsite_line(&lines[k]) {
                let mut j = k - 1;
                while j > 0 && strip(&lines[j]).is_empty() {
                    j -= 1;
                }
                let add = format!(" {}", strip(&lines[k]));
                lines[j].to_mut().push_str(&add);
                lines[k] = Cow::Borrowed("");
            }
        }
        join_statements(&mut lines);
        Lines { lines, i: 0 }
    }

    pub(crate) fn len(&self) -> usize {
        self.lines.len()
    }

    pub(crate) fn line(&self, k: usize) -> &str {
        &self.lines[k]
    }

    /// The next line that is not blank or a comment, stripped (borrowed from the text unless a
    /// call site was joined to it), and its number.
    pub(crate) fn next_meaningful(&mut self) -> Option<(Cow<'a, str>, usize)> {
        while self.i < self.lines.len() {
            let k = self.i;
            self.i += 1;
            let s = strip(&self.lines[k]);
            if s.is_empty() || s.starts_with("//") {
                continue;
            }
            return Some(match &self.lines[k] {
                Cow::Borrowed(b) => (Cow::Borrowed(strip(b)), self.i),
                Cow::Owned(o) => (Cow::Owned(strip(o).to_string()), self.i),
            });
        }
        None
    }

    pub(crate) fn peek(&self) -> &str {
        for k in self.i..self.lines.len() {
            let s = strip(&self.lines[k]);
            if !s.is_empty() && !s.starts_with("//") {
                return s;
            }
        }
        ""
    }
}
