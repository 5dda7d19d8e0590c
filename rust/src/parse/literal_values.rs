//! One value of a constant literal, read as XLA's lexer reads it (an integer, a float with `inf`,
//! `nan` and `nan(0x..)`, a bool, a complex pair) and checked in range for its element type
//! (literal.rs checks the nesting around it).

use crate::parse::scan::{err, is_ident_char, Cursor, Result};

pub(crate) enum Value {
    Int(i128),
    Float(f64),
    /// `nan(0x..)`: a NaN with an explicit payload.
    Nan(u64),
    Bool,
    Complex(f64, f64),
}

pub(crate) fn is_integral(t: &str) -> bool {
    t.starts_with('s') || t.starts_with('u')
}

/// (largest finite value, half an ulp at it): a finite value at or past the sum rounds to
/// infinity (or NaN) in the narrow type, which XLA refuses as out of range.
pub(crate) fn float_limit(t: &str) -> Option<(f64, f64)> {
    Some(match t {
        "f16" => (65504.0, 16.0),
        "bf16" => (3.3895313892515355e38, 2f64.powi(119)),
        "f32" => (f32::MAX as f64, 2f64.powi(103)),
        "f8e5m2" | "f8e5m2fnuz" => (57344.0, 4096.0),
        "f8e4m3fn" => (448.0, 16.0),
        "f8e4m3b11fnuz" => (30.0, 1.0),
        "f8e4m3fnuz" | "f8e4m3" => (240.0, 8.0),
        "f8e3m4" => (15.5, 0.25),
        "f8e8m0fnu" => (2f64.powi(127), 2f64.powi(126)),
        "f4e2m1fn" => (6.0, 1.0),
        _ => return None,
    })
}

pub(crate) fn int_range(t: &str) -> (i128, i128) {
    let bits: u32 = t[1..].parse().unwrap_or(64);
    if t.starts_with('u') {
        (0, (1i128 << bits) - 1)
    } else {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    }
}

pub(crate) fn check_value(pos: usize, t: &str, v: &Value) -> Result<()> {
    match v {
        Value::Bool => {
            if t != "pred" {
                return err(pos, format!("expects a value of type {t}, got a boolean"));
            }
        }
        Value::Int(n) => {
            if t == "pred" {
                return Ok(());
            }
            if is_integral(t) {
                let (lo, hi) = int_range(t);
                // XLA reads the number as int64 and converts: -1 is u64's largest value.
                let n = if t == "u64" && *n < 0 {
                    *n + (1i128 << 64)
                } else {
                    *n
                };
                if n < lo || n > hi {
                    return err(
                        pos,
                        format!("value {n} is out of range for literal's primitive type {t}"),
                    );
                }
            } else if t.starts_with('c') {
                return err(
                    pos,
                    format!("expects a complex value for primitive type {t}"),
                );
            } else {
                return check_value(pos, t, &Value::Float(*n as f64));
            }
        }
        Value::Float(x) => {
            if is_integral(t) || t == "pred" {
                return err(pos, format!("expects integer for primitive type {t}"));
            }
            if t.starts_with('c') {
                return err(
                    pos,
                    format!("expects a complex value for primitive type {t}"),
                );
            }
            if x.is_finite() {
                if t == "f8e8m0fnu" && *x < 0.0 {
                    return err(
                        pos,
                        format!("value {x} is out of range for literal's primitive type {t}"),
                    );
                }
                if let Some((max, half_ulp)) = float_limit(t) {
                    if x.abs() >= max + half_ulp {
                        return err(
                            pos,
                            format!("value {x} is out of range for literal's primitive type {t}"),
                        );
                    }
                }
            }
        }
        Value::Nan(payload) => {
            if is_integral(t) || t == "pred" {
                return err(pos, format!("expects integer for primitive type {t}"));
            }
            let bits = match t {
                "f16" => 10,
                "bf16" => 7,
                "f32" | "c64" => 23,
                "f64" | "c128" => 52,
                "f8e5m2" => 2,
                "f8e4m3" => 3,
                "f8e3m4" => 4,
                _ => 0,
            };
            if bits == 0 {
                return err(pos, format!("tries to set NaN payload {payload:#x} to a literal, but {t} does not support payloads"));
            }
            if *payload >= 1u64 << bits {
                return err(
                    pos,
                    format!(
                        "NaN payload {payload:#x} is out of range for {t} ({:#x})",
                        (1u64 << bits) - 1
                    ),
                );
            }
        }
        Value::Complex(re, im) => {
            if !t.starts_with('c') {
                return err(
                    pos,
                    format!("unexpected '(' in literal: parentheses are only for complex {t}"),
                );
            }
            if t == "c64" {
                for (part, x) in [("real", re), ("imaginary", im)] {
                    if x.is_finite() && x.abs() > f32::MAX as f64 {
                        return err(pos, format!("{part} part {x} is out of range for c64"));
                    }
                }
            }
        }
    }
    Ok(())
}

/// Read one number token (`-`, digits, `.`, exponent, `inf`, `nan`, `nan(0x..)`).
pub(crate) fn number(c: &mut Cursor) -> Result<Value> {
    let start = c.pos;
    let b = c.b;
    let mut i = c.pos;
    let negative = i < b.len() && b[i] == b'-';
    if negative {
        i += 1;
    }
    let rest = &b[i..];
    let word_end = |n: usize| i + n >= b.len() || !is_ident_char(b[i + n]);
    if rest.starts_with(b"inf") && word_end(3) {
        c.pos = i + 3;
        return Ok(Value::Float(if negative {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        }));
    }
    if rest.starts_with(b"nan") {
        let mut j = i + 3;
        if j < b.len() && b[j] == b'(' {
            let p0 = j + 1;
            while j < b.len() && b[j] != b')' {
                j += 1;
            }
            let inside = &c.text[p0..j.min(b.len())];
            let Some(payload) = inside
                .strip_prefix("0x")
                .and_then(|h| u64::from_str_radix(h, 16).ok())
            else {
                return err(start, format!("malformed NaN payload {inside}"));
            };
            c.pos = (j + 1).min(b.len());
            return Ok(Value::Nan(payload));
        } else if !word_end(3) {
            return err(
                start,
                format!("unexpected token in a literal: {}", c.snippet(start)),
            );
        }
        c.pos = j.min(b.len());
        return Ok(Value::Float(f64::NAN));
    }
    let digits0 = i;
    let mut decimal = false;
    while i < b.len() {
        match b[i] {
            b'0'..=b'9' => i += 1,
            b'.' => {
                decimal = true;
                i += 1
            }
            b'e' | b'E' => {
                decimal = true;
                i += 1;
                if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
                    i += 1;
                }
            }
            _ => break,
        }
    }
    if i == digits0 || (i < b.len() && is_ident_char(b[i]) && b[i] != b'.' && b[i] != b'-') {
        return err(
            start,
            format!("unexpected token in a literal: {}", c.snippet(start)),
        );
    }
    let text = &c.text[start..i];
    c.pos = i;
    if decimal {
        match text.parse::<f64>() {
            Ok(x) if x.is_infinite() => {
                err(start, format!("constant {text} is out of range for double"))
            }
            Ok(x) => Ok(Value::Float(x)),
            Err(_) => err(start, format!("malformed number {text}")),
        }
    } else {
        match text.parse::<i128>() {
            Ok(n) if n >= i64::MIN as i128 && n <= u64::MAX as i128 => Ok(Value::Int(n)),
            _ => err(start, format!("integer {text} does not fit in 64 bits")),
        }
    }
}

pub(crate) fn scalar(c: &mut Cursor) -> Result<Value> {
    c.ws()?;
    if c.keyword("true") || c.keyword("false") {
        return Ok(Value::Bool);
    }
    if c.peek() == b'(' {
        let part = |c: &mut Cursor| -> Result<f64> {
            c.ws()?;
            Ok(match number(c)? {
                Value::Int(n) => n as f64,
                Value::Float(x) => x,
                _ => f64::NAN,
            })
        };
        c.pos += 1;
        let re = part(c)?;
        c.expect(b',', "',' in a complex value")?;
        let im = part(c)?;
        c.expect(b')', "')' closing a complex value")?;
        return Ok(Value::Complex(re, im));
    }
    number(c)
}
