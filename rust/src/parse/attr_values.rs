//! The value grammars XLA checks while parsing an instruction's attributes: windows,
//! convolution dimension labels, result accuracy, replica groups as iota lists (attrs.rs says
//! which attribute takes which).

fn ints(s: &str) -> bool {
    !s.is_empty() && s.split('x').all(|d| d.parse::<i64>().is_ok())
}

/// `{size=3x3 stride=1x1 pad=0_0x1_1 lhs_dilate=.. rhs_dilate=.. rhs_reversal=..}`
pub(crate) fn window(value: &str) -> Result<(), String> {
    let inner = value
        .strip_prefix('{')
        .and_then(|v| v.strip_suffix('}'))
        .ok_or("window must be {...}")?;
    for field in inner.split_whitespace() {
        let (key, v) = field
            .split_once('=')
            .ok_or_else(|| format!("malformed window field {field}"))?;
        let ok = match key {
            "size" | "stride" | "lhs_dilate" | "rhs_dilate" | "rhs_reversal" => ints(v),
            "pad" => v.split('x').all(|d| {
                let parts: Vec<&str> = d.split('_').collect();
                parts.len() == 2 && parts.iter().all(|p| p.parse::<i64>().is_ok())
            }),
            _ => return Err(format!("unexpected window field {key}")),
        };
        if !ok {
            return Err(format!(
                "malformed window {key}={v} (pad is low_high per dimension, joined by 'x')"
            ));
        }
    }
    Ok(())
}

/// `b01f_01io->b01f`: each part names batch/feature (or input/output) once and spatial
/// dimensions 0..N-1 once, with the same N in all three.
pub(crate) fn dim_labels(value: &str) -> Result<(), String> {
    let (lhs, rest) = value
        .split_once('_')
        .ok_or("dim_labels must be lhs_rhs->out")?;
    let (rhs, out) = rest
        .split_once("->")
        .ok_or("dim_labels must be lhs_rhs->out")?;
    let spatial = |part: &str, letters: [char; 2], what: &str| -> Result<usize, String> {
        let mut digits = Vec::new();
        for letter in letters {
            if part.chars().filter(|c| *c == letter).count() != 1 {
                return Err(format!(
                    "expects one '{letter}' in {what} dimension numbers {part}"
                ));
            }
        }
        for c in part.chars() {
            match c {
                '0'..='9' => digits.push(c as usize - '0' as usize),
                c if letters.contains(&c) => {}
                '?' => {}
                _ => {
                    return Err(format!(
                        "unexpected '{c}' in {what} dimension numbers {part}"
                    ))
                }
            }
        }
        let mut sorted = digits.clone();
        sorted.sort_unstable();
        sorted.dedup();
        if sorted.len() != digits.len() {
            return Err(format!("expects unique {what} dimension numbers in {part}"));
        }
        if sorted.iter().enumerate().any(|(i, d)| i != *d) {
            return Err(format!(
                "expects [0, {}) in {what} dimension numbers {part}",
                digits.len()
            ));
        }
        Ok(digits.len())
    };
    let a = spatial(lhs, ['b', 'f'], "lhs")?;
    let b = spatial(rhs, ['i', 'o'], "rhs")?;
    let c = spatial(out, ['b', 'f'], "output")?;
    if a != b || b != c {
        return Err(format!("input, kernel and output must have the same number of spatial dimensions: {a}, {b}, {c}"));
    }
    Ok(())
}

/// `{mode=default}` / `{mode=highest}` or `{tolerance={atol=.. rtol=.. ulps=..}}`.
pub(crate) fn result_accuracy(value: &str) -> Result<(), String> {
    let inner = value
        .strip_prefix('{')
        .and_then(|v| v.strip_suffix('}'))
        .ok_or("result_accuracy must be {...}")?;
    let inner = inner.trim();
    if let Some(mode) = inner.strip_prefix("mode=") {
        return match mode.trim().to_ascii_lowercase().as_str() {
            "default" | "highest" => Ok(()),
            other => Err(format!("unknown result accuracy mode {other}")),
        };
    }
    if let Some(tolerance) = inner.strip_prefix("tolerance=") {
        let t = tolerance.trim();
        let fields = t
            .strip_prefix('{')
            .and_then(|v| v.strip_suffix('}'))
            .ok_or("tolerance must be {...}")?;
        for field in fields.split([',', ' ']).filter(|f| !f.is_empty()) {
            let (key, v) = field
                .split_once('=')
                .ok_or_else(|| format!("malformed tolerance field {field}"))?;
            if !matches!(key, "atol" | "rtol" | "ulps") || v.parse::<f64>().is_err() {
                return Err(format!("invalid tolerance field {field}"));
            }
        }
        return Ok(());
    }
    match inner.split_once('=') {
        Some((key, _)) if key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') => {
            Err(format!("invalid attribute name: {key}"))
        }
        _ => Err("expects attribute name in result_accuracy".into()),
    }
}

/// Every iota device list in a value (`[2,2]<=[4]`, `[2,1,2]<=[2,2]T(1,0)`): as many devices on
/// both sides, none of size 0, and `T(...)` a permutation of the reshape's dimensions.
pub(crate) fn iota_lists(value: &str) -> Result<(), String> {
    let mut rest = value;
    while let Some(at) = rest.find("]<=[") {
        let before = &rest[..at];
        let dims_text = &before[before.rfind('[').map(|i| i + 1).unwrap_or(0)..];
        let after = &rest[at + 4..];
        let close = after
            .find(']')
            .ok_or_else(|| format!("unclosed iota reshape in {value}"))?;
        let reshape_text = &after[..close];
        let mut tail = &after[close + 1..];
        let parse = |t: &str| -> Result<Vec<u64>, String> {
            t.split(',')
                .map(|d| {
                    d.trim()
                        .parse::<u64>()
                        .map_err(|_| format!("malformed iota list {value}"))
                })
                .collect()
        };
        let dims = parse(dims_text)?;
        let reshape = parse(reshape_text)?;
        let product = |v: &[u64]| v.iter().try_fold(1u64, |a, d| a.checked_mul(*d));
        let (Some(n_dims), Some(n_reshape)) = (product(&dims), product(&reshape)) else {
            return Err(format!("iota list {value} is too large"));
        };
        if n_dims != n_reshape || n_dims == 0 {
            return Err(format!(
                "iota list [{dims_text}]<=[{reshape_text}]: {n_dims} slots for {n_reshape} devices"
            ));
        }
        if let Some(perm_text) = tail.strip_prefix("T(") {
            let end = perm_text
                .find(')')
                .ok_or_else(|| format!("unclosed T(...) in {value}"))?;
            let mut perm = parse(&perm_text[..end])?;
            perm.sort_unstable();
            if perm.iter().enumerate().any(|(i, p)| *p != i as u64) || perm.len() != reshape.len() {
                return Err(format!(
                    "iota list {value}: T({}) is not a permutation of its reshape",
                    &perm_text[..end]
                ));
            }
            tail = &perm_text[end + 1..];
        }
        rest = tail;
    }
    Ok(())
}
