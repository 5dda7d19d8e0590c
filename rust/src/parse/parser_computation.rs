//! A computation of HLO text: `ENTRY? name (params) -> shape { instruction+ }`, its signature
//! checked against its root, and its instructions each `ROOT? name = ...` (the right-hand side is
//! parser_instruction.rs's).

use std::borrow::Cow;

use crate::parse::parser::{Parser, Scope};
use crate::parse::scan::{err, Error, Result};
use crate::parse::shape::{parse_shape, skip_shape, Shape};
use crate::parse::text::{Comp, FxMap};

impl<'a> Parser<'a> {
    pub(crate) fn computation(&mut self, entry_seen: &mut bool) -> Result<()> {
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
        let name = self.c.required_name("a computation")?;
        let mut signature: Option<(usize, Shape)> = None;
        self.c.ws()?;
        if self.c.peek() == b'(' {
            self.c.pos += 1;
            if !self.c.eat(b')')? {
                loop {
                    self.c.ws()?;
                    self.c.required_name("a parameter name")?;
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

    pub(crate) fn instruction(&mut self, scope: &mut Scope<'a>) -> Result<()> {
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
}
