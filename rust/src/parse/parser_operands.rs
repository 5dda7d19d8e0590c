//! An instruction's operands: a name defined before (`shape? name`, its shape held to the
//! definition's), else a nested instruction (`shape? opcode(...)`), an undefined name worded
//! with where it is defined later; and the instruction entered in its computation's scope.

use std::borrow::Cow;

use crate::parse::parser::{Facts, Parser, Scope};
use crate::parse::scan::{err, Result};
use crate::parse::shape::{can_be_shape, parse_shape, skip_shape, Shape};
use crate::parse::text::Inst;

impl<'a> Parser<'a> {
    /// The line where `name` is defined further on in the current computation, if it is (a
    /// definition after its use: a cycle, or text out of order). Only read to word an error.
    pub(crate) fn defined_later(&self, name: &str) -> Option<u32> {
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

    pub(crate) fn close_operands(&mut self, open: usize, opcode: &str) -> Result<()> {
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
    pub(crate) fn operand(&mut self, scope: &mut Scope<'a>, parent: &str) -> Result<u32> {
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
    pub(crate) fn operand_as_defined(&mut self, scope: &Scope<'a>, start: usize) -> Option<u32> {
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
