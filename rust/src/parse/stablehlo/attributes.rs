//! What every operation's translation reads: its operands, types and attributes (`Parsed`, from
//! the pretty form or the generic `<{...}>`/`{...}` dictionaries alike), and the attribute values
//! as HLO prints them (`ints`, `braces`, `enum_`).

use std::borrow::Cow;
use std::rc::Rc;

use crate::parse::stablehlo::emit::Emitter;
use crate::parse::stablehlo::error::{index_error, key_error, type_err, R};
use crate::parse::stablehlo::mlir_types::{dims_of, hlo_shape, split_types, MAX_SPLAT};
use crate::parse::stablehlo::structure::Op;
use crate::parse::stablehlo::text::{comma, digits, find_ints, is_space, is_word, matching, partition, split_top, strip};
use crate::parse::stablehlo::values::{attr_dict, refs_of, Comp, Dict, Value};

/// An operation's attributes, remembering which the translation read: the rest are carried into
/// the instruction (ops.rs), so that no attribute can differ unseen.
#[derive(Default)]
pub(crate) struct Attrs {
    pub dict: Dict,
    /// per entry of `dict`: whether the translation asked for it (a key asked for while absent
    /// is never added later but by `set`, which adds it unread, as Python's `__setitem__` does)
    used: Vec<bool>,
}

impl Attrs {
    fn find(&mut self, key: &str) -> Option<usize> {
        let k = self.dict.0.iter().position(|(k, _)| k == key)?;
        if self.used.len() < self.dict.0.len() {
            self.used.resize(self.dict.0.len(), false);
        }
        self.used[k] = true;
        Some(k)
    }

    pub(crate) fn get(&mut self, key: &str) -> Option<&str> {
        let k = self.find(key)?;
        Some(self.dict.0[k].1.as_str())
    }

    /// `attrs.get(key, default)`.
    pub(crate) fn or(&mut self, key: &str, default: &str) -> String {
        self.get(key).unwrap_or(default).to_string()
    }

    /// `key in attrs`.
    pub(crate) fn has(&mut self, key: &str) -> bool {
        self.find(key).is_some()
    }

    /// `attrs[key]`.
    pub(crate) fn at(&mut self, key: &str) -> R<String> {
        match self.get(key) {
            Some(v) => Ok(v.to_string()),
            None => key_error(key),
        }
    }

    pub(crate) fn set(&mut self, key: &str, value: String) {
        self.dict.set(key.to_string(), value);
    }

    pub(crate) fn unread(&self) -> Dict {
        let used = |k: usize| self.used.get(k).copied().unwrap_or(false);
        Dict(self.dict.0.iter().enumerate().filter(|(k, _)| !used(*k)).map(|(_, e)| e.clone()).collect())
    }
}

/// One operation's translation: its instruction's value.
pub(crate) type Handler = fn(&mut Emitter, &mut Comp, &mut Op, &mut Parsed) -> R<Value>;

pub(crate) struct Parsed {
    pub operands: Vec<String>,
    /// operand types as written (MLIR)
    pub ins: Vec<String>,
    /// result shapes (HLO)
    pub outs: Vec<String>,
    pub attrs: Attrs,
    /// the text before the type signature
    pub body: String,
}

/// `re.sub(r"\s+(cond|do)\s*\{\}|\s*\{\}$", "", sig)`
fn drop_region_marks(sig: &str) -> Cow<'_, str> {
    if !sig.contains("{}") {
        return Cow::Borrowed(sig);
    }
    let mut out = String::with_capacity(sig.len());
    let mut i = 0;
    'scan: while i < sig.len() {
        let rest = &sig[i..];
        let ws = rest.len() - rest.trim_start_matches(is_space).len();
        if ws > 0 {
            let after = &rest[ws..];
            for word in ["cond", "do"] {
                if let Some(a) = after.strip_prefix(word) {
                    let a2 = a.trim_start_matches(is_space);
                    if a2.starts_with("{}") {
                        i += rest.len() - a2.len() + 2;
                        continue 'scan;
                    }
                }
            }
        }
        if &rest[ws..] == "{}" {
            break;
        }
        let c = rest.chars().next().expect("not at the end");
        out.push(c);
        i += c.len_utf8();
    }
    Cow::Owned(out)
}

pub(crate) fn parse(op: &Op) -> R<Parsed> {
    let spaced = format!(" {}", op.text);
    let parts = split_top(&spaced, " : ");
    let (body, sig) = if parts.len() > 1 {
        (parts[..parts.len() - 1].join(" : "), parts[parts.len() - 1])
    } else {
        (op.text.clone(), "")
    };
    let sig = drop_region_marks(sig);
    let sig = strip(&sig);
    let count: usize = op.results.iter().map(|(_, n)| *n).sum();
    let arrow = if sig.contains("->") { split_top(sig, "->") } else { Vec::new() };
    let (ins, outs): (Vec<&str>, Vec<&str>) = if sig.contains("->") && arrow[0] != sig {
        (split_types(arrow[0]), split_types(arrow[1]))
    } else {
        let ins = if sig.is_empty() { Vec::new() } else { split_types(sig) };
        let outs = if ins.len() == count && count > 1 {
            ins.clone()
        } else {
            match ins.last() {
                Some(t) => vec![*t; count],
                None => Vec::new(),
            }
        };
        (ins, outs)
    };
    let mut attrs = Attrs::default();
    let mut rest = Cow::Borrowed(body.as_str());
    while let Some(k) = top_brace(&rest) {
        let start = if k > 0 && rest.as_bytes()[k - 1] == b'<' { k - 1 } else { k };
        let Some(end) = matching(&rest, k) else { break };
        for (key, v) in attr_dict(&rest[k..end + 1]).0 {
            attrs.dict.set(key, v);
        }
        let skip = end + 1 + usize::from(start != k);
        rest = Cow::Owned(format!("{} {}", &rest[..start], rest.get(skip..).unwrap_or("")));
    }
    for part in if rest.contains('=') { comma(&rest) } else { Vec::new() } {
        if let Some((key, value)) = assignment(part) {
            attrs.dict.setdefault(key.to_string(), strip(value).to_string());
        }
    }
    let shapes: Vec<_> = outs.iter().map(|t| hlo_shape(t)).collect::<Result<_, _>>()?;
    Ok(Parsed {
        operands: refs_of(op).into_iter().map(String::from).collect(),
        ins: ins.into_iter().map(String::from).collect(),
        outs: shapes,
        attrs,
        body,
    })
}

/// `(?<![%\w.])([A-Za-z_][\w.]*)\s*=\s*(\S.*)$` searched in `part`.
fn assignment(part: &str) -> Option<(&str, &str)> {
    let mut prev: Option<char> = None;
    for (p, c) in part.char_indices() {
        let free = prev.is_none_or(|q| !(q == '%' || q == '.' || is_word(q)));
        prev = Some(c);
        if !free || !(c.is_ascii_alphabetic() || c == '_') {
            continue;
        }
        let rest = &part[p..];
        let n = rest.find(|x: char| !(is_word(x) || x == '.')).unwrap_or(rest.len());
        let after = rest[n..].trim_start_matches(is_space);
        let Some(after) = after.strip_prefix('=') else { continue };
        let value = after.trim_start_matches(is_space);
        if value.is_empty() {
            continue;
        }
        return Some((&rest[..n], value));
    }
    None
}

/// The first `{` (or the `{` of `<{`) at the operation's top level.
fn top_brace(s: &str) -> Option<usize> {
    let b = s.as_bytes();
    let mut depth = 0i64;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            i = j + 1;
            continue;
        }
        if c == b'{' && depth == 0 {
            return Some(i);
        }
        if c == b'<' && depth == 0 && b.get(i + 1) == Some(&b'{') {
            return Some(i + 1);
        }
        let prev = if i == 0 { b[b.len() - 1] } else { b[i - 1] };
        match c {
            b'(' | b'[' | b'<' => depth += 1,
            b')' | b']' => depth -= 1,
            b'>' if prev != b'-' => depth -= 1,
            _ => {}
        }
        i += 1;
    }
    None
}

/// The integers of `[1, 0]`, `array<i64: 1, 0>`, `dense<[1, 0]> : tensor<2xi64>`.
pub(crate) fn ints(value: &str) -> Vec<i64> {
    // a dense array's type, or the generic form's typed integer (`dimension = 0 : i64`, not 0 and 64)
    let (head, sep, kind) = partition(value, " : ");
    let bits = kind.strip_prefix(['s', 'u']).unwrap_or(kind).strip_prefix('i');
    let typed = sep && bits.is_some_and(digits);
    let v = if value.starts_with("dense") || typed { head } else { value };
    // `re.sub(r"array<i\d+:?", "", v)`
    let mut cleaned = String::with_capacity(v.len());
    let mut i = 0;
    while i < v.len() {
        if let Some(r) = v[i..].strip_prefix("array<i") {
            let d = r.find(|c: char| !c.is_ascii_digit()).unwrap_or(r.len());
            if d > 0 {
                i += 7 + d + usize::from(r[d..].starts_with(':'));
                continue;
            }
        }
        let c = v[i..].chars().next().expect("in the text");
        cleaned.push(c);
        i += c.len_utf8();
    }
    find_ints(&cleaned)
}

/// `xs[0]`, an IndexError where `xs` is empty (Python's reference reads it so).
pub(crate) fn first(xs: &[i64]) -> R<i64> {
    match xs.first() {
        Some(x) => Ok(*x),
        None => index_error(),
    }
}

/// `dense<[[0, 1], [2, 3]]> : tensor<2x2xi64>` -> [[0, 1], [2, 3]] (rows of a 2-D array).
pub(crate) fn nested(value: &str) -> R<Vec<Vec<i64>>> {
    let mut halves = value.split(" : ");
    let v = halves.next().unwrap_or("");
    let shape = halves.next().filter(|_| value.contains(" : ")).unwrap_or("");
    let mut flat = ints(v.replace("dense<", "").trim_end_matches('>'));
    let dims = if shape.is_empty() { vec![1, flat.len() as i64] } else { dims_of(&hlo_shape(shape)?)? };
    if dims.len() != 2 {
        return type_err(format!("expected a 2-D array, found {value}"));
    }
    let n = (dims[0] as i128) * (dims[1] as i128);
    if flat.len() == 1 && n != 1 {
        if n > MAX_SPLAT {
            return type_err(format!("splat constant of {n} elements is over {MAX_SPLAT}"));
        }
        flat = vec![flat[0]; n.max(0) as usize];
    }
    let w = dims[1].max(0) as usize;
    Ok((0..dims[0].max(0) as usize)
        .map(|k| {
            let a = (k * w).min(flat.len());
            let b = ((k + 1) * w).min(flat.len());
            flat[a..b].to_vec()
        })
        .collect())
}

pub(crate) fn braces(xs: &[i64]) -> String {
    format!("{{{}}}", xs.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(","))
}

/// `#stablehlo<comparison_direction LT>` -> `LT`; other text as it is (stripped).
pub(crate) fn enum_(value: &str) -> String {
    for (k, _) in value.match_indices("#stablehlo<") {
        let r = &value[k + 11..];
        let a = r.find(|c: char| !is_word(c)).unwrap_or(r.len());
        if a == 0 {
            continue;
        }
        let r2 = &r[a..];
        let s = r2.len() - r2.trim_start_matches(is_space).len();
        if s == 0 {
            continue;
        }
        let r3 = &r2[s..];
        let w = r3.find(|c: char| !is_word(c)).unwrap_or(r3.len());
        if w > 0 && r3[w..].starts_with('>') {
            return r3[..w].to_string();
        }
    }
    strip(value).to_string()
}

/// The instruction of an operation: one result, or a tuple of several.
pub(crate) fn one(
    em: &mut Emitter,
    comp: &mut Comp,
    op: &Op,
    p: &Parsed,
    opcode: &str,
    attrs: Vec<String>,
    operands: Option<Vec<Value>>,
) -> R<Value> {
    let ops = match operands {
        Some(v) => v,
        None => {
            let v: Vec<_> =
                p.operands.iter().map(|r| em.lookup(comp, r, op.line)).collect::<Result<_, _>>()?;
            v
        }
    };
    let refs: Vec<&Value> = ops.iter().collect();
    if p.outs.len() == 1 {
        return Ok(em.inst(comp, opcode, &p.outs[0], &refs, attrs, op.line, &op.loc, ""));
    }
    let mut value = em.inst(comp, opcode, &format!("({})", p.outs.join(", ")), &refs, attrs, op.line, &op.loc, "");
    value.elements = Some(Rc::new(p.outs.clone()));
    Ok(value)
}

/// `#stablehlo.scatter<a = [0], b = 1>` -> {"a": "[0]", "b": "1"} (dimension numbers).
pub(crate) fn numbers(value: &str) -> Dict {
    let Some(k) = value.find('<') else { return Dict::default() };
    let after = &value[k + 1..];
    let inner = match after.rfind('>') {
        Some(e) => &after[..e],
        None => after,
    };
    attr_dict(&format!("{{{inner}}}"))
}

/// `attrs.get(a, attrs.get(b, default))`: both read.
pub(crate) fn either(p: &mut Parsed, a: &str, b: &str, default: &str) -> String {
    let second = p.attrs.or(b, default);
    p.attrs.get(a).map(String::from).unwrap_or(second)
}

/// The values of `refs`, in order.
pub(crate) fn lookups(em: &mut Emitter, comp: &mut Comp, refs: &[String], line: usize) -> R<Vec<Value>> {
    let out: Vec<_> = refs.into_iter().map(|r| em.lookup(comp, r, line)).collect::<Result<_, _>>()?;
    Ok(out)
}
