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
//!
//! The reader is one `Parser` over one cursor, its productions a file each as XLA's grammar
//! has them: the module here (header, frame tables, the computations in turn),
//! parser_computation.rs a computation and its instructions, parser_instruction.rs an
//! instruction's right-hand side, parser_operands.rs its operands, parser_attributes.rs its
//! attributes; checks.rs, semantics.rs and implied.rs what XLA checks and creates meanwhile.

use std::borrow::Cow;
use std::sync::Arc;

use crate::parse::opcodes::Async;
use crate::parse::scan::{err, Cursor, Result};
use crate::parse::shape::{can_be_shape, Shape};
use crate::parse::text::{Comp, FxMap, Inst, Meta, ModuleText};

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

pub(crate) type Chain<'a> = (Async, Option<Cow<'a, str>>, Cow<'a, str>, Cow<'a, str>);

/// What the checks need to know of an instruction besides its IR record.
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
    pub(crate) metas: FxMap<&'a str, Arc<Meta<'a>>>,
    /// One instruction's operands and attributes as they are read, reused from instruction to
    /// instruction; each instruction keeps an exact copy. Grown in place one push at a time,
    /// the kept lists were reallocated 2M times in a 20-graph report and held about 3 times
    /// the attributes they store (a vector's first allocation holds 4).
    pub(crate) operand_scratch: Vec<u32>,
    pub(crate) attr_scratch: Vec<(&'a str, Cow<'a, str>)>,
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
        let name = self.c.required_name("a module name")?;
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
}
