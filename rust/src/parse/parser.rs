//! HLO module text -> computations of instructions, to XLA's grammar (xla/hlo/parser/hlo_parser.cc):
//!
//! ```text
//! module       ::= 'HloModule' name (',' attribute)* stack_frames? computation+
//! computation  ::= 'ENTRY'? name ('(' params ')' '->' shape)? '{' instruction+ '}' (',' attribute)*
//! instruction  ::= 'ROOT'? name '=' shape? opcode '(' operands ')' (',' attribute)*
//! operand      ::= shape? name | shape? opcode '(' operands ')'        (a nested instruction)
//! ```
//!
//! Every name is looked up where XLA looks it up: operands and control predecessors among the
//! instructions already defined in the computation (so operand cycles cannot be written), called
//! computations among those already defined in the module. Nesting (operands, tuple shapes) is
//! bounded so deep input cannot overflow the stack.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock};

use crate::parse::literal::check_literal;
use crate::parse::opcodes::{async_shorthand, can_infer_shape, Async, OPCODES};
use crate::parse::scan::{err, strip_comments, Cursor, Error, Result};
use crate::parse::shape::{can_be_shape, parse_shape, skip_shape, Shape, MAX_DEPTH};
use crate::parse::text::{Comp, FxMap, Inst, Meta, ModuleText, COMPUTATION_ATTRIBUTES};

const HEADER_ATTRIBUTES: &[&str] = &[
    "is_scheduled",
    "replica_count",
    "num_partitions",
    "input_output_alias",
    "buffer_donor",
    "alias_passthrough_params",
    "entry_computation_layout",
    "frontend_attributes",
    "allow_spmd_sharding_propagation_to_parameters",
    "allow_spmd_sharding_propagation_to_output",
    "origin_recovery_table",
];

const FRAME_TABLES: &[&str] = &["FileNames", "FunctionNames", "FileLocations", "StackFrames"];

fn arities() -> &'static FxMap<&'static str, i8> {
    static MAP: OnceLock<FxMap<&'static str, i8>> = OnceLock::new();
    MAP.get_or_init(|| {
        let mut m = FxMap::default();
        for (name, a) in OPCODES {
            m.insert(*name, *a);
        }
        m
    })
}

/// What the checks need to know of an instruction besides its IR record.
/// An instruction's attributes as read: in printed order (metadata apart), with the
/// computations they call and where the last computation attribute was.
struct Attributes<'a> {
    list: Vec<(&'a str, Cow<'a, str>)>,
    called: Vec<Cow<'a, str>>,
    metadata: Option<Arc<Meta<'a>>>,
    calls_pos: usize,
}

pub(crate) type Chain<'a> = (Async, Option<Cow<'a, str>>, Cow<'a, str>, Cow<'a, str>);

pub(crate) struct Facts<'a> {
    /// Where the result shape starts (read again only where a check needs it).
    pub(crate) shape: Option<usize>,
    /// Async chain: kind, wrapped opcode (shorthand), the computation it runs, its thread.
    /// Boxed: few instructions are async, and the facts of every instruction are held at once.
    pub(crate) chain: Option<Box<Chain<'a>>>,
    pub(crate) parameter: i64,
    pub(crate) pos: usize,
}

pub(crate) struct Scope<'a> {
    pub(crate) insts: Vec<Inst<'a>>,
    pub(crate) facts: Vec<Facts<'a>>,
    pub(crate) names: FxMap<Cow<'a, str>, u32>,
    pub(crate) root: Option<u32>,
    pub(crate) anon: u32,
    /// One instruction read alone: operands with a shape but no definition become parameters.
    pub(crate) create_missing: bool,
}

pub struct Parser<'a> {
    pub c: Cursor<'a>,
    pub(crate) comps: Vec<Comp<'a>>,
    pub(crate) comp_names: FxMap<Cow<'a, str>, Option<Shape>>,
    /// Computations XLA creates for async shorthand, added before the computation being read.
    pub(crate) wrapped: Vec<Comp<'a>>,
    pub(crate) depth: usize,
    /// Computations already run by an explicit async-start (XLA allows one caller).
    pub(crate) async_computations: std::collections::HashSet<String>,
    /// Suffix of the last `_.N` name given to a computation written in place.
    pub(crate) inline_count: usize,
    /// Old spellings read: `(what, position of the first, how many)`.
    pub(crate) notes: Vec<(&'static str, usize, usize)>,
    /// Metadata read, by its text: most instructions repeat a few (one per source line).
    metas: FxMap<&'a str, Arc<Meta<'a>>>,
    /// One instruction's operands and attributes as they are read, reused from instruction to
    /// instruction; each instruction keeps an exact copy. Grown in place one push at a time,
    /// the kept lists were reallocated 2M times in a 20-graph report and held about 3 times
    /// the attributes they store (a vector's first allocation holds 4).
    operand_scratch: Vec<u32>,
    attr_scratch: Vec<(&'a str, Cow<'a, str>)>,
}

/// Whitespace that spans lines inside a value becomes one space (values are compared as text).
fn tidy(s: &str) -> Cow<'_, str> {
    // one pass over the bytes for the common value, with neither comment nor line break
    let b = s.as_bytes();
    let plain = !b.iter().enumerate().any(|(i, &c)| {
        c == b'\n' || c == b'\r' || (c == b'/' && matches!(b.get(i + 1), Some(b'*' | b'/')))
    });
    if plain {
        return Cow::Borrowed(s);
    }
    let s = strip_comments(s);
    if !s.contains(['\n', '\r']) {
        return s;
    }
    let parts: Vec<&str> = s
        .split(['\n', '\r'])
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    Cow::Owned(parts.join(" "))
}

pub(crate) fn owned<'a>(s: Cow<'_, str>) -> Cow<'a, str> {
    Cow::Owned(s.into_owned())
}

impl<'a> Parser<'a> {
    pub fn new(text: &'a str) -> Self {
        Parser {
            c: Cursor::new(text),
            comps: Vec::new(),
            comp_names: FxMap::default(),
            wrapped: Vec::new(),
            depth: 0,
            async_computations: Default::default(),
            inline_count: 0,
            notes: Vec::new(),
            metas: FxMap::default(),
            operand_scratch: Vec::new(),
            attr_scratch: Vec::new(),
        }
    }

    /// The line where `name` is defined further on in the current computation, if it is (a
    /// definition after its use: a cycle, or text out of order). Only read to word an error.
    fn defined_later(&self, name: &str) -> Option<u32> {
        if name.is_empty() {
            return None;
        }
        let rest = &self.c.text[self.c.pos..];
        let end = rest.find("\n}").unwrap_or(rest.len());
        let body = &rest[..end];
        let mut from = 0;
        while let Some(k) = body[from..].find(name) {
            let at = from + k;
            let before = body[..at].trim_end_matches('%');
            let line_start = before.trim_end_matches([' ', '\t']);
            let starts_line =
                line_start.is_empty() || line_start.ends_with('\n') || line_start.ends_with("ROOT");
            let after = body[at + name.len()..].trim_start();
            if starts_line && after.starts_with('=') {
                return Some(self.line(self.c.pos + at));
            }
            from = at + name.len();
        }
        None
    }

    /// Record that an old spelling was read at `pos` (one note per kind, counted).
    pub(crate) fn note(&mut self, what: &'static str, pos: usize) {
        match self.notes.iter_mut().find(|(w, _, _)| *w == what) {
            Some(entry) => entry.2 += 1,
            None => self.notes.push((what, pos, 1)),
        }
    }

    /// The notes with line numbers, for the module read.
    pub(crate) fn take_notes(&mut self) -> Vec<(&'static str, u32, usize)> {
        std::mem::take(&mut self.notes)
            .into_iter()
            .map(|(what, pos, n)| (what, self.line(pos), n))
            .collect()
    }

    pub(crate) fn line(&self, pos: usize) -> u32 {
        self.c.line_of(pos) as u32
    }

    pub fn parse_module(&mut self) -> Result<ModuleText<'a>> {
        self.c.ws()?;
        let start = self.c.pos;
        if !self.c.keyword("HloModule") {
            // XLA also reads computations without a header, and a single instruction alone.
            if self.c.keyword("ENTRY") || self.second_token_is(b'{') {
                self.c.pos = start;
                return self.body(Cow::Borrowed(""), start, Vec::new(), Vec::new());
            }
            return self.single_instruction();
        }
        self.c.ws()?;
        let name_pos = self.c.pos;
        let name = self.c.name();
        if name.is_empty() {
            return err(
                name_pos,
                format!("expected a module name, got {}", self.c.snippet(name_pos)),
            );
        }
        if self.c.peek() == b':' {
            self.c.pos += 1; // `HloModule name:`, an older printer's form
        }
        let mut header = Vec::new();
        while self.c.eat(b',')? {
            self.c.ws()?;
            let key_pos = self.c.pos;
            let (key, value) = self.attribute()?;
            if !HEADER_ATTRIBUTES.contains(&key) {
                return err(
                    key_pos,
                    format!("unexpected attribute {key} in the HloModule header"),
                );
            }
            if header.iter().any(|(k, _)| *k == key) {
                return err(key_pos, format!("attribute {key} already exists"));
            }
            header.push((key, value));
        }
        let tables = self.frame_tables()?;
        self.body(Cow::Borrowed(name), start, header, tables)
    }

    /// Computations up to the end of the text, then the module-level checks.
    fn body(
        &mut self,
        mut name: Cow<'a, str>,
        start: usize,
        header: Vec<(&'a str, Cow<'a, str>)>,
        tables: Vec<(&'a str, i64, &'a str)>,
    ) -> Result<ModuleText<'a>> {
        let mut entry_seen = false;
        loop {
            self.c.ws()?;
            if self.c.at_end() {
                break;
            }
            self.computation(&mut entry_seen)?;
        }
        if self.comps.is_empty() {
            return err(
                self.c.b.len(),
                format!("module {name} has no computations (truncated?)"),
            );
        }
        if name.is_empty() {
            let entry = self.comps.iter().find(|c| c.is_entry).or(self.comps.last());
            name = Cow::Owned(format!(
                "module_{}",
                entry.map(|c| c.name.as_ref()).unwrap_or("")
            ));
        }
        let module = ModuleText {
            name,
            header_pos: start,
            header,
            comps: std::mem::take(&mut self.comps),
            tables,
            notes: self.take_notes(),
        };
        crate::parse::checks::check_header(&module, &self.comp_names)?;
        Ok(module)
    }

    /// True when the token after the next one is `c` (XLA's `LookAhead`), e.g. `name {`.
    fn second_token_is(&mut self, c: u8) -> bool {
        let save = self.c.pos;
        let found = !self.c.name().is_empty() && self.c.ws().is_ok() && self.c.peek() == c;
        self.c.pos = save;
        found
    }

    /// One instruction alone (XLA's ParseSingleInstruction): `[name =] shape opcode(...)`, whose
    /// operands with a shape and no definition become parameters of the computation.
    fn single_instruction(&mut self) -> Result<ModuleText<'a>> {
        let start = self.c.pos;
        let mut scope = Scope {
            insts: Vec::new(),
            facts: Vec::new(),
            names: FxMap::default(),
            root: None,
            anon: 0,
            create_missing: true,
        };
        self.c.keyword("ROOT");
        self.c.ws()?;
        let name_pos = self.c.pos;
        let name: Cow<'a, str> = if can_be_shape(&mut self.c)? {
            Cow::Borrowed("instruction")
        } else {
            let name = self.c.name();
            if name.is_empty() || !self.c.eat(b'=')? {
                return err(
                    name_pos,
                    "not HLO text: expected `HloModule <name>`, a computation, or one instruction \
                     `name = shape opcode(...)`",
                );
            }
            Cow::Borrowed(name)
        };
        let index = self.rhs(&mut scope, name, name_pos, true)?;
        scope.insts[index as usize].is_root = true;
        self.c.ws()?;
        if !self.c.at_end() {
            return err(
                self.c.pos,
                format!(
                    "one instruction expected, more text follows: {}",
                    self.c.snippet(self.c.pos)
                ),
            );
        }
        let line = self.line(start);
        let comp = Cow::Owned(format!("{}.computation", scope.insts[index as usize].name));
        self.comps.append(&mut self.wrapped);
        self.comps.push(Comp {
            name: comp,
            insts: scope.insts,
            is_entry: true,
            line,
        });
        let name = Cow::Owned(format!(
            "module_{}",
            self.comps.last().map(|c| c.name.as_ref()).unwrap_or("")
        ));
        Ok(ModuleText {
            name,
            header_pos: start,
            header: Vec::new(),
            comps: std::mem::take(&mut self.comps),
            tables: Vec::new(),
            notes: self.take_notes(),
        })
    }

    /// The FileNames / FunctionNames / FileLocations / StackFrames block: rows `N "text"` or `N {..}`.
    fn frame_tables(&mut self) -> Result<Vec<(&'a str, i64, &'a str)>> {
        let mut rows = Vec::new();
        loop {
            self.c.ws()?;
            let save = self.c.pos;
            let word = self.c.ident();
            if !FRAME_TABLES.contains(&word) {
                self.c.pos = save;
                return Ok(rows);
            }
            loop {
                self.c.ws()?;
                if !self.c.peek().is_ascii_digit() {
                    break;
                }
                let n0 = self.c.pos;
                while self.c.peek().is_ascii_digit() {
                    self.c.pos += 1;
                }
                let index: i64 = match self.c.text[n0..self.c.pos].parse() {
                    Ok(v) => v,
                    Err(_) => return err(n0, format!("malformed {word} row")),
                };
                self.c.ws()?;
                let v0 = self.c.pos;
                let value = match self.c.peek() {
                    b'"' => {
                        self.c.skip_string()?;
                        &self.c.text[v0 + 1..self.c.pos - 1]
                    }
                    b'{' => {
                        self.c.skip_balanced()?;
                        &self.c.text[v0 + 1..self.c.pos - 1]
                    }
                    _ => return err(v0, format!("malformed {word} row")),
                };
                rows.push((word, index, value));
            }
        }
    }

    /// `key=value`; the value is raw text (brackets balanced, strings whole), comments removed.
    fn attribute(&mut self) -> Result<(&'a str, Cow<'a, str>)> {
        let key_pos = self.c.pos;
        let key = self.c.ident();
        if key.is_empty() {
            return err(
                key_pos,
                format!(
                    "expected an attribute name, got {}",
                    self.c.snippet(key_pos)
                ),
            );
        }
        if !self.c.eat(b'=')? {
            return err(self.c.pos, format!("attribute without value: {key}"));
        }
        self.c.ws()?;
        let start = self.c.pos;
        if key == "literal" {
            // `literal=f32[] 0.1`, `literal=(s32[2] {1, 2}, pred[] 0)`: shapes before literals.
            crate::parse::literal::check_shaped_literal(&mut self.c, 0)?;
            return Ok((key, tidy(&self.c.text[start..self.c.pos])));
        }
        let b = self.c.b;
        let mut end = start;
        while self.c.pos < b.len() {
            match b[self.c.pos] {
                b'{' | b'[' | b'(' => self.c.skip_balanced()?,
                b'"' | b'\'' => self.c.skip_string()?,
                b',' | b'}' | b')' | b']' => break,
                c if c.is_ascii_whitespace()
                    || (c == b'/'
                        && self.c.pos + 1 < b.len()
                        && matches!(b[self.c.pos + 1], b'*' | b'/')) =>
                {
                    // A bracketed part after a space continues the value
                    // (`replica_groups=mesh['x'=2] {'x'}`); anything else ends it.
                    let save = self.c.pos;
                    self.c.ws()?;
                    if matches!(self.c.peek(), b'{' | b'[') {
                        continue;
                    }
                    self.c.pos = save;
                    break;
                }
                _ => self.c.pos += 1,
            }
            end = self.c.pos;
        }
        self.c.pos = end;
        if self.c.pos == start {
            return err(start, format!("expected a value for attribute {key}"));
        }
        Ok((key, tidy(&self.c.text[start..end])))
    }

    fn computation(&mut self, entry_seen: &mut bool) -> Result<()> {
        let start = self.c.pos;
        let is_entry = self.c.keyword("ENTRY");
        if is_entry {
            if *entry_seen {
                return err(start, "expects only one ENTRY");
            }
            *entry_seen = true;
            self.c.ws()?;
        }
        let name_pos = self.c.pos;
        let name = self.c.name();
        if name.is_empty() {
            return err(
                name_pos,
                format!("expected a computation, got {}", self.c.snippet(name_pos)),
            );
        }
        let mut signature: Option<(usize, Shape)> = None;
        self.c.ws()?;
        if self.c.peek() == b'(' {
            self.c.pos += 1;
            if !self.c.eat(b')')? {
                loop {
                    self.c.ws()?;
                    let p = self.c.pos;
                    if self.c.name().is_empty() {
                        return err(
                            p,
                            format!("expected a parameter name, got {}", self.c.snippet(p)),
                        );
                    }
                    self.c.expect(b':', "':' after a parameter name")?;
                    skip_shape(&mut self.c)?;
                    if self.c.eat(b',')? {
                        continue;
                    }
                    self.c.expect(b')', "')' closing the parameter list")?;
                    break;
                }
            }
            self.c.ws()?;
            if !self.c.b[self.c.pos..].starts_with(b"->") {
                return err(
                    self.c.pos,
                    format!("expected '->' in the signature of {name}"),
                );
            }
            self.c.pos += 2;
            self.c.ws()?;
            let shape_pos = self.c.pos;
            signature = Some((shape_pos, parse_shape(&mut self.c)?));
        }
        self.c.ws()?;
        if self.c.peek() != b'{' {
            return err(
                self.c.pos,
                format!(
                    "expected '{{' opening computation {name}, got {}",
                    self.c.snippet(self.c.pos)
                ),
            );
        }
        let comp_line = self.line(name_pos);
        let scope = self.instruction_list(name, false)?;
        // `, execution_thread="..."` after the closing brace.
        while self.c.eat(b',')? {
            self.c.ws()?;
            let key_pos = self.c.pos;
            let (key, _) = self.attribute()?;
            if key != "execution_thread" {
                return err(
                    key_pos,
                    format!("unexpected attribute {key} after computation {name}"),
                );
            }
        }
        let root_index = scope.root.unwrap_or(scope.insts.len() as u32 - 1) as usize;
        let root_shape = self.shape_at(scope.facts[root_index].shape)?;
        if let (Some((shape_pos, declared)), Some(actual)) = (&signature, &root_shape) {
            if !declared.compatible(actual) {
                return err(
                    *shape_pos,
                    format!(
                        "shape of computation {name}, {}, is not compatible with that of its root instruction {}, {}",
                        declared.human(),
                        scope.insts[root_index].name,
                        actual.human()
                    ),
                );
            }
        }
        if self.comp_names.contains_key(name) {
            return err(name_pos, format!("computation {name} is defined twice"));
        }
        self.comp_names
            .insert(Cow::Borrowed(name), root_shape.or(signature.map(|s| s.1)));
        self.comps.append(&mut self.wrapped);
        self.comps.push(Comp {
            name: Cow::Borrowed(name),
            insts: scope.insts,
            is_entry,
            line: comp_line,
        });
        Ok(())
    }

    /// `{ instruction+ }` at the cursor (on the `{`): a new scope, its parameters checked.
    pub(crate) fn instruction_list(
        &mut self,
        name: &str,
        create_missing: bool,
    ) -> Result<Scope<'a>> {
        self.c.pos += 1;
        // Printers close a computation with `}` at the start of a line: the text up to there
        // sizes the tables (about one instruction per 64 bytes), sparing their regrowth.
        // (A computation written in place ends at its own brace: it starts small.)
        let estimate = if self.depth == 0 {
            self.c.to_next_closer(self.c.pos) / 64 + 4
        } else {
            8
        };
        let mut names = FxMap::default();
        names.reserve(estimate);
        let mut scope = Scope {
            insts: Vec::with_capacity(estimate),
            facts: Vec::with_capacity(estimate),
            names,
            root: None,
            anon: 0,
            create_missing,
        };
        loop {
            self.c.ws()?;
            if self.c.at_end() {
                let last = self.c.text.trim_end().len().saturating_sub(1);
                return err(last, format!("truncated: computation {name} is not closed"));
            }
            if self.c.peek() == b'}' {
                if scope.insts.is_empty() {
                    return err(
                        self.c.pos,
                        format!("computation {name} has no instructions"),
                    );
                }
                self.c.pos += 1;
                break;
            }
            self.instruction(&mut scope)?;
        }
        let numbers: Vec<i64> = scope.facts.iter().map(|f| f.parameter).collect();
        crate::parse::checks::check_parameters(name, &numbers).map_err(|(i, message)| Error {
            message,
            pos: scope.facts[i].pos,
        })?;
        Ok(scope)
    }

    fn instruction(&mut self, scope: &mut Scope<'a>) -> Result<()> {
        let start = self.c.pos;
        let is_root = self.c.keyword("ROOT");
        if is_root {
            self.c.ws()?;
        }
        let name_pos = self.c.pos;
        let name = self.c.name();
        if name.is_empty() || !self.c.eat(b'=')? {
            return err(
                name_pos,
                format!(
                    "expected an instruction (`name = shape opcode(...)`), got {}",
                    self.c.snippet(name_pos)
                ),
            );
        }
        if is_root && scope.root.is_some() {
            return err(start, "one computation should have only one ROOT");
        }
        let index = self.rhs(scope, Cow::Borrowed(name), name_pos, true)?;
        if is_root {
            scope.root = Some(index);
            scope.insts[index as usize].is_root = true;
        }
        Ok(())
    }

    /// `shape? opcode(operands) attributes`; returns the new instruction's index in the scope.
    pub(crate) fn rhs(
        &mut self,
        scope: &mut Scope<'a>,
        name: Cow<'a, str>,
        name_pos: usize,
        allow_attributes: bool,
    ) -> Result<u32> {
        self.depth += 1;
        crate::parse::stack::guard(name_pos)?;
        if self.depth > MAX_DEPTH {
            return err(
                name_pos,
                "maximum nesting depth exceeded in nested instructions",
            );
        }
        let line = self.line(name_pos);
        let mut shape_pos: Option<usize> = None;
        let mut shape_text: Cow<'a, str> = Cow::Borrowed("");
        if can_be_shape(&mut self.c)? {
            let s0 = self.c.pos;
            skip_shape(&mut self.c)?;
            shape_pos = Some(s0);
            shape_text = strip_comments(self.c.text[s0..self.c.pos].trim_end());
        }
        self.c.ws()?;
        let op_pos = self.c.pos;
        let mut opcode = self.c.ident();
        if opcode == "cross-replica-sum" {
            // all-reduce's name before 2019 (notes.rs): read as what it is today.
            self.note(crate::parse::notes::CROSS_REPLICA_SUM, op_pos);
            opcode = "all-reduce";
        }
        let implied_direction = crate::parse::notes::old_comparison(opcode);
        if implied_direction.is_some() {
            // XLA before 2019: one opcode per comparison (notes.rs), today compare + direction=.
            self.note(crate::parse::notes::OLD_COMPARISON, op_pos);
            opcode = "compare";
        }
        if opcode.is_empty() {
            return err(
                op_pos,
                format!("expected an opcode, got {}", self.c.snippet(op_pos)),
            );
        }
        let (op_arity, chain_kind, wrapped_opcode) = match arities().get_key_value(opcode) {
            Some((known, a)) => {
                // The table's own string, not the text's: the opcode is compared again and
                // again by later stages, and the table stays in cache where the text does not.
                opcode = *known;
                (*a, None, None)
            }
            None => match async_shorthand(opcode) {
                Some((kind, base)) if arities().contains_key(base) => (-1, Some(kind), Some(base)),
                _ => return err(op_pos, format!("unknown opcode {opcode}")),
            },
        };
        let chain_kind = chain_kind.or(match opcode {
            "async-start" => Some(Async::Start),
            "async-update" => Some(Async::Update),
            "async-done" => Some(Async::Done),
            _ => None,
        });
        if shape_pos.is_none() && (chain_kind.is_some() || !can_infer_shape(opcode)) {
            return err(op_pos, format!("cannot infer shape for opcode: {opcode}"));
        }
        self.c.ws()?;
        let open = self.c.pos;
        if self.c.peek() != b'(' {
            return err(
                open,
                format!(
                    "expected '(' after opcode {opcode}, got {}",
                    self.c.snippet(open)
                ),
            );
        }
        self.c.pos += 1;
        // (A computation written in place among the attributes reads its own instructions
        // meanwhile: each reader takes the scratch list, and the last to give it back keeps it.)
        let mut operands = std::mem::take(&mut self.operand_scratch);
        operands.clear();
        let mut payload: Cow<'a, str> = Cow::Borrowed("");
        let mut parameter = -1i64;
        match opcode {
            "parameter" => {
                self.c.ws()?;
                let n0 = self.c.pos;
                while self.c.peek().is_ascii_digit() || self.c.peek() == b'-' {
                    self.c.pos += 1;
                }
                parameter = match self.c.text[n0..self.c.pos].parse::<i64>() {
                    Ok(n) if n >= 0 => n,
                    Ok(_) => return err(n0, "parameter number must be >= 0"),
                    Err(_) => {
                        return err(
                            n0,
                            format!("expected a parameter number, got {}", self.c.snippet(n0)),
                        )
                    }
                };
                payload = Cow::Borrowed(&self.c.text[n0..self.c.pos]);
                self.close_operands(open, opcode)?;
            }
            "constant" => {
                let p0 = self.c.pos;
                let shape = self.shape_at(shape_pos)?.expect("constant has a shape");
                self.c.ws()?;
                let s0 = self.c.pos;
                if shape.tuple_elements().is_none()
                    && self.c.peek().is_ascii_alphabetic()
                    && can_be_shape(&mut self.c)?
                {
                    // `constant(f32[2] {1, 2})`: older printers wrote the shape again.
                    let own = crate::parse::shape::parse_shape(&mut self.c)?;
                    if own.human() != shape.human() {
                        return err(
                            s0,
                            format!(
                                "the constant's own shape {} is not its instruction's, {}",
                                own.human(),
                                shape.human()
                            ),
                        );
                    }
                    self.note(crate::parse::notes::SHAPED_CONSTANT, s0);
                }
                check_literal(&mut self.c, &shape)?;
                payload = tidy(self.c.text[p0..self.c.pos].trim());
                self.close_operands(open, opcode)?;
            }
            _ => {
                if !self.c.eat(b')')? {
                    loop {
                        let operand = self.operand(scope, &name)?;
                        operands.push(operand);
                        self.c.ws()?;
                        match self.c.peek() {
                            b',' => self.c.pos += 1,
                            b')' => {
                                self.c.pos += 1;
                                break;
                            }
                            0 | b'}' => {
                                let l = self.line(open);
                                return Err(Error {
                                    message: format!("unbalanced parentheses in {opcode}(...) opened on line {l}"),
                                    pos: open,
                                });
                            }
                            _ => {
                                return err(
                                    self.c.pos,
                                    format!(
                                        "expected ',' or ')' in the operands of {opcode}, got {}",
                                        self.c.snippet(self.c.pos)
                                    ),
                                )
                            }
                        }
                    }
                }
            }
        }
        let operands = {
            let exact = operands.to_vec();
            self.operand_scratch = operands;
            exact
        };
        if op_arity >= 0
            && opcode != "parameter"
            && opcode != "constant"
            && operands.len() != op_arity as usize
        {
            return err(
                op_pos,
                format!(
                    "{opcode} expects {op_arity} operands, but has {}",
                    operands.len()
                ),
            );
        }
        let Attributes {
            list: attrs,
            mut called,
            metadata,
            calls_pos,
        } = self.instruction_attributes(
            scope,
            &name,
            opcode,
            op_pos,
            allow_attributes,
            implied_direction,
        )?;
        self.check_operand_shapes(scope, opcode, &operands, shape_pos, &attrs, op_pos)?;
        let chain = self.async_chain(
            scope,
            chain_kind,
            wrapped_opcode,
            &name,
            &operands,
            shape_pos,
            &attrs,
            &mut called,
            (op_pos, calls_pos, line),
        )?;
        let name = if name.is_empty() {
            let mut generated = format!("{opcode}.anon");
            while scope.names.contains_key(generated.as_str()) {
                scope.anon += 1;
                generated = format!("{opcode}.anon.{}", scope.anon);
            }
            Cow::Owned(generated)
        } else {
            name
        };
        let index = self.add(
            scope,
            Inst {
                name,
                opcode: Cow::Borrowed(opcode),
                shape: shape_text,
                operands,
                attrs,
                called,
                payload,
                metadata,
                is_root: false,
                line,
            },
            Facts {
                shape: shape_pos,
                chain: chain.map(Box::new),
                parameter,
                pos: name_pos,
            },
            name_pos,
        )?;
        self.depth -= 1;
        Ok(index)
    }

    /// `metadata={...}` read, or shared with the same text read before.
    fn metadata(&mut self, value: &Cow<'a, str>, pos: usize) -> Result<Arc<Meta<'a>>> {
        let Cow::Borrowed(text) = value else {
            return crate::parse::checks::metadata(value, pos).map(Arc::new);
        };
        if let Some(m) = self.metas.get(text) {
            return Ok(m.clone());
        }
        let m = Arc::new(crate::parse::checks::metadata(value, pos)?);
        self.metas.insert(text, m.clone());
        Ok(m)
    }

    /// `, key=value` attributes up to the end of the instruction: metadata parsed, called
    /// computations and control predecessors looked up, values checked (attrs.rs).
    fn instruction_attributes(
        &mut self,
        scope: &Scope<'a>,
        name: &str,
        opcode: &str,
        op_pos: usize,
        allow: bool,
        implied_direction: Option<&'static str>,
    ) -> Result<Attributes<'a>> {
        let mut attrs = std::mem::take(&mut self.attr_scratch);
        attrs.clear();
        let mut called: Vec<Cow<'a, str>> = Vec::new();
        let mut metadata = None;
        let mut calls_pos = 0usize;
        let mut attr_pos: Vec<usize> = Vec::new();
        loop {
            self.c.ws()?;
            if self.c.peek() != b',' {
                break;
            }
            if !allow {
                // In an operand list the comma separates operands, not attributes.
                break;
            }
            self.c.pos += 1;
            self.c.ws()?;
            let key_pos = self.c.pos;
            let (key, value) = match self.inline_computations()? {
                Some(kv) => kv,
                None => self.attribute()?,
            };
            if key == "metadata" || attrs.iter().any(|(k, _)| *k == key) {
                if metadata.is_some() || key != "metadata" {
                    return err(key_pos, format!("attribute {key} already exists"));
                }
                metadata = Some(self.metadata(&value, key_pos)?);
                continue;
            }
            if COMPUTATION_ATTRIBUTES.contains(&key) {
                calls_pos = key_pos;
                for callee in crate::parse::checks::names_in(&value) {
                    if !self.comp_names.contains_key(callee.as_ref()) {
                        return err(
                            key_pos,
                            format!("{name} calls undefined computation {callee}"),
                        );
                    }
                    called.push(owned(callee));
                }
            } else if key == "control-predecessors" {
                for pred in crate::parse::checks::names_in(&value) {
                    if !scope.names.contains_key(pred.as_ref()) {
                        return err(
                            key_pos,
                            format!("{name} has undefined control-predecessor {pred}"),
                        );
                    }
                }
            }
            attrs.push((key, value));
            attr_pos.push(key_pos);
        }
        if let Some(direction) = implied_direction {
            // The direction an old comparison opcode names; one written as well is refused as a
            // repeated attribute, as XLA refuses it.
            if let Some(i) = attrs.iter().position(|(k, _)| *k == "direction") {
                return err(attr_pos[i], "attribute direction already exists");
            }
            attrs.push(("direction", Cow::Borrowed(direction)));
            attr_pos.push(op_pos);
        }
        crate::parse::attrs::check(opcode, &attrs).map_err(|(i, m)| Error {
            message: m,
            pos: i.map(|i| attr_pos[i]).unwrap_or(op_pos),
        })?;
        for (i, (key, value)) in attrs.iter().enumerate() {
            if let Some(what) = crate::parse::notes::old_attribute(opcode, key, value) {
                self.note(what, attr_pos[i]);
            }
        }
        let list = attrs.drain(..).collect();
        self.attr_scratch = attrs;
        Ok(Attributes {
            list,
            called,
            metadata,
            calls_pos,
        })
    }

    /// The shape that starts at `pos`, read again (the cursor is left where it was).
    pub(crate) fn shape_at(&mut self, pos: Option<usize>) -> Result<Option<Shape>> {
        let Some(pos) = pos else {
            return Ok(None);
        };
        let here = self.c.pos;
        self.c.pos = pos;
        let shape = parse_shape(&mut self.c);
        self.c.pos = here;
        shape.map(Some)
    }

    fn close_operands(&mut self, open: usize, opcode: &str) -> Result<()> {
        if self.c.eat(b')')? {
            return Ok(());
        }
        if self.c.at_end() || self.c.peek() == b'}' {
            let l = self.line(open);
            return err(
                open,
                format!("unbalanced parentheses in {opcode}(...) opened on line {l}"),
            );
        }
        err(
            self.c.pos,
            format!(
                "expected ')' closing {opcode}(...), got {}",
                self.c.snippet(self.c.pos)
            ),
        )
    }

    pub(crate) fn add(
        &mut self,
        scope: &mut Scope<'a>,
        inst: Inst<'a>,
        facts: Facts<'a>,
        name_pos: usize,
    ) -> Result<u32> {
        let index = scope.insts.len() as u32;
        if scope.names.insert(inst.name.clone(), index).is_some() {
            return err(
                name_pos,
                format!("{} is defined twice in this computation", inst.name),
            );
        }
        scope.insts.push(inst);
        scope.facts.push(facts);
        Ok(index)
    }

    /// One operand: `shape? name`, else a nested instruction `shape? opcode(...)` (XLA's order).
    fn operand(&mut self, scope: &mut Scope<'a>, parent: &str) -> Result<u32> {
        self.c.ws()?;
        let start = self.c.pos;
        if let Some(i) = self.operand_as_defined(scope, start) {
            return Ok(i);
        }
        let mut shape_span = None;
        if can_be_shape(&mut self.c)? {
            skip_shape(&mut self.c)?;
            shape_span = Some((start, self.c.pos));
            self.c.ws()?;
        }
        let name_pos = self.c.pos;
        let name = self.c.name();
        self.c.ws()?;
        // XLA's quirk, kept for its counts: a lone instruction's `f32[] add(` first tries `add` as
        // an operand name and creates that missing parameter before reading the nested `add`.
        if let (true, Some((s0, s1)), false) = (scope.create_missing, shape_span, name.is_empty()) {
            if self.c.peek() == b'(' && !scope.names.contains_key(name) {
                self.missing_parameter(scope, name, s0, s1)?;
            }
        }
        // Only `opcode(` starts a nested instruction; anything else after a name is the caller's
        // to judge (`,`, `)`, or an unclosed list).
        if !name.is_empty() && self.c.peek() != b'(' || name.is_empty() && shape_span.is_some() {
            if let Some(&i) = scope.names.get(name) {
                if let Some((s0, s1)) = shape_span {
                    self.check_declared_shape(scope, i, s0, s1)?;
                }
                return Ok(i);
            }
            if let (true, Some((s0, s1))) = (scope.create_missing, shape_span) {
                return self.missing_parameter(scope, name, s0, s1);
            }
            let shown = if name.is_empty() { "(unnamed)" } else { name };
            if let Some(later) = self.defined_later(name) {
                return err(
                    name_pos,
                    format!(
                        "{parent} uses {shown}, which is defined only later, on line {later} \
                         (a cycle, or instructions out of order: operands are defined before use)"
                    ),
                );
            }
            return err(
                name_pos,
                format!(
                    "{parent} uses undefined operand {shown} (operands are defined before use)"
                ),
            );
        }
        // A nested instruction: named once read (`add.anon`, `add.anon.1`), as XLA names it.
        self.c.pos = start;
        self.rhs(scope, Cow::Borrowed(""), start, false)
    }

    /// The usual operand, `f32[2,5]{1,0} %x` then `,` or `)`, with its shape written exactly as
    /// `x`'s definition wrote it: that text passed the shape's checks when `x` was read, and
    /// equal text is all `check_declared_shape` asks, so it is only measured here, not parsed
    /// again (operands' shapes were most of the reader's shape parsing). Anything else (no
    /// shape, other text, comments, a nested instruction, an unknown name) returns `None` with
    /// the cursor unmoved, for the general path and its errors.
    fn operand_as_defined(&mut self, scope: &Scope<'a>, start: usize) -> Option<u32> {
        let b = self.c.b;
        if !b.get(start).is_some_and(|c| c.is_ascii_alphabetic() || *c == b'(') {
            return None;
        }
        // The shape's extent: up to whitespace outside brackets.
        let mut depth = 0usize;
        let mut end = start;
        while end < b.len() {
            match b[end] {
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth = depth.checked_sub(1)?,
                b'/' | b'"' | b'\'' | b'\n' | b'\r' => return None,
                c if depth == 0 && (c == b' ' || c == b'\t') => break,
                b',' if depth == 0 => return None,
                _ => {}
            }
            end += 1;
        }
        if depth != 0 || end >= b.len() {
            return None;
        }
        let shape = &self.c.text[start..end];
        let mut at = end;
        while at < b.len() && (b[at] == b' ' || b[at] == b'\t') {
            at += 1;
        }
        self.c.pos = at;
        let name = self.c.name();
        let next = self.c.peek();
        let found = match scope.names.get(name) {
            Some(&i) if !name.is_empty() && (next == b',' || next == b')') => {
                (scope.insts[i as usize].shape == shape).then_some(i)
            }
            _ => None,
        };
        if found.is_none() {
            self.c.pos = start;
        }
        found
    }
}
