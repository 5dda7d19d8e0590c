//! MLIR types and constants as HLO writes them: `tensor<4x8xf32>` -> `f32[4,8]`, `i1` -> `pred`,
//! `tuple<...>` -> `(...)`, `!stablehlo.token` -> `token[]`; `dense<...>` -> an HLO literal.
//!
//! The element types are those xla/hlo/translate/mhlo_to_hlo/type_to_shape.cc maps; anything else
//! (dynamic or bounded dimensions, quantized types, encodings) is refused by name.

use crate::parse::stablehlo::error::{stack_guard, type_err, value_error, Error, R, MAX_NESTING};
use crate::parse::stablehlo::numbers::{f16_value, float_text, py_float, py_int};
use crate::parse::stablehlo::text::{comma, inner, split_top, strip};

/// Elements a splat constant may expand to in the HLO literal.
pub(crate) const MAX_SPLAT: i128 = 1 << 22;

pub(crate) fn element(mlir: &str) -> Option<&'static str> {
    Some(match mlir {
        "i1" => "pred",
        "i2" => "s2",
        "i4" => "s4",
        "i8" | "si8" => "s8",
        "i16" | "si16" => "s16",
        "i32" | "si32" => "s32",
        "i64" | "si64" => "s64",
        "ui2" => "u2",
        "ui4" => "u4",
        "ui8" => "u8",
        "ui16" => "u16",
        "ui32" => "u32",
        "ui64" => "u64",
        "f16" => "f16",
        "bf16" => "bf16",
        "f32" => "f32",
        "f64" => "f64",
        "complex<f32>" => "c64",
        "complex<f64>" => "c128",
        "f8E5M2" => "f8e5m2",
        "f8E4M3FN" => "f8e4m3fn",
        "f8E4M3B11FNUZ" => "f8e4m3b11fnuz",
        "f8E5M2FNUZ" => "f8e5m2fnuz",
        "f8E4M3FNUZ" => "f8e4m3fnuz",
        "f8E4M3" => "f8e4m3",
        "f8E3M4" => "f8e3m4",
        "f4E2M1FN" => "f4e2m1fn",
        "f8E8M0FNU" => "f8e8m0fnu",
        _ => return None,
    })
}

/// `(a, b)` or `a, b` -> [a, b]; `()` -> [].
pub(crate) fn split_types(text: &str) -> Vec<&str> {
    let t = strip(text);
    let t = if t.starts_with('(') && t.ends_with(')') { inner(t) } else { t };
    comma(t)
}

/// `^tensor<((?:\d+x)*)([^,]+)>$` -> (dims, element).
fn tensor(t: &str) -> Option<(Vec<&str>, &str)> {
    let body = t.strip_prefix("tensor<")?.strip_suffix('>')?;
    let mut dims = Vec::new();
    let mut rest = body;
    loop {
        let k = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        if k > 0 && rest[k..].starts_with('x') {
            // a run `\d+x`: taken unless the element would then be empty (regex backtracking)
            let after = &rest[k + 1..];
            if !after.is_empty() {
                dims.push(&rest[..k]);
                rest = after;
                continue;
            }
        }
        break;
    }
    if rest.is_empty() || rest.contains(',') {
        return None;
    }
    Some((dims, rest))
}

/// The HLO shape of an MLIR type.
pub(crate) fn hlo_shape(mlir: &str) -> R<String> {
    shape_at(mlir, 0)
}

fn shape_at(mlir: &str, nesting: usize) -> R<String> {
    if nesting > MAX_NESTING {
        return Err(Error::Deep);
    }
    stack_guard()?;
    let t = strip(mlir);
    if t.starts_with("tuple<") && t.ends_with('>') && t.len() >= 7 {
        let parts: R<Vec<String>> = split_top(&t[6..t.len() - 1], ",").iter().map(|p| shape_at(p, nesting + 1)).collect();
        return Ok(format!("({})", parts?.join(", ")));
    }
    if t == "!stablehlo.token" || t == "!mhlo.token" {
        return Ok("token[]".into());
    }
    let m = if t.starts_with("tensor<") && t.contains('?') { None } else { tensor(t) };
    let Some((dims, el)) = m else {
        if t.starts_with("tensor<") && (t.contains('?') || t.contains(',')) {
            return type_err(format!("type {t}: dynamic or bounded dimensions and encodings are not read"));
        }
        if let Some(e) = element(t) {
            return Ok(format!("{e}[]"));
        }
        return type_err(format!("type {t} is not read"));
    };
    let Some(e) = element(el) else { return type_err(format!("element type {el} is not read")) };
    Ok(format!("{e}[{}]", dims.join(",")))
}

/// [4, 8] of `f32[4,8]`.
pub(crate) fn dims_of(shape: &str) -> R<Vec<i64>> {
    let (Some(a), Some(b)) = (shape.find('['), shape.rfind(']')) else {
        return value_error("substring not found");
    };
    if b < a + 1 {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for d in shape[a + 1..b].split(',').filter(|d| !d.is_empty()) {
        out.push(py_int(d, 10)? as i64);
    }
    Ok(out)
}

pub(crate) fn element_of(shape: &str) -> R<&str> {
    match shape.find('[') {
        Some(k) => Ok(&shape[..k]),
        None => value_error("substring not found"),
    }
}

/// The product of `dims` (saturating: a count past i128 is no smaller).
pub(crate) fn prod(dims: &[i64]) -> i128 {
    dims.iter().fold(1i128, |a, &d| a.saturating_mul(d as i128))
}

/// The HLO literal of `dense<...>` (`value` is what the brackets hold) for `shape`.
pub(crate) fn hlo_literal(value: &str, shape: &str) -> R<String> {
    let element = element_of(shape)?;
    let dims = dims_of(shape)?;
    let count = prod(&dims);
    let v = strip(value);
    let mut flat: Vec<String>;
    if v.starts_with("\"0x") {
        let hex = v.get(3..v.len().saturating_sub(1).max(3)).unwrap_or("");
        flat = from_bytes(&from_hex(hex)?, element, shape)?;
        if flat.len() == 1 && count != 1 {
            if count > MAX_SPLAT {
                return type_err(format!("splat constant of {count} elements is over {MAX_SPLAT}"));
            }
            flat = vec![flat[0].clone(); count.max(0) as usize];
        }
    } else if v.starts_with('[') || (v.is_empty() && count == 0) {
        flat = Vec::new();
        if !v.is_empty() {
            let mut parts = Vec::new();
            flatten(v, &mut parts, 0)?;
            for p in parts {
                flat.push(scalar(p, element)?);
            }
        }
    } else {
        if count > MAX_SPLAT {
            return type_err(format!("splat constant of {count} elements is over {MAX_SPLAT}"));
        }
        let one = scalar(v, element)?;
        let n = if dims.is_empty() { 1 } else { count.max(0) as usize };
        flat = vec![one; n];
    }
    if flat.len() as i128 != count {
        return type_err(format!("constant has {} elements, its type {shape} {count}", flat.len()));
    }
    if dims.is_empty() {
        return Ok(flat.swap_remove(0));
    }
    let mut out = String::with_capacity(flat.len() * 4);
    nest(&flat, &dims, &mut out);
    Ok(out)
}

fn nest(flat: &[String], dims: &[i64], out: &mut String) {
    if dims.len() == 1 {
        out.push('{');
        for (k, x) in flat.iter().enumerate() {
            if k > 0 {
                out.push_str(", ");
            }
            out.push_str(x);
        }
        out.push('}');
        return;
    }
    let step = prod(&dims[1..]).max(0) as usize;
    out.push_str("{ ");
    for k in 0..dims[0].max(0) as usize {
        if k > 0 {
            out.push_str(", ");
        }
        let a = (k * step).min(flat.len());
        let b = ((k + 1) * step).min(flat.len());
        nest(&flat[a..b], &dims[1..], out);
    }
    out.push_str(" }");
}

fn flatten<'a>(v: &'a str, out: &mut Vec<&'a str>, nesting: usize) -> R<()> {
    if nesting > MAX_NESTING {
        return Err(Error::Deep);
    }
    stack_guard()?;
    for part in comma(inner(v)) {
        if part.starts_with('[') {
            flatten(part, out, nesting + 1)?;
        } else if !part.is_empty() {
            out.push(part);
        }
    }
    Ok(())
}

/// One element as HLO prints it: `1` for 1.0, `-inf`, `nan`, `true`, `(1, 2)`.
fn scalar(text: &str, element: &str) -> R<String> {
    let t = strip(text);
    if element == "pred" {
        if t == "true" || t == "false" {
            return Ok(t.to_string());
        }
        return Ok(if py_int(t, 0)? != 0 { "true" } else { "false" }.into());
    }
    if element.starts_with('c') {
        if !(t.starts_with('(') && t.ends_with(')')) {
            return type_err(format!("complex constant {t} is not read"));
        }
        let parts = comma(inner(t));
        if parts.len() != 2 {
            return value_error(if parts.len() < 2 {
                format!("not enough values to unpack (expected 2, got {})", parts.len())
            } else {
                "too many values to unpack (expected 2)".to_string()
            });
        }
        let part = if element == "c64" { "f32" } else { "f64" };
        return Ok(format!("({}, {})", scalar(parts[0], part)?, scalar(parts[1], part)?));
    }
    if element.starts_with('s') || element.starts_with('u') {
        return Ok(py_int(t, 0)?.to_string());
    }
    let f = if t.starts_with("0x") || t.starts_with("0X") {
        float_bits(py_int(t, 16)?, element)?
    } else {
        py_float(t)?
    };
    Ok(float_text(f))
}

fn float_size(element: &str) -> Option<usize> {
    match element {
        "f16" | "bf16" => Some(2),
        "f32" => Some(4),
        "f64" => Some(8),
        _ => None,
    }
}

fn float_bits(bits: i128, element: &str) -> R<f64> {
    let Some(size) = float_size(element) else {
        return type_err(format!("hexadecimal {element} constants are not read"));
    };
    if bits < 0 || (size < 16 && bits >> (8 * size) != 0) {
        return Err(Error::Py("OverflowError", "int too big to convert".into()));
    }
    let b = bits as u128;
    Ok(match element {
        "bf16" => f32::from_bits((b as u32) << 16) as f64,
        "f16" => f16_value(b as u16),
        "f32" => f32::from_bits(b as u32) as f64,
        _ => f64::from_bits(b as u64),
    })
}

/// `bytes.fromhex`.
fn from_hex(s: &str) -> R<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len() / 2);
    let mut i = 0;
    let bad = |i: usize| value_error(format!("non-hexadecimal number found in fromhex() arg at position {i}"));
    while i < b.len() {
        if b[i] == b' ' || (b'\t'..=b'\r').contains(&b[i]) {
            i += 1;
            continue;
        }
        let hi = (b[i] as char).to_digit(16);
        let lo = b.get(i + 1).and_then(|c| (*c as char).to_digit(16));
        match (hi, lo) {
            (Some(h), Some(l)) => out.push((h * 16 + l) as u8),
            (None, _) => return bad(s[..i].chars().count()),
            (_, None) => return bad(s[..i + 1].chars().count()),
        }
        i += 2;
    }
    Ok(out)
}

fn from_bytes(data: &[u8], element: &str, shape: &str) -> R<Vec<String>> {
    let le = |chunk: &[u8]| chunk.iter().rev().fold(0u128, |a, &x| (a << 8) | x as u128);
    if let Some(size) = float_size(element) {
        return data
            .chunks(size)
            .map(|c| float_bits(le(c) as i128, element).map(float_text))
            .collect();
    }
    let size = match element {
        "s8" | "u8" | "pred" => 1,
        "s16" | "u16" => 2,
        "s32" | "u32" => 4,
        "s64" | "u64" => 8,
        _ => return type_err(format!("constant of {shape} written as bytes is not read")),
    };
    let signed = element.starts_with('s');
    Ok(data
        .chunks(size)
        .map(|c| {
            let raw = le(c);
            let bits = 8 * c.len() as u32;
            let v: i128 = if signed && bits > 0 && raw >> (bits - 1) & 1 == 1 {
                raw as i128 - (1i128 << bits)
            } else {
                raw as i128
            };
            if element == "pred" {
                (if v != 0 { "true" } else { "false" }).to_string()
            } else {
                v.to_string()
            }
        })
        .collect())
}
