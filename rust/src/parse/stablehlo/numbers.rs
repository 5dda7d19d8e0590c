//! Numbers as Python reads and prints them: `int(t, base)` and `float(t)` (with their
//! ValueError's words) and a float's `repr()`, which the HLO literal of a constant is written in.

use crate::parse::stablehlo::error::{value_error, R};
use crate::parse::stablehlo::text::{repr, strip};

/// `int(text, base)` for base 10, 16 or 0 (prefixed), as an i128 (wider values are refused with
/// Python's words, which no module reaches).
pub(crate) fn py_int(text: &str, base: u32) -> R<i128> {
    // Python writes `%.200R`: the repr cut at 200 characters (reached by a statement over lines)
    let bad = || {
        let shown: String = repr(text).chars().take(200).collect();
        value_error(format!("invalid literal for int() with base {base}: {shown}"))
    };
    let t = strip(text);
    let (neg, mut t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let lower = t.get(..2).map(|p| p.to_ascii_lowercase());
    let mut radix = if base == 0 { 10 } else { base };
    let mut prefixed = false;
    if let Some(p) = lower.as_deref() {
        let want = match p {
            "0x" => 16,
            "0o" => 8,
            "0b" => 2,
            _ => 0,
        };
        if want != 0 && (base == 0 || base == want) {
            radix = want;
            t = &t[2..];
            prefixed = true;
            if t.starts_with('_') {
                t = &t[1..];
            }
        }
    }
    if t.is_empty() || t.starts_with('_') || t.ends_with('_') || t.contains("__") {
        return bad();
    }
    let digits: String = t.chars().filter(|&c| c != '_').collect();
    if base == 0 && !prefixed && digits.len() > 1 && digits.starts_with('0') && digits.chars().any(|c| c != '0') {
        return bad();
    }
    if !digits.chars().all(|c| c.is_digit(radix)) {
        return bad();
    }
    match i128::from_str_radix(&digits, radix) {
        Ok(v) => Ok(if neg { -v } else { v }),
        Err(_) => bad(),
    }
}

/// `float(text)`.
pub(crate) fn py_float(text: &str) -> R<f64> {
    let t = strip(text);
    let plain = !t.contains('_') && !t.is_empty();
    match t.parse::<f64>() {
        Ok(f) if plain => Ok(f),
        _ => value_error(format!("could not convert string to float: {}", repr(text))),
    }
}

/// An element as HLO prints it: `1` for 1.0, `-0`, `inf`, `nan`, else the float's repr.
pub(crate) fn float_text(f: f64) -> String {
    if f.is_nan() {
        return if f.is_sign_positive() { "nan" } else { "-nan" }.into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    if f.fract() == 0.0 && f.abs() < 1e16 {
        if f == 0.0 && f.is_sign_negative() {
            return "-0".into();
        }
        return format!("{}", f as i64);
    }
    float_repr(f)
}

/// Python's `repr(float)`: the shortest digits that read back, fixed between 1e-4 and 1e16.
pub(crate) fn float_repr(f: f64) -> String {
    // The shortest digits that read back, then those digits correctly rounded (half to even, as
    // Python's dtoa picks between two equally near: Rust's shortest form rounds such a tie up).
    let shortest = format!("{f:e}");
    let n = shortest.split_once('e').map_or(1, |(m, _)| m.bytes().filter(|c| c.is_ascii_digit()).count());
    let s = format!("{f:.*e}", n.saturating_sub(1));
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let neg = mant.starts_with('-');
    let digits: String = mant.trim_start_matches('-').chars().filter(|c| *c != '.').collect();
    let decpt = exp + 1;
    let mut out = String::new();
    if neg {
        out.push('-');
    }
    let n = digits.len() as i32;
    if decpt > -4 && decpt <= 16 {
        if decpt <= 0 {
            out.push_str("0.");
            out.push_str(&"0".repeat((-decpt) as usize));
            out.push_str(&digits);
        } else if decpt >= n {
            out.push_str(&digits);
            out.push_str(&"0".repeat((decpt - n) as usize));
            out.push_str(".0");
        } else {
            out.push_str(&digits[..decpt as usize]);
            out.push('.');
            out.push_str(&digits[decpt as usize..]);
        }
    } else {
        out.push_str(&digits[..1]);
        if n > 1 {
            out.push('.');
            out.push_str(&digits[1..]);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        out.push_str(&format!("{:02}", exp.abs()));
    }
    out
}

/// An IEEE half's bits as a double.
pub(crate) fn f16_value(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = ((bits >> 10) & 0x1f) as i32;
    let frac = (bits & 0x3ff) as f64;
    let v = match exp {
        0 => frac * 2f64.powi(-24),
        31 => {
            if frac == 0.0 {
                f64::INFINITY
            } else {
                return if sign < 0.0 { -f64::NAN } else { f64::NAN };
            }
        }
        e => (1.0 + frac / 1024.0) * 2f64.powi(e - 15),
    };
    sign * v
}

/// Python's `format(f, "g")` (C's `%g`, six significant digits): how XLA prints a float
/// attribute such as batch norm's `epsilon` (absl's StrCat of a float).
pub(crate) fn g6(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf" } else { "-inf" }.into();
    }
    let s = format!("{f:.5e}");
    let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let x: i32 = exp.parse().unwrap_or(0);
    let trim = |t: &str| if t.contains('.') { t.trim_end_matches('0').trim_end_matches('.').to_string() } else { t.into() };
    if (-4..6).contains(&x) {
        trim(&format!("{f:.*}", (5 - x) as usize))
    } else {
        format!("{}e{}{:02}", trim(mant), if x < 0 { '-' } else { '+' }, x.abs())
    }
}
