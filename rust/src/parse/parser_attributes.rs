//! An instruction's `, key=value` attributes as HLO text writes them: each value raw text
//! (brackets balanced, strings whole, comments removed, line breaks one space), metadata read
//! once per distinct text, called computations and control predecessors looked up, every value
//! checked (attrs.rs).

use std::borrow::Cow;
use std::sync::Arc;

use crate::parse::comments::strip_comments;
use crate::parse::parser::{owned, Parser, Scope};
use crate::parse::scan::{err, Error, Result};
use crate::parse::text::{Meta, COMPUTATION_ATTRIBUTES};

/// An instruction's attributes as read: in printed order (metadata apart), with the
/// computations they call and where the last computation attribute was.
pub(crate) struct Attributes<'a> {
    pub(crate) list: Vec<(&'a str, Cow<'a, str>)>,
    pub(crate) called: Vec<Cow<'a, str>>,
    pub(crate) metadata: Option<Arc<Meta<'a>>>,
    pub(crate) calls_pos: usize,
}

/// Whitespace that spans lines inside a value becomes one space (values are compared as text).
pub(crate) fn tidy(s: &str) -> Cow<'_, str> {
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

impl<'a> Parser<'a> {
    /// `key=value`; the value is raw text (brackets balanced, strings whole), comments removed.
    pub(crate) fn attribute(&mut self) -> Result<(&'a str, Cow<'a, str>)> {
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

    /// `metadata={...}` read, or shared with the same text read before.
    pub(crate) fn metadata(&mut self, value: &Cow<'a, str>, pos: usize) -> Result<Arc<Meta<'a>>> {
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
    pub(crate) fn instruction_attributes(
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
}
