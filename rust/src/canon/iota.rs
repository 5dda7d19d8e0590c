//! `hashes_reference.expand_iota_groups`: `replica_groups=[2,4]<=[8]` (XLA's iota form) written out as the
//! groups it stands for, so that the two spellings of one grouping hash alike.

use crate::canon::model::{Failure, R};
use crate::canon::py_semantics::Big;

const MAX_IOTA_DEVICES: u128 = 1 << 20;

/// `hashes_reference.expand_iota_groups` (errors are `IotaError` messages).
pub(crate) fn expand_iota(value: &str) -> R<Option<String>> {
    // ^\[([0-9,]+)\]<=\[([0-9,]+)\](?:T\(([0-9,]+)\))?$
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit() || c == b',');
    let Some(rest) = value.strip_prefix('[') else {
        return Ok(None);
    };
    let Some((g1, rest)) = rest.split_once("]<=[") else {
        return Ok(None);
    };
    let Some((g2, rest)) = rest.split_once(']') else {
        return Ok(None);
    };
    let g3 = if rest.is_empty() {
        None
    } else if let Some(t) = rest.strip_prefix("T(").and_then(|t| t.strip_suffix(')')) {
        Some(t)
    } else {
        return Ok(None);
    };
    if !digits(g1) || !digits(g2) || !g3.is_none_or(digits) {
        return Ok(None);
    }
    let bad = |m: String| Failure::Bad(format!("replica_groups {value}: {m}"), 0);
    // Python's ints: a dimension past 64 bits is read, multiplied and printed as Python does.
    let ints = |s: &str| -> R<Vec<Big>> {
        s.split(',')
            .map(|d| {
                if d.is_empty() {
                    Err(bad("empty dimension".into()))
                } else {
                    Ok(Big::parse(d))
                }
            })
            .collect()
    };
    let dims = ints(g1)?;
    let shape = ints(g2)?;
    let perm: Vec<Big> = match g3 {
        Some(t) => ints(t)?,
        None => (0..shape.len() as u128).map(Big::from_u128).collect(),
    };
    if dims.len() != 2 {
        return Err(bad("the group shape must be [groups,group_size]".into()));
    }
    let mut sorted = perm.clone();
    sorted.sort();
    if !sorted
        .iter()
        .enumerate()
        .all(|(k, p)| p.to_u128() == Some(k as u128))
        || sorted.len() != shape.len()
    {
        return Err(bad(format!(
            "T({}) is not a permutation of 0..{}",
            g3.unwrap_or(""),
            shape.len() as i64 - 1
        )));
    }
    let (n, slots) = (Big::product(&shape), Big::product(&dims));
    if slots != n {
        return Err(bad(format!("{slots} group slots but {n} devices")));
    }
    if n.is_zero() {
        return Err(bad("no devices".into()));
    }
    let n = match n.to_u128() {
        Some(n) if n <= MAX_IOTA_DEVICES => n,
        _ => {
            return Err(bad(format!(
                "{n} devices, more than xlagraph expands ({MAX_IOTA_DEVICES})"
            )))
        }
    };
    // Past the checks every dimension divides `n` (no zero among them), so all fit.
    let small = |v: &[Big]| -> Vec<usize> {
        v.iter()
            .map(|d| d.to_u128().unwrap_or(0) as usize)
            .collect()
    };
    let (dims, shape, perm) = (small(&dims), small(&shape), small(&perm));
    let strides: Vec<usize> = (0..shape.len())
        .map(|k| shape[k + 1..].iter().product())
        .collect();
    let tshape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
    let tstrides: Vec<usize> = perm.iter().map(|&p| strides[p]).collect();
    let n = n as usize;
    let width = dims[1] as usize;
    let mut out = String::from("{");
    for flat in 0..n {
        let (mut index, mut rem) = (0, flat);
        for (size, stride) in tshape.iter().rev().zip(tstrides.iter().rev()) {
            index += (rem % size) * stride;
            rem /= size;
        }
        if flat % width == 0 {
            if flat > 0 {
                out.push_str("},");
            }
            out.push('{');
        } else {
            out.push(',');
        }
        out.push_str(&index.to_string());
    }
    out.push_str("}}");
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iota() {
        assert_eq!(
            expand_iota("[2,2]<=[4]").ok().flatten().unwrap(),
            "{{0,1},{2,3}}"
        );
        assert_eq!(
            expand_iota("[2,2]<=[2,2]T(1,0)").ok().flatten().unwrap(),
            "{{0,2},{1,3}}"
        );
    }

    #[test]
    fn iota_past_64_bits() {
        let big = "[2,99999999999999999999999]<=[4]";
        let Err(Failure::Bad(m, _)) = expand_iota(big) else {
            panic!("accepted {big}")
        };
        assert_eq!(
            m,
            format!("replica_groups {big}: 199999999999999999999998 group slots but 4 devices")
        );
        let Err(Failure::Bad(m, _)) = expand_iota("[1,4]<=[4]T(99999999999999999999999)") else {
            panic!("accepted a perm past 64 bits")
        };
        assert!(m.ends_with("is not a permutation of 0..0"), "{m}");
    }
}
