//! Python's string rules where the canonical form's text depends on them.

use crate::canon::model::{Failure, R};

/// Python's `\s` (str.isspace).
pub(crate) fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

pub(crate) fn drop_spaces(s: &str) -> String {
    s.chars().filter(|&c| !py_space(c)).collect()
}

/// Python's `repr` of a tuple of ints.
pub(crate) fn repr_tuple<I: IntoIterator<Item = String>>(items: I) -> String {
    let items: Vec<String> = items.into_iter().collect();
    match items.len() {
        1 => format!("({},)", items[0]),
        _ => format!("({})", items.join(", ")),
    }
}

pub(crate) fn parse_int(s: &str) -> R<i64> {
    if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
        return Err(Failure::Fallback);
    }
    s.parse::<i64>().map_err(|_| Failure::Fallback)
}
