//! The computations and instructions of a StableHLO module as XLA's own export writes them
//! (hlo_text.rs prints them, with the line of the user's file each one stands for).
//!
//! Where StableHLO and HLO differ in structure, this follows xla/hlo/translate/mhlo_to_hlo: a
//! function is a computation (`main`, or the one public function, is ENTRY), `func.call` a `call`,
//! each region a computation of its own; an operation of several results has a tuple shape and
//! its results are `get-tuple-element`s; `while` carries one tuple; a region of `case`/`if`
//! receives the values it uses from outside as its one parameter (the value itself when there is
//! one, else a tuple), and `while` carries them through its body. Per-operation translation is
//! ops.rs's, passed in (`Translate`); a function's signature and shardings are emit_funcs.rs's.

use std::collections::{HashMap, HashSet};
use std::hash::BuildHasherDefault;
use std::rc::Rc;

use crate::parse::stablehlo::error::{at, index_error, stack_guard, R};
use crate::parse::stablehlo::locations::Locations;
use crate::parse::stablehlo::shardy_meshes::{read_meshes, Meshes};
use crate::parse::stablehlo::structure::{Func, MlirModule, Op, Region};
use crate::parse::stablehlo::text::{is_space, strip};
use crate::parse::text::{Fx, FxMap};
use crate::parse::stablehlo::values::{quote, refs_of, sanitize, Comp, Inst, Value};

pub(crate) const FUNC_RESULT_SHARDING: &str = "xla.sdy.FuncResultSharding";
pub(crate) const SDY_FRONTEND: &str = "xla.sdy.sharding";
/// Elements all of a module's constants may write in the HLO text, splats expanded (a splat of
/// one constant is bounded apart, mlir_types.rs's MAX_SPLAT): the reader's memory stays bounded.
pub(crate) const LITERAL_BUDGET: i128 = 1 << 25;
const TERMINATORS: [&str; 4] = ["stablehlo.return", "return", "func.return", "mhlo.return"];

pub(crate) type Translate = fn(&mut Emitter, &mut Comp, &mut Op) -> R<()>;

/// How a computation is built: see `Emitter::computation`.
#[derive(Default)]
pub(crate) struct Shape<'a> {
    pub tuple_root: bool,
    pub carry: &'a [String],
    pub tuple_param: bool,
    pub result_shardings: &'a [String],
}

pub(crate) struct Emitter {
    translate: Translate,
    pub funcs: Vec<Func>,
    pub(crate) by_name: HashMap<String, usize>,
    locs: Locations,
    metadata: FxMap<String, Option<Rc<str>>>,
    /// one string per distinct shape and opcode written (see `Inst`)
    words: HashSet<Rc<str>, BuildHasherDefault<Fx>>,
    /// functions written (emit_funcs.rs), and those being written (a call back is recursion)
    pub(crate) done: HashMap<String, String>,
    pub(crate) busy: HashSet<String>,
    pub comps: Vec<Comp>,
    count: usize,
    pub meshes: Meshes,
    /// elements the module's constants may still write (splats expand: the text is no bound)
    pub literal_budget: i128,
    name_buf: String,
}

/// `\s(?:func\.|stablehlo\.)?return\s`: a return after an operation, on its line.
fn return_inside(text: &str) -> bool {
    for (k, _) in text.match_indices("return") {
        if !text[k + 6..].starts_with(is_space) {
            continue;
        }
        let before = &text[..k];
        let before = before.strip_suffix("func.").or_else(|| before.strip_suffix("stablehlo.")).map_or(before, |b| b);
        let plain = text[..k].chars().next_back().is_some_and(is_space);
        if plain || before.chars().next_back().is_some_and(is_space) {
            return true;
        }
    }
    false
}

impl Emitter {
    pub(crate) fn new(module: &mut MlirModule, translate: Translate) -> R<Self> {
        let funcs = std::mem::take(&mut module.funcs);
        let by_name = funcs.iter().enumerate().map(|(k, f)| (f.name.clone(), k)).collect();
        let meshes = read_meshes(&module.meshes)?;
        Ok(Emitter {
            translate,
            funcs,
            by_name,
            locs: Locations::new(std::mem::take(&mut module.locs)),
            metadata: FxMap::default(),
            words: HashSet::default(),
            done: HashMap::new(),
            busy: HashSet::new(),
            comps: Vec::new(),
            count: 0,
            meshes,
            literal_budget: LITERAL_BUDGET,
            name_buf: String::new(),
        })
    }

    pub(crate) fn fresh(&mut self, base: &str) -> String {
        self.fresh_name(base).to_string()
    }

    /// `fresh`'s name, written in a buffer kept for it (one allocation: the shared name).
    fn fresh_name(&mut self, base: &str) -> Rc<str> {
        use std::fmt::Write;
        self.count += 1;
        let plain = base.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && base.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.' || c == '-');
        self.name_buf.clear();
        if plain {
            self.name_buf.push_str(base);
        } else {
            self.name_buf.push_str(&sanitize(base));
        }
        let _ = write!(self.name_buf, ".{}", self.count);
        Rc::from(self.name_buf.as_str())
    }

    #[allow(clippy::too_many_arguments)]
    pub(crate) fn inst(
        &mut self,
        comp: &mut Comp,
        opcode: &str,
        shape: &str,
        operands: &[&Value],
        attrs: Vec<String>,
        line: usize,
        loc: &str,
        base: &str,
    ) -> Value {
        let meta = self.metadata(loc);
        let name = self.fresh_name(if base.is_empty() { opcode } else { base });
        let shape = self.word(shape);
        comp.insts.push(Inst {
            name: name.clone(),
            shape: shape.clone(),
            opcode: self.word(opcode),
            operands: operands.iter().map(|v| v.name.clone()).collect(),
            meta_at: attrs.len(),
            attrs,
            meta,
            line,
            root: false,
        });
        Value { name, shape, elements: None }
    }

    fn word(&mut self, text: &str) -> Rc<str> {
        if let Some(w) = self.words.get(text) {
            return w.clone();
        }
        let w: Rc<str> = text.into();
        self.words.insert(w.clone());
        w
    }

    fn metadata(&mut self, loc: &str) -> Option<Rc<str>> {
        if loc.is_empty() {
            return None;
        }
        if let Some(m) = self.metadata.get(loc) {
            return m.clone();
        }
        let m = self.metadata_of(loc);
        let m = (!m.is_empty()).then(|| Rc::from(m));
        self.metadata.insert(loc.to_string(), m.clone());
        m
    }

    fn metadata_of(&mut self, loc: &str) -> String {
        let (op_name, file, line) = self.locs.resolve(loc);
        let mut parts = Vec::new();
        if !op_name.is_empty() {
            parts.push(format!("op_name={}", quote(&op_name)));
        }
        if !file.is_empty() {
            parts.push(format!("source_file={} source_line={line}", quote(&file)));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!("metadata={{{}}}", parts.join(" "))
        }
    }

    pub(crate) fn element(&mut self, comp: &mut Comp, value: &Value, k: usize, line: usize) -> R<Value> {
        let key = format!("{}#{k}", value.name);
        if let Some(got) = comp.elements.get(&key) {
            return Ok(got.clone());
        }
        let Some(shape) = value.elements.as_ref().and_then(|e| e.get(k)).cloned() else { return index_error() };
        let got = self.inst(comp, "get-tuple-element", &shape, &[value], vec![format!("index={k}")], line, "", "");
        comp.elements.insert(key, got.clone());
        Ok(got)
    }

    pub(crate) fn lookup(&mut self, comp: &mut Comp, r: &str, line: usize) -> R<Value> {
        if r.contains('#') {
            if let Some(v) = comp.values.get(r) {
                return Ok(v.clone());
            }
        }
        let (base, index) = match r.split_once('#') {
            Some((b, i)) => (b, i),
            None => (r, ""),
        };
        let Some(value) = comp.values.get(base).cloned() else {
            return at(format!("value {r} is not defined where it is used"), line);
        };
        let Some(elements) = &value.elements else {
            if !index.is_empty() && index != "0" {
                return at(format!("value {r}: {base} has one result"), line);
            }
            return Ok(value);
        };
        let n = elements.len();
        if index.is_empty() {
            if n == 1 {
                return self.element(comp, &value, 0, line);
            }
            return at(format!("value {r} has {n} results: name one (#k)"), line);
        }
        let k: usize = index.parse().unwrap_or(usize::MAX);
        if k >= n {
            return at(format!("value {r}: {base} has {n} results"), line);
        }
        self.element(comp, &value, k, line)
    }

    /// Name the operation's results: `%x` for one, `%x:3` (or `%a, %b`) for a tuple's.
    pub(crate) fn bind(&mut self, comp: &mut Comp, op: &Op, value: Value) -> R<()> {
        if op.results.is_empty() {
            return Ok(());
        }
        if op.results.len() == 1 {
            let (name, count) = &op.results[0];
            let got = value.elements.as_ref().map_or(1, |e| e.len());
            if got != *count {
                return at(format!("{} has {got} results, named as {count}", op.name), op.line);
            }
            comp.values.insert(name.clone(), value);
            return Ok(());
        }
        if value.elements.as_ref().map(|e| e.len()) != Some(op.results.len()) {
            return at(
                format!("{}: results named apart are read for operations of several results", op.name),
                op.line,
            );
        }
        for (k, (name, _)) in op.results.iter().enumerate() {
            let v = self.element(comp, &value, k, op.line)?;
            comp.values.insert(name.clone(), v);
        }
        Ok(())
    }

    /// A computation of `ops`: each parameter binds one value (`[(key, HLO shape)]`) or, given
    /// several (or always, `tuple_param`), a tuple whose elements bind them. Its root: the
    /// returned value, a tuple of several (or always, `tuple_root`), with `carry`'s values
    /// appended; `result_shardings` (Shardy's, per result, "" for none) pass each such result
    /// through XLA's `xla.sdy.FuncResultSharding` custom call. Returns its name and the returned
    /// values' shapes.
    pub(crate) fn computation(
        &mut self,
        name: String,
        line: usize,
        params: &[Vec<(String, String)>],
        ops: &mut [Op],
        how: Shape<'_>,
    ) -> R<(String, Vec<String>)> {
        stack_guard()?;
        let mut comp = Comp::new(name.clone(), line);
        for (number, group) in params.iter().enumerate() {
            let shapes: Vec<String> = group.iter().map(|(_, s)| s.clone()).collect();
            if group.len() == 1 && !how.tuple_param {
                let v = self.inst(&mut comp, "parameter", &shapes[0], &[], vec![], line, "", "Arg");
                comp.last().opcode = format!("parameter({number})").into();
                comp.values.insert(group[0].0.clone(), v);
                continue;
            }
            let mut whole =
                self.inst(&mut comp, "parameter", &format!("({})", shapes.join(", ")), &[], vec![], line, "", "arg_tuple");
            comp.last().opcode = format!("parameter({number})").into();
            whole.elements = Some(Rc::new(shapes));
            for (k, (key, _)) in group.iter().enumerate() {
                let v = self.element(&mut comp, &whole, k, line)?;
                comp.values.insert(key.clone(), v);
            }
        }
        let Some(last) = ops.last().filter(|op| TERMINATORS.contains(&op.name.as_str())) else {
            if let Some(shared) = ops.iter().find(|op| return_inside(&op.text)) {
                return at(
                    format!(
                        "computation {name}: its return shares a line with {} (one operation a line is read)",
                        shared.name
                    ),
                    shared.line,
                );
            }
            return at(format!("computation {name} has no return"), ops.last().map_or(line, |op| op.line));
        };
        let _ = last;
        let n = ops.len();
        for op in ops[..n - 1].iter_mut() {
            if TERMINATORS.contains(&op.name.as_str()) {
                return at(format!("{} before the end of its region", op.name), op.line);
            }
            (self.translate)(self, &mut comp, op)?;
        }
        let ret = &ops[n - 1];
        let mut returned = Vec::new();
        for r in refs_of(ret) {
            returned.push(self.lookup(&mut comp, r, ret.line)?);
        }
        for r in how.carry {
            returned.push(self.lookup(&mut comp, r, ret.line)?);
        }
        for (k, text) in how.result_shardings.iter().enumerate() {
            if !text.is_empty() {
                let Some(v) = returned.get(k).cloned() else { return index_error() };
                returned[k] = self.func_result(&mut comp, &v, text, ret.line);
            }
        }
        if how.result_shardings.iter().any(|s| !s.is_empty()) && returned.len() == 1 {
            let shape = format!("({})", returned[0].shape);
            let mut whole = self.inst(&mut comp, "tuple", &shape, &[&returned[0]], vec![], ret.line, "", "");
            whole.elements = Some(Rc::new(vec![returned[0].shape.to_string()]));
            let inner = whole.shape[1..whole.shape.len() - 1].to_string();
            let v = self.inst(&mut comp, "get-tuple-element", &inner, &[&whole], vec!["index=0".into()], ret.line, "", "");
            returned = vec![v];
        }
        if returned.len() == 1 && !how.tuple_root {
            let root = returned[0].name.clone();
            if !comp.insts.iter().any(|i| i.name == root) {
                return at("returned value is not of this computation", ret.line);
            }
            for i in comp.insts.iter_mut() {
                i.root = i.name == root;
            }
        } else {
            let shape = format!("({})", returned.iter().map(|v| &*v.shape).collect::<Vec<_>>().join(", "));
            let refs: Vec<&Value> = returned.iter().collect();
            self.inst(&mut comp, "tuple", &shape, &refs, vec![], ret.line, &ret.loc, "");
            comp.last().root = true;
        }
        let shapes = returned.iter().map(|v| v.shape.to_string()).collect();
        self.comps.push(comp);
        Ok((name, shapes))
    }

    fn func_result(&mut self, comp: &mut Comp, value: &Value, text: &str, line: usize) -> Value {
        let t = strip(text);
        let per_value = format!("#sdy.sharding_per_value<[{}]>", t.strip_prefix("#sdy.sharding").unwrap_or(t));
        let attrs = vec![
            format!("custom_call_target=\"{FUNC_RESULT_SHARDING}\""),
            "custom_call_has_side_effect=true".to_string(),
            format!("frontend_attributes={{{SDY_FRONTEND}={}}}", quote(&per_value)),
        ];
        self.inst(comp, "custom-call", &value.shape.clone(), &[value], attrs, line, "", "")
    }

    pub(crate) fn region(
        &mut self,
        region: &mut Region,
        params: &[Vec<(String, String)>],
        how: Shape<'_>,
    ) -> R<(String, Vec<String>)> {
        let name = self.fresh("region");
        self.computation(name, region.line, params, &mut region.ops, how)
    }
}
