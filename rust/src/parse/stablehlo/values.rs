//! What the emitter writes and the words it writes them in: HLO values, instructions and
//! computations; attribute dictionaries (`{a = 1 : i64, b}`) in order, as Python's dicts keep it;
//! names made HLO identifiers; strings quoted as HLO's; the values an operation reads (`%x`,
//! `%x#1`) and a region reads from outside it.

use std::collections::HashSet;
use std::rc::Rc;

use crate::parse::text::FxMap;

use crate::parse::stablehlo::structure::{Op, Region};
use crate::parse::stablehlo::text::{comma, inner, is_space, is_word, partition, strip};

/// An HLO value: the instruction's name and shape; `elements` for an operation of several
/// results (a tuple whose elements MLIR names `%x#k`).
#[derive(Clone)]
pub(crate) struct Value {
    pub name: Rc<str>,
    pub shape: Rc<str>,
    pub elements: Option<Rc<Vec<String>>>,
}

/// An instruction as printed: `attrs` in order, with `meta` (its `metadata={...}`, shared by
/// the instructions of one location) printed before `attrs[meta_at]`. Shapes, opcodes and
/// metadata are shared strings: a module repeats few of them, and each allocation is paid twice,
/// made and freed.
pub(crate) struct Inst {
    pub name: Rc<str>,
    pub shape: Rc<str>,
    pub opcode: Rc<str>,
    pub operands: Vec<Rc<str>>,
    pub attrs: Vec<String>,
    pub meta: Option<Rc<str>>,
    pub meta_at: usize,
    pub line: usize,
    pub root: bool,
}

impl Inst {
    /// An attribute printed first (before the metadata too).
    pub(crate) fn attr_first(&mut self, attr: String) {
        self.attrs.insert(0, attr);
        self.meta_at += 1;
    }

    /// The attributes in printed order.
    pub(crate) fn printed(&self) -> impl Iterator<Item = &str> {
        let (before, after) = self.attrs.split_at(self.meta_at.min(self.attrs.len()));
        before.iter().map(String::as_str).chain(self.meta.as_deref()).chain(after.iter().map(String::as_str))
    }
}

pub(crate) struct Comp {
    pub name: String,
    pub line: usize,
    pub insts: Vec<Inst>,
    pub values: FxMap<String, Value>,
    pub elements: FxMap<String, Value>,
    pub entry: bool,
}

impl Comp {
    pub(crate) fn new(name: String, line: usize) -> Self {
        Comp { name, line, insts: Vec::new(), values: FxMap::default(), elements: FxMap::default(), entry: false }
    }

    pub(crate) fn last(&mut self) -> &mut Inst {
        self.insts.last_mut().expect("an instruction was written")
    }
}

/// A dictionary in insertion order (Python's `dict`): keys are few.
#[derive(Clone, Default)]
pub(crate) struct Dict(pub Vec<(String, String)>);

impl Dict {
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
    }

    pub(crate) fn has(&self, key: &str) -> bool {
        self.0.iter().any(|(k, _)| k == key)
    }

    /// `d[key] = value`: replaced in place, or added last.
    pub(crate) fn set(&mut self, key: String, value: String) {
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = value,
            None => self.0.push((key, value)),
        }
    }

    pub(crate) fn setdefault(&mut self, key: String, value: String) {
        if !self.has(&key) {
            self.0.push((key, value));
        }
    }
}

pub(crate) fn ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-'
}

fn subst(name: &str) -> String {
    name.chars().map(|c| if ident_char(c) { c } else { '_' }).collect()
}

pub(crate) fn sanitize(name: &str) -> String {
    let s = subst(name);
    match s.chars().next() {
        Some(c) if c.is_ascii_alphabetic() || c == '_' => s,
        _ => format!("_{s}"),
    }
}

pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

pub(crate) fn unquote(s: &str) -> String {
    let s = strip(s);
    if s.starts_with('"') && s.ends_with('"') {
        return inner(s).replace("\\\"", "\"").replace("\\\\", "\\");
    }
    s.to_string()
}

/// `{a = 1 : i64, b, c = "x"}` (or `<{...}>`) -> {"a": "1 : i64", "b": "true", "c": "\"x\""}.
pub(crate) fn attr_dict(text: &str) -> Dict {
    let mut t = strip(text);
    if t.starts_with("<{") {
        t = inner(t);
    }
    let mut out = Dict::default();
    for part in comma(inner(t)) {
        let (key, sep, value) = partition(part, "=");
        let value = if sep { strip(value).to_string() } else { "true".to_string() };
        out.set(strip(key).trim_matches('"').to_string(), value);
    }
    out
}

/// The instruction's frontend attributes: `frontend` as they are, and the attributes the
/// translation does not read as `stablehlo.<name>` (they enter the instruction's hash).
pub(crate) fn carry(attrs: &Dict, frontend: &Dict) -> String {
    let mut f: Vec<&(String, String)> = frontend.0.iter().collect();
    f.sort();
    let mut a: Vec<&(String, String)> = attrs.0.iter().collect();
    a.sort();
    let mut items = Vec::new();
    for (k, v) in f {
        items.push(format!("{}={}", subst(k), quote(&unquote(v))));
    }
    for (k, v) in a {
        items.push(format!("{}={}", subst(&format!("stablehlo.{k}")), quote(v)));
    }
    if items.is_empty() {
        String::new()
    } else {
        format!("frontend_attributes={{{}}}", items.join(", "))
    }
}

fn ref_char(c: char) -> bool {
    is_word(c) || c == '.' || c == '$' || c == '-'
}

/// The values `text` reads, in the order written (`%iterArg = ...` defines, it is not read):
/// the reference's `%[\w.$-]+(?:#\d+)?(?![\w.$#-])(?!\s*=[^=])`.
pub(crate) fn refs_in(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut p = 0;
    while let Some(k) = text[p..].find('%') {
        let start = p + k;
        let rest = &text[start + 1..];
        let n = rest.find(|c: char| !ref_char(c)).unwrap_or(rest.len());
        p = start + 1;
        if n == 0 {
            continue;
        }
        let mut end = start + 1 + n;
        if let Some(d) = text[end..].strip_prefix('#') {
            let m = d.find(|c: char| !c.is_ascii_digit()).unwrap_or(d.len());
            if m > 0 {
                end += 1 + m;
            }
        }
        let after = &text[end..];
        if after.starts_with(|c: char| ref_char(c) || c == '#') {
            continue;
        }
        let a = after.trim_start_matches(is_space);
        if let Some(r) = a.strip_prefix('=') {
            if r.chars().next().is_some_and(|c| c != '=') {
                continue;
            }
        }
        out.push(&text[start..end]);
        p = end;
    }
    out
}

pub(crate) fn refs_of(op: &Op) -> Vec<&str> {
    refs_in(&op.text)
}

/// The values a region reads from outside it, in order of first use.
pub(crate) fn free_refs(region: &Region) -> Vec<String> {
    let defined: HashSet<String> = region.args.iter().map(|(a, _)| a.clone()).collect();
    let mut seen: Vec<String> = Vec::new();
    let mut seen_set: HashSet<String> = HashSet::new();
    fn walk(ops: &[Op], defined: &mut HashSet<String>, seen: &mut Vec<String>, seen_set: &mut HashSet<String>) {
        for op in ops {
            for r in refs_of(op) {
                let base = r.split('#').next().unwrap_or(r);
                if !defined.contains(base) && seen_set.insert(r.to_string()) {
                    seen.push(r.to_string());
                }
            }
            for region in &op.regions {
                let mut inner = defined.clone();
                inner.extend(region.args.iter().map(|(a, _)| a.clone()));
                walk(&region.ops, &mut inner, seen, seen_set);
            }
            defined.extend(op.results.iter().map(|(n, _)| n.clone()));
        }
    }
    let mut d = defined;
    walk(&region.ops, &mut d, &mut seen, &mut seen_set);
    seen
}
