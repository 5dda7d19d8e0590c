//! Constant literals, checked as XLA's `ParseDenseLiteral` checks them: nesting equal to the
//! rank, exactly the shape's element count per dimension (`{...}` elides a whole constant), and
//! every value in range for the element type. Values themselves are not kept.

use crate::parse::scan::{err, is_ident_char, Cursor, Result};
use crate::parse::shape::{element_type_name, Shape};

enum Value {
    Int(i128),
    Float(f64),
    /// `nan(0x..)`: a NaN with an explicit payload.
    Nan(u64),
    Bool,
    Complex(f64, f64),
}

fn is_integral(t: &str) -> bool {
    t.starts_with('s') || t.starts_with('u')
}

/// (largest finite value, half an ulp at it): a finite value at or past the sum rounds to
/// infinity (or NaN) in the narrow type, which XLA refuses as out of range.
fn float_limit(t: &str) -> Option<(f64, f64)> {
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

fn int_range(t: &str) -> (i128, i128) {
    let bits: u32 = t[1..].parse().unwrap_or(64);
    if t.starts_with('u') {
        (0, (1i128 << bits) - 1)
    } else {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    }
}

fn check_value(pos: usize, t: &str, v: &Value) -> Result<()> {
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
fn number(c: &mut Cursor) -> Result<Value> {
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

fn scalar(c: &mut Cursor) -> Result<Value> {
    c.ws()?;
    if c.keyword("true") || c.keyword("false") {
        return Ok(Value::Bool);
    }
    if c.peek() == b'(' {
        c.pos += 1;
        c.ws()?;
        let re = match number(c)? {
            Value::Int(n) => n as f64,
            Value::Float(x) => x,
            _ => f64::NAN,
        };
        c.expect(b',', "',' in a complex value")?;
        c.ws()?;
        let im = match number(c)? {
            Value::Int(n) => n as f64,
            Value::Float(x) => x,
            _ => f64::NAN,
        };
        c.expect(b')', "')' closing a complex value")?;
        return Ok(Value::Complex(re, im));
    }
    number(c)
}

/// A literal that states its own shape: `f32[2] {1, 2}` or a tuple `(s32[] 1, pred[] 0)`.
pub fn check_shaped_literal(c: &mut Cursor, depth: usize) -> Result<()> {
    c.ws()?;
    crate::parse::stack::guard(c.pos)?;
    if depth > crate::parse::shape::MAX_DEPTH {
        return err(c.pos, "maximum nesting depth exceeded in a literal");
    }
    if c.eat(b'(')? {
        if c.eat(b')')? {
            return Ok(());
        }
        loop {
            check_shaped_literal(c, depth + 1)?;
            if c.eat(b',')? {
                continue;
            }
            return c.expect(b')', "')' closing a tuple literal");
        }
    }
    let shape = crate::parse::shape::parse_shape(c)?;
    check_literal(c, &shape)
}

/// Check a literal of `shape` at the cursor; stops before the closing `)` of `constant(...)`.
pub fn check_literal(c: &mut Cursor, shape: &Shape) -> Result<()> {
    crate::parse::stack::guard(c.pos)?;
    match shape {
        Shape::Tuple(elements) => {
            c.expect(b'(', "'(' in front of tuple literal elements")?;
            if !c.eat(b')')? {
                for (i, e) in elements.iter().enumerate() {
                    if i > 0 {
                        c.expect(b',', "',' between tuple literal elements")?;
                    }
                    check_literal(c, e)?; // depth bounded: tuple shapes nest at most MAX_DEPTH
                }
                c.expect(b')', "')' closing a tuple literal")?;
            }
            Ok(())
        }
        Shape::Array(t, dims, _) => dense(c, element_type_name(*t), dims),
    }
}

fn dense(c: &mut Cursor, t: &str, dims: &[i64]) -> Result<()> {
    if t == "token" || t == "opaque" {
        return err(c.pos, format!("a constant cannot have type {t}"));
    }
    let rank = dims.len();
    let mut seen = vec![0i64; rank];
    let mut level = 0usize;
    loop {
        c.ws()?;
        let pos = c.pos;
        match c.peek() {
            b'{' => {
                level += 1;
                if level > rank {
                    return err(
                        pos,
                        format!("expects nested array in rank {rank}, but sees larger"),
                    );
                }
                if level > 1 {
                    seen[level - 2] += 1;
                    if seen[level - 2] > dims[level - 2] {
                        return err(
                            pos,
                            format!("expects {} elements, but sees more", dims[level - 2]),
                        );
                    }
                }
                c.pos += 1;
            }
            b'}' => {
                if level == 0 {
                    return err(pos, "unexpected '}' in a literal");
                }
                level -= 1;
                if seen[level] != dims[level] {
                    return err(
                        pos,
                        format!(
                            "expects {} elements in a constant, but sees {}",
                            dims[level], seen[level]
                        ),
                    );
                }
                seen[level] = 0;
                c.pos += 1;
            }
            b',' => c.pos += 1,
            b'.' if c.b[pos..].starts_with(b"...") => {
                if level != 1 {
                    return err(
                        pos,
                        format!("expects `...` at nest level 1, but sees it at nest level {level}"),
                    );
                }
                seen[0] = dims[0];
                c.pos += 3;
            }
            _ => {
                if rank > 0 && level == 0 {
                    // One scalar for the whole array (`f32[8,2048] constant(0)`): XLA fills the
                    // array with it (hlo_diff's tests are written so).
                    let v = scalar(c)?;
                    return check_value(pos, t, &v);
                }
                if rank > 0 {
                    if level != rank {
                        return err(
                            pos,
                            format!("expects nested array in rank {rank}, but sees {level}"),
                        );
                    }
                    seen[rank - 1] += 1;
                    if seen[rank - 1] > dims[rank - 1] {
                        return err(
                            pos,
                            format!(
                                "expects {} elements on the minor-most dimension, but sees more",
                                dims[rank - 1]
                            ),
                        );
                    }
                }
                let v = scalar(c)?;
                check_value(pos, t, &v)?;
            }
        }
        if level == 0 {
            return Ok(());
        }
    }
}
