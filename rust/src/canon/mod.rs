//! Canonicalization on the reader's own IR, with instruction indices instead of names: the rules
//! of `xlagraph/canonical/rules.py` (read that file for why each rule is what it is), giving the
//! same numbers. Hashes are CPython's: `hash(int)` and `hash(tuple)` are deterministic and cheap
//! to reproduce, and content keys are BLAKE2b of the same key text (`hashes.content_key`).
//!
//! Anything this port does not reproduce exactly (a number past 64 bits, non-ASCII text where
//! Python's `\w` or `isdigit` would decide) is `Failure::Fallback`: Python canonicalizes instead.

pub(crate) mod blake2b;
pub(crate) mod canon_map;
pub(crate) mod handle;
pub(crate) mod tuple_params;

use std::borrow::Cow;

use crate::canon::blake2b::{hexdigest, stable_hash};
use crate::families;
use crate::parse::text::{Comp, FxMap, Inst, ModuleText, COMPUTATION_ATTRIBUTES};

pub(crate) const NONE: u32 = u32::MAX;

pub enum Failure {
    /// What `canonicalize` must raise: message and the instruction's line (0-based in the text).
    Bad(String, u32),
    /// Leave this module to the Python implementation.
    Fallback,
}

type R<T> = Result<T, Failure>;

/// One computation in canonical form; instruction vectors are indexed like `Comp::insts`.
pub struct CompCanon {
    pub comp: usize,
    /// Live instructions, operands first.
    pub order: Vec<u32>,
    /// Live instructions in the order they were first entered (`operands`' key order).
    pub entered: Vec<u32>,
    /// Per instruction: NONE, or its forwarded operand list in `fops`.
    pub fidx: Vec<u32>,
    pub fops: Vec<Vec<u32>>,
    pub outputs: Vec<u32>,
    pub keys: Vec<u64>,
    pub h0: Vec<i128>,
    pub h1: Vec<i128>,
    /// Parameters (and wrapped tuple elements) in `order`, with their numbers.
    pub params: Vec<(u32, i64)>,
    /// `param_rank` in its key order.
    pub ranks: Vec<(u32, i64)>,
    pub layouts: Vec<(u32, String)>,
    pub walk: Vec<u32>,
    pub dead: Vec<u32>,
    pub plumbing: Vec<u32>,
    pub hash: i64,
}

impl CompCanon {
    pub fn ops<'s>(&'s self, comp: &'s Comp, i: u32) -> &'s [u32] {
        let f = self.fidx[i as usize];
        if f == NONE {
            &comp.insts[i as usize].operands
        } else {
            &self.fops[f as usize]
        }
    }
}

pub struct ModuleCanon {
    /// Callees first, as `rules._callees_first` orders them.
    pub comps: Vec<CompCanon>,
    pub fingerprint: String,
    pub order: String,
}

// ---- CPython's hashes of ints and tuples (Objects/longobject.c, Objects/tupleobject.c) ----

const MODULUS: i128 = (1 << 61) - 1;

/// `hash(x)` of a Python int.
fn hint(x: i128) -> i64 {
    const P: u64 = MODULUS as u64;
    if (0..MODULUS).contains(&x) {
        return x as i64;
    }
    // Every value here fits in 64 bits, signed or not: u64 arithmetic, not i128's slow `%`.
    let r = if x >= 0 {
        ((x as u64) % P) as i64
    } else {
        -((x.unsigned_abs() as u64 % P) as i64)
    };
    if r == -1 {
        -2
    } else {
        r
    }
}

const P1: u64 = 11400714785074694791;
const P2: u64 = 14029467366897019727;
const P5: u64 = 2870177450012600261;

/// CPython's tuple hash, fed one item hash at a time.
struct TupleHash {
    acc: u64,
    len: u64,
}

impl TupleHash {
    fn new() -> Self {
        TupleHash { acc: P5, len: 0 }
    }

    #[inline]
    fn add(&mut self, lane: i64) {
        self.acc = self.acc.wrapping_add((lane as u64).wrapping_mul(P2));
        self.acc = self.acc.rotate_left(31);
        self.acc = self.acc.wrapping_mul(P1);
        self.len += 1;
    }

    fn finish(&self) -> i64 {
        let acc = self.acc.wrapping_add(self.len ^ (P5 ^ 3527539));
        if acc == u64::MAX {
            1546275796
        } else {
            acc as i64
        }
    }
}

/// `hash(t)` of a tuple whose items hash to `lanes`.
fn htuple(lanes: &[i64]) -> i64 {
    let mut t = TupleHash::new();
    for &lane in lanes {
        t.add(lane);
    }
    t.finish()
}

/// `hash((key, *operand_hashes))`, or `key` itself for a leaf (the Merkle step of rules.py).
fn merkle(key: u64, ops: &[u32], h: &[i128]) -> i128 {
    if ops.is_empty() {
        return key as i128;
    }
    let mut t = TupleHash::new();
    t.add(hint(key as i128));
    for &o in ops {
        t.add(hint(h[o as usize]));
    }
    t.finish() as i128
}

// ---- text rules of hashes.py / ir.py ----

const IGNORED_ATTRIBUTES: [&str; 7] = [
    "metadata",
    "statistics",
    "control-predecessors",
    "channel_id",
    "origin",
    "schedule",
    "ir_op",
];

const MAX_IOTA_DEVICES: u128 = 1 << 20;
const LONG_LITERAL: usize = 256;

/// Python's `\s` (str.isspace).
fn py_space(c: char) -> bool {
    c.is_whitespace() || ('\x1c'..='\x1f').contains(&c)
}

fn drop_spaces(s: &str) -> String {
    s.chars().filter(|&c| !py_space(c)).collect()
}

/// `ir.strip_layout`: one pass of `\{[^{}]*\}` removed, then `/\*.*?\*/` comments.
pub fn strip_layout(shape: &str) -> Cow<'_, str> {
    if !shape.contains('{') && !shape.contains("/*") {
        return Cow::Borrowed(shape);
    }
    let b = shape.as_bytes();
    let mut first = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'{' {
            if let Some(j) = b[i + 1..].iter().position(|&c| c == b'{' || c == b'}') {
                if b[i + 1 + j] == b'}' {
                    i += j + 2;
                    continue;
                }
            }
        }
        first.push(b[i]);
        i += 1;
    }
    let mut out = Vec::with_capacity(first.len());
    let mut i = 0;
    while i < first.len() {
        if first[i] == b'/' && first.get(i + 1) == Some(&b'*') {
            let mut j = i + 2;
            let mut end = None;
            while j < first.len() && first[j] != b'\n' {
                if first[j] == b'*' && first.get(j + 1) == Some(&b'/') {
                    end = Some(j + 2);
                    break;
                }
                j += 1;
            }
            if let Some(e) = end {
                i = e;
                continue;
            }
        }
        out.push(first[i]);
        i += 1;
    }
    // Only ASCII bytes were removed, so the rest is still UTF-8.
    Cow::Owned(String::from_utf8(out).expect("utf-8"))
}

/// `rules._tuple_skeleton`.
fn tuple_skeleton(shape: &str) -> String {
    if !shape.starts_with('(') {
        return String::new();
    }
    let s = strip_layout(shape);
    let b = s.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'[' {
            if let Some(j) = b[i + 1..].iter().position(|&c| c == b']') {
                i += j + 2;
                continue;
            }
        }
        if matches!(b[i], b'(' | b')' | b',') {
            out.push(b[i] as char);
        }
        i += 1;
    }
    out
}

/// `hashes.layout_of`: the non-default layouts of a shape's arrays (`_ARRAY` matches), or "".
pub fn layout_of(shape: &str) -> String {
    if !shape.contains('{') {
        return String::new();
    }
    let b = shape.as_bytes();
    let lower = |c: u8| c.is_ascii_lowercase();
    let word = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    let mut found: Vec<String> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if !lower(b[i]) {
            i += 1;
            continue;
        }
        let mut j = i + 1;
        while j < b.len() && word(b[j]) {
            j += 1;
        }
        let close = if b.get(j) == Some(&b'[') {
            b[j + 1..]
                .iter()
                .position(|&c| c == b']')
                .map(|k| j + 1 + k)
        } else {
            None
        };
        let Some(close) = close else {
            i += 1;
            continue;
        };
        let dims = &shape[j + 1..close];
        let mut end = close + 1;
        let mut layout = None;
        if b.get(end) == Some(&b'{') {
            if let Some(k) = b[end + 1..].iter().position(|&c| c == b'{' || c == b'}') {
                if b[end + 1 + k] == b'}' {
                    layout = Some(&shape[end..end + k + 2]);
                    end += k + 2;
                }
            }
        }
        match layout {
            None => found.push(String::new()),
            Some(lay) => {
                let rank = if dims.trim_matches(py_space).is_empty() {
                    0
                } else {
                    dims.matches(',').count() + 1
                };
                let default: Vec<String> = (0..rank).rev().map(|d| d.to_string()).collect();
                let default = format!("{{{}}}", default.join(","));
                let lay = lay.replace(' ', "");
                found.push(if lay == default { String::new() } else { lay });
            }
        }
        i = end;
    }
    if found.iter().any(|f| !f.is_empty()) {
        found.join(";")
    } else {
        String::new()
    }
}

/// `hashes.expand_iota_groups` (errors are `IotaError` messages).
fn expand_iota(value: &str) -> R<Option<String>> {
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
    let ints = |s: &str| -> R<Vec<u128>> {
        s.split(',')
            .map(|d| {
                if d.is_empty() {
                    Err(bad("empty dimension".into()))
                } else {
                    d.parse::<u128>().map_err(|_| Failure::Fallback)
                }
            })
            .collect()
    };
    let dims = ints(g1)?;
    let shape = ints(g2)?;
    let perm: Vec<u128> = match g3 {
        Some(t) => ints(t)?,
        None => (0..shape.len() as u128).collect(),
    };
    if dims.len() != 2 {
        return Err(bad("the group shape must be [groups,group_size]".into()));
    }
    let mut sorted = perm.clone();
    sorted.sort();
    if sorted != (0..shape.len() as u128).collect::<Vec<_>>() {
        return Err(bad(format!(
            "T({}) is not a permutation of 0..{}",
            g3.unwrap_or(""),
            shape.len() as i64 - 1
        )));
    }
    let prod = |v: &[u128]| v.iter().try_fold(1u128, |a, &d| a.checked_mul(d));
    let (Some(n), Some(slots)) = (prod(&shape), prod(&dims)) else {
        return Err(Failure::Fallback);
    };
    if slots != n {
        return Err(bad(format!("{slots} group slots but {n} devices")));
    }
    if n == 0 {
        return Err(bad("no devices".into()));
    }
    if n > MAX_IOTA_DEVICES {
        return Err(bad(format!(
            "{n} devices, more than xlagraph expands ({MAX_IOTA_DEVICES})"
        )));
    }
    let shape: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    let perm: Vec<usize> = perm.iter().map(|&d| d as usize).collect();
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

/// `hashes.normalize_attribute(key, value, strict=True)`.
fn normalize_attribute(key: &str, value: &str) -> R<String> {
    let value = if value.contains('"') {
        value.to_string()
    } else {
        drop_spaces(value)
    };
    if key == "replica_groups" {
        if let Some(expanded) = expand_iota(&value)? {
            return Ok(expanded);
        }
    }
    Ok(value)
}

/// `hashes.compared_value` for a key that is not ignored: `None` when nothing is left to compare.
fn compared_value(ins: &Inst, key: &str, value: &str) -> R<Option<String>> {
    if key == "frontend_attributes" {
        let out = frontend_attributes(ins, value);
        return Ok(if out.is_empty() { None } else { Some(out) });
    }
    if key == "backend_config" {
        let out = backend_config(value);
        return Ok(if out.is_empty() { None } else { Some(out) });
    }
    normalize_attribute(key, value).map(Some)
}

/// `opcodes.SIDE_EFFECTS` / `has_side_effect` (families.rs).
fn has_side_effect(ins: &Inst) -> bool {
    if ins.opcode == "custom-call" {
        return ins
            .attrs
            .iter()
            .find(|(k, _)| *k == "custom_call_has_side_effect")
            .is_some_and(|(_, v)| v.as_ref() == "true");
    }
    families::SIDE_EFFECTS.contains(&ins.opcode.as_ref())
}

/// `hashes.effect_hashes`, sorted. Anything unusual (an operand cycle, a key that fails) is left
/// to Python.
fn effect_hashes<'x>(
    insts: &[Inst],
    candidates: impl Iterator<Item = &'x u32>,
    state: &[u8],
    h1: &[i128],
    callee_hash: &FxMap<&str, i64>,
) -> R<Vec<i128>> {
    let found: Vec<u32> = candidates
        .copied()
        .filter(|&i| has_side_effect(&insts[i as usize]))
        .collect();
    if found.is_empty() {
        return Ok(Vec::new());
    }
    let live = |i: u32| state[i as usize] == 2;
    let mut memo: Vec<Option<i128>> = vec![None; insts.len()];
    let mut entered = vec![false; insts.len()];
    for &start in &found {
        let mut stack = vec![(start, false)];
        while let Some((i, ready)) = stack.pop() {
            let ins = &insts[i as usize];
            if !ready {
                if live(i) || entered[i as usize] {
                    continue;
                }
                entered[i as usize] = true;
                stack.push((i, true));
                for &o in ins.operands.iter().rev() {
                    if !live(o) && !entered[o as usize] {
                        stack.push((o, false));
                    }
                }
                continue;
            }
            let parameter = ins.opcode == "parameter";
            let key = content_key(ins, parameter, callee_hash).map_err(|_| Failure::Fallback)?;
            let value = if parameter {
                let number =
                    parse_int(ins.payload.trim_matches(py_space)).map_err(|_| Failure::Fallback)?;
                htuple(&[hint(key as i128), hint(number as i128)]) as i128
            } else if ins.operands.is_empty() {
                key as i128
            } else {
                let mut operand_hashes = Vec::with_capacity(ins.operands.len());
                for &o in &ins.operands {
                    operand_hashes.push(if live(o) {
                        h1[o as usize]
                    } else {
                        memo[o as usize].ok_or(Failure::Fallback)?
                    });
                }
                let mut t = TupleHash::new();
                t.add(hint(key as i128));
                for h in operand_hashes {
                    t.add(hint(h));
                }
                t.finish() as i128
            };
            memo[i as usize] = Some(value);
        }
    }
    let mut out: Vec<i128> = found
        .iter()
        .map(|&i| {
            if live(i) {
                h1[i as usize]
            } else {
                memo[i as usize].unwrap_or(0)
            }
        })
        .collect();
    out.sort();
    Ok(out)
}

/// `hashes.declared_shapes`: `re.findall(r"[a-z][a-z0-9]*\[[^\]]*\]")` over the shape without
/// layout and spaces, sorted and joined by `,`.
fn declared_shapes(shape: &str) -> String {
    let text = strip_layout(shape).replace(' ', "");
    let b = text.as_bytes();
    let mut found: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_lowercase() {
            let mut j = i + 1;
            while j < b.len() && (b[j].is_ascii_lowercase() || b[j].is_ascii_digit()) {
                j += 1;
            }
            if j < b.len() && b[j] == b'[' {
                if let Some(k) = b[j + 1..].iter().position(|&c| c == b']') {
                    let end = j + 1 + k;
                    found.push(&text[i..=end]);
                    i = end + 1;
                    continue;
                }
            }
        }
        i += 1;
    }
    found.sort();
    found.join(",")
}

/// `hashes.plumbing_attributes`: a forwarded root's own attributes (`compared_value`, not strict).
fn plumbing_attributes(ins: &Inst) -> String {
    let mut parts = Vec::new();
    for (key, value) in &ins.attrs {
        if *key == "index"
            || IGNORED_ATTRIBUTES.contains(key)
            || COMPUTATION_ATTRIBUTES.contains(key)
        {
            continue;
        }
        let compared = match compared_value(ins, key, value) {
            Ok(v) => v,
            // `strict=False`: an invalid iota group stays as printed (spaces dropped).
            Err(_) => Some(if value.contains('"') {
                value.to_string()
            } else {
                drop_spaces(value)
            }),
        };
        if let Some(v) = compared {
            parts.push(format!("{key}={v}"));
        }
    }
    parts.join(";")
}

/// `hashes.backend_config`: JSON with sorted members, else the text with spaces dropped.
fn backend_config(value: &str) -> String {
    let b = value.as_bytes();
    let text: Cow<str> = if b.len() >= 2 && b[0] == b'"' && b[b.len() - 1] == b'"' {
        Cow::Owned(unquote(&value[1..value.len() - 1]))
    } else {
        Cow::Borrowed(value)
    };
    let parsed = Json {
        t: text.as_bytes(),
        s: &text,
        i: 0,
    }
    .document()
    .unwrap_or_else(|| {
        if text.contains('"') {
            text.to_string()
        } else {
            drop_spaces(&text)
        }
    });
    if parsed == "{}" {
        String::new()
    } else {
        parsed
    }
}

/// `hashes._unquote`: only `\"` and `\\` are undone.
fn unquote(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() && (b[i + 1] == b'"' || b[i + 1] == b'\\') {
            out.push(b[i + 1]);
            i += 2;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// `hashes._Json`: the same canonical text.
struct Json<'t> {
    t: &'t [u8],
    s: &'t str,
    i: usize,
}

impl Json<'_> {
    fn document(mut self) -> Option<String> {
        let out = self.value(0)?;
        self.skip();
        if self.i == self.t.len() {
            Some(out)
        } else {
            None
        }
    }

    fn skip(&mut self) {
        while self.i < self.t.len() && matches!(self.t[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn at(&self, c: u8) -> bool {
        self.i < self.t.len() && self.t[self.i] == c
    }

    fn value(&mut self, depth: u32) -> Option<String> {
        self.skip();
        if self.i >= self.t.len() || depth > 64 {
            return None;
        }
        match self.t[self.i] {
            b'{' => self.members(depth),
            b'[' => self.elements(depth),
            b'"' => self.string(),
            _ => {
                let start = self.i;
                while self.i < self.t.len() && !b",]} \t\n\r".contains(&self.t[self.i]) {
                    self.i += 1;
                }
                let token = &self.s[start..self.i];
                if matches!(token, "true" | "false" | "null") || is_json_number(token.as_bytes()) {
                    Some(token.to_string())
                } else {
                    None
                }
            }
        }
    }

    fn string(&mut self) -> Option<String> {
        let start = self.i;
        self.i += 1;
        while self.i < self.t.len() {
            let c = self.t[self.i];
            if c == b'\\' {
                self.i += 2;
                continue;
            }
            self.i += 1;
            if c == b'"' {
                return Some(self.s[start..self.i].to_string());
            }
        }
        None
    }

    fn members(&mut self, depth: u32) -> Option<String> {
        self.i += 1;
        let mut members: Vec<(String, String)> = Vec::new();
        self.skip();
        if self.at(b'}') {
            self.i += 1;
            return Some("{}".to_string());
        }
        loop {
            self.skip();
            if !self.at(b'"') {
                return None;
            }
            let key = self.string()?;
            self.skip();
            if !self.at(b':') {
                return None;
            }
            self.i += 1;
            let value = self.value(depth + 1)?;
            members.push((key, value));
            self.skip();
            if self.at(b',') {
                self.i += 1;
                continue;
            }
            if self.at(b'}') {
                self.i += 1;
                members.sort();
                let parts: Vec<String> = members.iter().map(|(k, v)| format!("{k}:{v}")).collect();
                return Some(format!("{{{}}}", parts.join(",")));
            }
            return None;
        }
    }

    fn elements(&mut self, depth: u32) -> Option<String> {
        self.i += 1;
        let mut items: Vec<String> = Vec::new();
        self.skip();
        if self.at(b']') {
            self.i += 1;
            return Some("[]".to_string());
        }
        loop {
            items.push(self.value(depth + 1)?);
            self.skip();
            if self.at(b',') {
                self.i += 1;
                continue;
            }
            if self.at(b']') {
                self.i += 1;
                return Some(format!("[{}]", items.join(",")));
            }
            return None;
        }
    }
}

/// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, the whole token.
fn is_json_number(b: &[u8]) -> bool {
    let mut i = 0;
    if i < b.len() && b[i] == b'-' {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if i < b.len() && b[i] == b'0' {
        i += 1;
    } else if i < b.len() && b[i].is_ascii_digit() {
        digits(&mut i);
    } else {
        return false;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}

/// `hashes._frontend_attributes`: entries in key order, numbering-only entries dropped.
fn frontend_attributes(ins: &Inst, value: &str) -> String {
    let mut kept: Vec<String> = Vec::new();
    for entry in frontend_entries(value) {
        let (k, v) = entry.split_once('=').unwrap_or((entry, ""));
        if numbering(ins, k, v) {
            continue;
        }
        kept.push(if entry.contains('"') {
            entry.to_string()
        } else {
            drop_spaces(entry)
        });
    }
    if kept.is_empty() {
        return String::new();
    }
    kept.sort();
    format!("{{{}}}", kept.join(","))
}

/// `hashes._entries`: the top-level entries of a `{...}` dict.
fn frontend_entries(value: &str) -> Vec<&str> {
    let b = value.as_bytes();
    if b.len() < 2 || b[0] != b'{' || b[b.len() - 1] != b'}' {
        return if value.is_empty() {
            vec![]
        } else {
            vec![value]
        };
    }
    let (mut out, mut depth, mut start, mut quoted, mut i) = (Vec::new(), 0i64, 1, false, 1);
    let end = b.len() - 1;
    while i < end {
        let c = b[i];
        if quoted {
            if c == b'\\' {
                i += 1;
            } else if c == b'"' {
                quoted = false;
            }
        } else if c == b'"' {
            quoted = true;
        } else if c == b'{' {
            depth += 1;
        } else if c == b'}' {
            depth -= 1;
        } else if c == b',' && depth == 0 {
            out.push(&value[start..i]);
            start = i + 1;
        }
        i += 1;
    }
    out.push(&value[start.min(end)..end]);
    out.retain(|e: &&str| !e.is_empty());
    out
}

/// `hashes._numbering`: Neuron's `inputN` / `output0,...` names restate numbers.
fn numbering(ins: &Inst, key: &str, value: &str) -> bool {
    if key == "neff_input_names" {
        return ins.opcode == "parameter"
            && value == format!("\"input{}\"", ins.payload.trim_matches(py_space));
    }
    if key == "neff_output_names"
        && value.len() > 1
        && value.starts_with('"')
        && value.ends_with('"')
    {
        return value[1..value.len() - 1]
            .split(',')
            .enumerate()
            .all(|(i, n)| n == format!("output{i}"));
    }
    false
}

/// `re.findall(r"[A-Za-z_][\w.\-]*", value)` on ASCII text.
fn computation_names(value: &str) -> Vec<&str> {
    let b = value.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_alphabetic() || b[i] == b'_' {
            let mut j = i + 1;
            while j < b.len()
                && (b[j].is_ascii_alphanumeric() || matches!(b[j], b'_' | b'.' | b'-'))
            {
                j += 1;
            }
            out.push(&value[i..j]);
            i = j;
        } else {
            i += 1;
        }
    }
    out
}

/// `hashes._literal_key`.
fn literal_key(payload: &str) -> String {
    let text = drop_spaces(payload);
    if text.chars().count() <= LONG_LITERAL {
        return text;
    }
    format!("literal:{}", hexdigest(&text, 16))
}

/// `hashes.content_key`, hashed with `stable_hash`.
fn content_key(ins: &Inst, parameter: bool, callee_hash: &FxMap<&str, i64>) -> R<u64> {
    let mut s = String::with_capacity(64);
    s.push_str(if parameter { "parameter" } else { &ins.opcode });
    s.push('|');
    s.push_str(&strip_layout(&ins.shape).replace(' ', ""));
    for (key, value) in &ins.attrs {
        if IGNORED_ATTRIBUTES.contains(key) || (parameter && *key == "index") {
            continue;
        }
        s.push('|');
        s.push_str(key);
        s.push('=');
        if COMPUTATION_ATTRIBUTES.contains(key) {
            if !value.is_ascii() {
                return Err(Failure::Fallback);
            }
            let hashes: Vec<String> = computation_names(value)
                .iter()
                .map(|n| callee_hash.get(n).copied().unwrap_or(0).to_string())
                .collect();
            s.push_str(&hashes.join(","));
        } else {
            match compared_value(ins, key, value)? {
                Some(v) => s.push_str(&v),
                None => {
                    // nothing to compare: the `|key=` pushed above is taken back
                    s.truncate(s.len() - key.len() - 2);
                }
            }
        }
    }
    if !ins.payload.is_empty() && !parameter {
        s.push('|');
        s.push_str(&literal_key(&ins.payload));
    }
    Ok(stable_hash(&s))
}

/// Python's `repr` of a tuple of ints.
fn repr_tuple<I: IntoIterator<Item = String>>(items: I) -> String {
    let items: Vec<String> = items.into_iter().collect();
    match items.len() {
        1 => format!("({},)", items[0]),
        _ => format!("({})", items.join(", ")),
    }
}

type CacheKey<'b, 'a> = (
    &'b str,
    &'b str,
    &'b [(&'a str, Cow<'a, str>)],
    &'b str,
    bool,
);

/// Content keys and layouts of instructions that call nothing, by what `content_key` reads.
type KeyCache<'b, 'a> = FxMap<CacheKey<'b, 'a>, (u64, String)>;

fn parse_int(s: &str) -> R<i64> {
    if s.is_empty() || !s.bytes().all(|c| c.is_ascii_digit()) {
        return Err(Failure::Fallback);
    }
    s.parse::<i64>().map_err(|_| Failure::Fallback)
}

fn root_of(comp: &Comp) -> usize {
    comp.insts
        .iter()
        .rposition(|i| i.is_root)
        .unwrap_or(comp.insts.len() - 1)
}

/// Depth-first post-order from `outputs` (`rules._walk`), with `visit` called at each post-visit.
fn walk_from<'x>(
    outputs: &[u32],
    n: usize,
    ops: impl Fn(u32) -> &'x [u32],
    mut visit: impl FnMut(u32, &[u32]),
) -> Vec<u32> {
    let mut seen = vec![false; n];
    let mut walk = Vec::new();
    let mut stack: Vec<(u32, &'x [u32], usize)> = Vec::new();
    for &out in outputs {
        if seen[out as usize] {
            continue;
        }
        seen[out as usize] = true;
        stack.push((out, ops(out), 0));
        while let Some(frame) = stack.last_mut() {
            let mut i = frame.2;
            while i < frame.1.len() && seen[frame.1[i] as usize] {
                i += 1;
            }
            if i < frame.1.len() {
                frame.2 = i + 1;
                let o = frame.1[i];
                seen[o as usize] = true;
                stack.push((o, ops(o), 0));
                continue;
            }
            let (name, node_ops, _) = stack.pop().unwrap();
            walk.push(name);
            visit(name, node_ops);
        }
    }
    walk
}

fn canon_computation<'b, 'a>(
    index: usize,
    comp: &'b Comp<'a>,
    is_entry: bool,
    callee_hash: &FxMap<&str, i64>,
    cache: &mut KeyCache<'b, 'a>,
) -> R<CompCanon> {
    let insts = &comp.insts;
    let n = insts.len();
    // Rule 1: forwarding.
    let mut alias = vec![NONE; n];
    let mut index_of: Vec<Option<i64>> = vec![None; n];
    for (i, ins) in insts.iter().enumerate() {
        if ins.opcode != "get-tuple-element" || ins.operands.len() != 1 {
            continue;
        }
        let Some((_, index)) = ins.attrs.iter().find(|(k, _)| *k == "index") else {
            continue;
        };
        if !index.is_ascii() {
            return Err(Failure::Fallback);
        }
        if index.is_empty() || !index.bytes().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let k = parse_int(index)?;
        index_of[i] = Some(k);
        let op = ins.operands[0];
        let source = if alias[op as usize] != NONE {
            alias[op as usize]
        } else {
            op
        };
        let target = &insts[source as usize];
        if target.opcode == "tuple" && (k as usize) < target.operands.len() {
            let element = target.operands[k as usize];
            let a = alias[element as usize];
            alias[i] = if a != NONE { a } else { element };
        }
    }
    // Inputs: the parameters, or in the entry the elements of tuple parameters (tuple_params.rs).
    let mut numbered: Vec<(i64, u32)> = Vec::new();
    for (i, ins) in insts.iter().enumerate() {
        if ins.opcode == "parameter" {
            numbered.push((parse_int(&ins.payload)?, i as u32));
        }
    }
    let root = root_of(comp) as u32;
    let (input, unwrapped, reads) = if is_entry {
        tuple_params::unwrap(insts, root, &numbered, &index_of, &mut alias)
    } else {
        let mut input = vec![-1i64; n];
        for &(num, i) in &numbered {
            input[i as usize] = num;
        }
        (input, Vec::new(), vec![false; n])
    };
    let mut fidx = vec![NONE; n];
    let mut fops: Vec<Vec<u32>> = Vec::new();
    for (i, ins) in insts.iter().enumerate() {
        if input[i] >= 0 && !ins.operands.is_empty() {
            fidx[i] = fops.len() as u32;
            fops.push(Vec::new());
        } else if ins.operands.iter().any(|&o| alias[o as usize] != NONE) {
            fidx[i] = fops.len() as u32;
            let a = |o: u32| {
                if alias[o as usize] != NONE {
                    alias[o as usize]
                } else {
                    o
                }
            };
            fops.push(ins.operands.iter().map(|&o| a(o)).collect());
        }
    }
    // Forwarded operands and parameter flags in arrays of their own: the walks below jump around
    // the computation, and `Inst` records are large (a 600K module's do not fit in any cache).
    // One array for all of them, read in the records' order: the walks' random jumps then land
    // in a megabyte, not in operand lists strewn over the reader's whole heap.
    let mut eff_start: Vec<u32> = Vec::with_capacity(n + 1);
    let mut eff: Vec<u32> = Vec::with_capacity(2 * n);
    for (ins, &f) in insts.iter().zip(&fidx) {
        eff_start.push(eff.len() as u32);
        eff.extend_from_slice(if f == NONE {
            &ins.operands
        } else {
            &fops[f as usize]
        });
    }
    eff_start.push(eff.len() as u32);
    let ops_of = |i: u32| -> &[u32] {
        &eff[eff_start[i as usize] as usize..eff_start[i as usize + 1] as usize]
    };
    // Outputs: a tuple root flattened.
    let mut outputs = Vec::new();
    let mut stack = vec![root];
    while let Some(mut name) = stack.pop() {
        if alias[name as usize] != NONE {
            name = alias[name as usize];
        }
        let ins = &insts[name as usize];
        if ins.opcode == "tuple" && !ins.operands.is_empty() {
            stack.extend(ins.operands.iter().rev());
        } else {
            outputs.push(name);
        }
    }
    // Rule 2: live order (0 unseen, 1 entered, 2 done).
    let mut state = vec![0u8; n];
    let mut order = Vec::new();
    let mut entered = Vec::new();
    let mut frames: Vec<(u32, usize)> = Vec::new();
    for &out in &outputs {
        if state[out as usize] == 2 {
            continue;
        }
        state[out as usize] = 1;
        entered.push(out);
        frames.push((out, 0));
        while let Some(frame) = frames.last_mut() {
            let ops = ops_of(frame.0);
            let mut i = frame.1;
            while i < ops.len() && state[ops[i] as usize] == 2 {
                i += 1;
            }
            if i < ops.len() {
                frame.1 = i + 1;
                let o = ops[i];
                if state[o as usize] == 1 {
                    let ins = &insts[o as usize];
                    return Err(Failure::Bad(
                        format!(
                            "instruction {} in computation {} is its own operand (operand cycle)",
                            ins.name, comp.name
                        ),
                        ins.line,
                    ));
                }
                state[o as usize] = 1;
                entered.push(o);
                frames.push((o, 0));
            } else {
                let (name, _) = frames.pop().unwrap();
                state[name as usize] = 2;
                order.push(name);
            }
        }
    }
    for i in 0..n {
        if input[i] >= 0 && state[i] != 2 {
            state[i] = 2;
            order.push(i as u32);
            entered.push(i as u32);
        }
    }
    // Content keys, parameter numbers, layouts and h0, over the live order.
    let mut keys = vec![0u64; n];
    let mut h0 = vec![0i128; n];
    let mut is_param = vec![false; n];
    let mut params: Vec<(u32, i64)> = Vec::new();
    let mut layouts: Vec<(u32, String)> = Vec::new();
    for &i in &order {
        let ins = &insts[i as usize];
        let param = input[i as usize] >= 0;
        if param {
            let number = input[i as usize];
            is_param[i as usize] = true;
            params.push((i, number));
        }
        let cacheable = ins.called.is_empty()
            && !ins
                .attrs
                .iter()
                .any(|(k, _)| COMPUTATION_ATTRIBUTES.contains(k));
        let cache_key: CacheKey = (&ins.opcode, &ins.shape, &ins.attrs, &ins.payload, param);
        let hit = if cacheable {
            cache.get(&cache_key).cloned()
        } else {
            None
        };
        let (key, layout) = match hit {
            Some(v) => v,
            None => {
                let key = content_key(ins, param, callee_hash).map_err(|e| match e {
                    Failure::Bad(m, _) => Failure::Bad(m, ins.line),
                    f => f,
                })?;
                let v = (key, layout_of(&ins.shape));
                if cacheable {
                    cache.insert(cache_key, v.clone());
                }
                v
            }
        };
        keys[i as usize] = key;
        if !layout.is_empty() {
            layouts.push((i, layout));
        }
        h0[i as usize] = merkle(key, ops_of(i), &h0);
    }
    let mut h1 = vec![0i128; n];
    let mut rank = vec![-1i64; n];
    let mut ranks: Vec<(u32, i64)> = Vec::new();
    let walk;
    let mut unread: Vec<(u32, i64)> = Vec::new();
    if is_entry {
        let mut ranked: Vec<usize> = (0..outputs.len()).collect();
        ranked.sort_by_key(|&k| h0[outputs[k] as usize]);
        let canonical: Vec<u32> = ranked.iter().map(|&k| outputs[k]).collect();
        walk = walk_from(&canonical, n, ops_of, |name, ops| {
            let u = name as usize;
            if is_param[u] {
                rank[u] = ranks.len() as i64;
                ranks.push((name, rank[u]));
            }
            h1[u] = if !ops.is_empty() {
                merkle(keys[u], ops, &h1)
            } else if rank[u] >= 0 {
                htuple(&[hint(keys[u] as i128), hint(rank[u] as i128)]) as i128
            } else {
                keys[u] as i128
            };
        });
        unread = params
            .iter()
            .copied()
            .filter(|&(p, _)| rank[p as usize] < 0)
            .collect();
        unread.sort_by_key(|&(p, number)| (keys[p as usize], number));
        for &(p, _) in &unread {
            let u = p as usize;
            rank[u] = ranks.len() as i64;
            ranks.push((p, rank[u]));
            h1[u] = htuple(&[hint(keys[u] as i128), hint(rank[u] as i128)]) as i128;
        }
    } else {
        walk = walk_from(&outputs, n, ops_of, |_, _| {});
        for &(p, number) in &params {
            rank[p as usize] = number;
        }
        ranks = params.clone();
        for &i in &order {
            let u = i as usize;
            let ops = ops_of(i);
            h1[u] = if !ops.is_empty() {
                merkle(keys[u], ops, &h1)
            } else if is_param[u] {
                htuple(&[hint(keys[u] as i128), hint(rank[u] as i128)]) as i128
            } else {
                keys[u] as i128
            };
        }
    }
    // Dead code and plumbing.
    let (mut dead, mut plumbing) = (Vec::new(), Vec::new());
    if order.len() != n {
        let mut reached = vec![false; n];
        let mut stack = vec![root];
        for &i in &order {
            if fidx[i as usize] != NONE {
                stack.extend(insts[i as usize].operands.iter());
            }
        }
        while let Some(name) = stack.pop() {
            let u = name as usize;
            if state[u] == 2 || reached[u] {
                continue;
            }
            reached[u] = true;
            stack.extend(insts[u].operands.iter());
        }
        for (i, ins) in insts.iter().enumerate() {
            if state[i] == 2 {
                continue;
            }
            if reached[i] {
                plumbing.push(i as u32);
            } else if ins.opcode != "parameter" && !reads[i] {
                dead.push(i as u32);
            }
        }
    }
    // The computation's hash.
    let mut skeleton_text = tuple_skeleton(&insts[root as usize].shape);
    if state[root as usize] != 2 {
        let text = plumbing_attributes(&insts[root as usize]);
        skeleton_text.push('|');
        skeleton_text.push_str(&declared_shapes(&insts[root as usize].shape));
        if !text.is_empty() {
            skeleton_text.push('|');
            skeleton_text.push_str(&text);
        }
    }
    let skeleton = hint(stable_hash(&skeleton_text) as i128);
    let mut layout_key: Vec<(i128, u64)> = layouts
        .iter()
        .map(|(i, lay)| (h1[*i as usize], stable_hash(lay)))
        .collect();
    layout_key.sort();
    layout_key.dedup();
    let layout_lanes: Vec<i64> = layout_key
        .iter()
        .map(|&(h, l)| htuple(&[hint(h), hint(l as i128)]))
        .collect();
    let hash = if is_entry {
        let mut outs: Vec<i128> = outputs.iter().map(|&o| h1[o as usize]).collect();
        outs.sort();
        let mut unused: Vec<u64> = unread.iter().map(|&(p, _)| keys[p as usize]).collect();
        unused.sort();
        // `rules._unwrapped_shape`: how a tuple whose elements are the inputs nests, and its shapes.
        let mut wrapped: Vec<u64> = unwrapped
            .iter()
            .map(|&p| {
                let shape = &insts[p as usize].shape;
                stable_hash(&format!(
                    "{}|{}",
                    tuple_skeleton(shape),
                    declared_shapes(shape)
                ))
            })
            .collect();
        wrapped.sort();
        unused.extend(wrapped);
        let outs: Vec<i64> = outs.into_iter().map(hint).collect();
        let unused: Vec<i64> = unused.into_iter().map(|k| hint(k as i128)).collect();
        htuple(&[
            skeleton,
            htuple(&outs),
            htuple(&unused),
            htuple(&layout_lanes),
        ])
    } else {
        let mut signature: Vec<(i64, u64)> = params
            .iter()
            .map(|&(p, num)| (num, keys[p as usize]))
            .collect();
        signature.sort();
        let signature: Vec<i64> = signature
            .iter()
            .map(|&(num, k)| htuple(&[hint(num as i128), hint(k as i128)]))
            .collect();
        let outs: Vec<i64> = outputs.iter().map(|&o| hint(h1[o as usize])).collect();
        htuple(&[
            skeleton,
            htuple(&outs),
            htuple(&signature),
            htuple(&layout_lanes),
        ])
    };
    let effects = effect_hashes(
        insts,
        dead.iter().chain(&plumbing),
        &state,
        &h1,
        callee_hash,
    )?;
    let hash = if effects.is_empty() {
        hash
    } else {
        let lanes: Vec<i64> = effects.into_iter().map(hint).collect();
        htuple(&[hint(hash as i128), htuple(&lanes)])
    };
    Ok(CompCanon {
        comp: index,
        order,
        entered,
        fidx,
        fops,
        outputs,
        keys,
        h0,
        h1,
        params,
        ranks,
        layouts,
        walk,
        dead,
        plumbing,
        hash,
    })
}

/// `rules._callees_first`.
fn callees_first(module: &ModuleText) -> Vec<usize> {
    let by_name: FxMap<&str, usize> = module
        .comps
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name.as_ref(), i))
        .collect();
    let mut state = vec![0u8; module.comps.len()];
    let mut order = Vec::with_capacity(module.comps.len());
    for root in 0..module.comps.len() {
        let mut stack = vec![(root, false)];
        while let Some((c, expanded)) = stack.pop() {
            if expanded {
                state[c] = 2;
                order.push(c);
                continue;
            }
            if state[c] != 0 {
                continue;
            }
            state[c] = 1;
            stack.push((c, true));
            for ins in &module.comps[c].insts {
                for callee in &ins.called {
                    if let Some(&j) = by_name.get(callee.as_ref()) {
                        if state[j] == 0 {
                            stack.push((j, false));
                        }
                    }
                }
            }
        }
    }
    order
}

/// Every computation, callees first, and the module's fingerprint and order (`rules.canonicalize`).
/// A panic (a bug of this port) leaves the module to Python's canonicalization.
pub fn canonicalize(module: &ModuleText) -> R<ModuleCanon> {
    std::panic::catch_unwind(|| canonicalize_module(module)).unwrap_or(Err(Failure::Fallback))
}

fn canonicalize_module(module: &ModuleText) -> R<ModuleCanon> {
    if module.comps.is_empty() || module.comps.iter().any(|c| c.insts.is_empty()) {
        return Err(Failure::Fallback);
    }
    // Computations written in place may share a name (`_`): rules.py's dictionaries by name
    // decide which one a name means there.
    let mut names: FxMap<&str, ()> = FxMap::default();
    if module
        .comps
        .iter()
        .any(|c| names.insert(c.name.as_ref(), ()).is_some())
    {
        return Err(Failure::Fallback);
    }
    let entry = module
        .comps
        .iter()
        .position(|c| c.is_entry)
        .unwrap_or(module.comps.len() - 1);
    let mut callee_hash: FxMap<&str, i64> = FxMap::default();
    let mut cache: KeyCache = FxMap::default();
    let mut comps = Vec::with_capacity(module.comps.len());
    for c in callees_first(module) {
        let comp = &module.comps[c];
        let canon = canon_computation(c, comp, c == entry, &callee_hash, &mut cache)?;
        callee_hash.insert(comp.name.as_ref(), canon.hash);
        comps.push(canon);
    }
    let e = comps
        .iter()
        .find(|c| c.comp == entry)
        .expect("entry canonicalized");
    let fingerprint = hexdigest(&e.hash.to_string(), 8);
    let mut params = e.params.clone();
    params.sort_by_key(|&(_, number)| number);
    let mut rank = FxMap::default();
    for &(p, r) in &e.ranks {
        rank.insert(p, r);
    }
    let layout = format!(
        "({}, {})",
        repr_tuple(e.outputs.iter().map(|&o| e.h1[o as usize].to_string())),
        repr_tuple(params.iter().map(|(p, _)| rank[p].to_string()))
    );
    let order = hexdigest(&layout, 8);
    Ok(ModuleCanon {
        comps,
        fingerprint,
        order,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn python_hashes() {
        // hash((1, 2)), hash(()), hash(-1), hash(2**64 - 1) in CPython 3.11.
        assert_eq!(htuple(&[1, 2]), -3550055125485641917);
        assert_eq!(htuple(&[]), 5740354900026072187);
        assert_eq!(hint(-1), -2);
        assert_eq!(hint(u64::MAX as i128), 7);
    }

    #[test]
    fn shape_text_rules() {
        // Expected values printed by hashes.layout_of, ir.strip_layout and rules._tuple_skeleton.
        let cases = [
            ("f32[4,8]{1,0}", "", "f32[4,8]", ""),
            ("f32[4,8]{0,1}", "{0,1}", "f32[4,8]", ""),
            ("(f32[2]{0}, s32[]) ", "", "(f32[2], s32[]) ", "(,)"),
            (
                "(f32[4,8]{0,1:T(8,128)S(1)}, /*index=1*/bf16[2,2]{1,0})",
                "{0,1:T(8,128)S(1)};",
                "(f32[4,8], bf16[2,2])",
                "(,)",
            ),
            ("f32[ 4 , 8 ]{ 0, 1 }", "{0,1}", "f32[ 4 , 8 ]", ""),
            (
                "(f32[2]{0}, (s32[3]{0}, u8[1,2]{0,1}))",
                ";;{0,1}",
                "(f32[2], (s32[3], u8[1,2]))",
                "(,(,))",
            ),
            ("f32[2,3", "", "f32[2,3", ""),
            ("x{a{b}c}", "", "x{ac}", ""),
        ];
        for (shape, layout, stripped, skeleton) in cases {
            assert_eq!(layout_of(shape), layout, "{shape}");
            assert_eq!(strip_layout(shape), stripped, "{shape}");
            assert_eq!(tuple_skeleton(shape), skeleton, "{shape}");
        }
    }

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
}
