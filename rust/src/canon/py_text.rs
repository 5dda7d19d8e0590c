//! Python's string rules where the canonical form's text depends on them, and the numbers it
//! reads from text as Python's `int()` does.

use crate::canon::model::{Failure, R};
use crate::canon::py_semantics::{decimal_value, is_digit};
use crate::parse::text::Inst;

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

/// `int(text)` as Python reads it (whitespace around, a sign, `_` between digits, any script's
/// decimal digits), where it is a number at all; past 64 bits it saturates.
pub(crate) fn python_int(text: &str) -> Option<i128> {
    let t = text.trim_matches(py_space);
    let (negative, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut value: i128 = 0;
    let mut previous_digit = false;
    for c in digits.chars() {
        if c == '_' && previous_digit {
            previous_digit = false;
            continue;
        }
        let d = decimal_value(c)?;
        value = value.saturating_mul(10).saturating_add(d as i128);
        previous_digit = true;
    }
    if !previous_digit {
        return None; // empty, or a trailing `_`
    }
    Some(if negative { -value } else { value })
}

/// `Instruction.parameter_number` (`int(payload)`): a number the core keeps (0 to 2**63 - 1),
/// else an error naming the parameter (Python's `int()` raises `ValueError`, or the number is not one).
pub(crate) fn parameter_number(ins: &Inst) -> R<i64> {
    match python_int(&ins.payload).map(i64::try_from) {
        Some(Ok(n)) if n >= 0 => Ok(n),
        _ => Err(Failure::Bad(
            format!(
                "parameter {} has number {:?}: expected a number from 0 to 2**63 - 1",
                ins.name, ins.payload
            ),
            ins.line,
        )),
    }
}

/// A get-tuple-element's `index` as the oracle reads it: None unless `index.isdigit()`, then
/// `int(index)` (saturated: past 64 bits it indexes no tuple either way). A digit `int()`
/// refuses (`²`) is an error naming the instruction.
pub(crate) fn gte_index(ins: &Inst, index: &str) -> R<Option<i64>> {
    if index.is_ascii() {
        if index.is_empty() || !index.bytes().all(|c| c.is_ascii_digit()) {
            return Ok(None);
        }
    } else if !index.chars().all(is_digit) {
        return Ok(None);
    }
    let mut value: i64 = 0;
    for c in index.chars() {
        let Some(d) = decimal_value(c) else {
            return Err(Failure::Bad(
                format!(
                    "get-tuple-element {} has index {index:?}: digits that are not a decimal number",
                    ins.name
                ),
                ins.line,
            ));
        };
        value = value.saturating_mul(10).saturating_add(d as i64);
    }
    Ok(Some(value))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_ints() {
        // int() of each, as Python 3.11 reads it (None: ValueError).
        assert_eq!(python_int(" 7 "), Some(7));
        assert_eq!(python_int("+1_0"), Some(10));
        assert_eq!(python_int("\u{661}\u{662}"), Some(12));
        assert_eq!(python_int("1__0"), None);
        assert_eq!(python_int("_1"), None);
        assert_eq!(python_int("1_"), None);
        assert_eq!(python_int("\u{b2}"), None);
        assert_eq!(python_int(""), None);
        assert_eq!(python_int("-3"), Some(-3));
    }
}
