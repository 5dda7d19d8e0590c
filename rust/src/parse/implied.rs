//! The computations and instructions XLA creates while reading: computations written in place
//! (`to_apply={...}`), the wrapped computation of async shorthand (`add-start`), and the
//! parameters a lone instruction's undefined operands become.

use std::borrow::Cow;

use crate::parse::parser::{owned, Facts, Parser, Scope};
use crate::parse::comments::strip_comments;
use crate::parse::scan::Result;
use crate::parse::shape::Shape;
use crate::parse::text::{Comp, Inst, COMPUTATION_ATTRIBUTES};

impl<'a> Parser<'a> {
    /// `to_apply={ instructions }` or `branch_computations={{...}, {...}}`: computations written
    /// in place. Each becomes a computation of its own (named `_`, `_.1`, ... as XLA names them);
    /// the attribute's value is then their names. None (cursor unmoved) for any other attribute.
    pub(crate) fn inline_computations(&mut self) -> Result<Option<(&'a str, Cow<'a, str>)>> {
        let save = self.c.pos;
        let key = self.c.ident();
        if !COMPUTATION_ATTRIBUTES.contains(&key) || !self.c.eat(b'=')? || !self.c.eat(b'{')? {
            self.c.pos = save;
            return Ok(None);
        }
        let open = self.c.pos - 1;
        if self.starts_instruction()? {
            self.c.pos = open;
            let name = self.inline_computation()?;
            return Ok(Some((key, Cow::Owned(name))));
        }
        self.c.ws()?;
        if self.c.peek() != b'{' {
            self.c.pos = save;
            return Ok(None);
        }
        let mut names = Vec::new();
        loop {
            self.c.ws()?;
            if self.c.peek() == b'{' {
                names.push(self.inline_computation()?);
            } else {
                names.push(self.c.required_name("a computation")?.to_string());
            }
            if self.c.eat(b',')? {
                continue;
            }
            self.c.expect(b'}', "'}' closing a list of computations")?;
            break;
        }
        Ok(Some((key, Cow::Owned(format!("{{{}}}", names.join(", "))))))
    }

    /// True when an instruction (`ROOT`, or `name =`) starts at the cursor; the cursor stays.
    fn starts_instruction(&mut self) -> Result<bool> {
        let save = self.c.pos;
        self.c.ws()?;
        let found = self.c.keyword("ROOT") || (!self.c.name().is_empty() && self.c.eat(b'=')?);
        self.c.pos = save;
        Ok(found)
    }

    fn inline_computation(&mut self) -> Result<String> {
        let line = self.line(self.c.pos);
        let mut name = "_".to_string();
        while self.comp_names.contains_key(name.as_str()) {
            self.inline_count += 1; // kept across computations: each name is tried once
            name = format!("_.{}", self.inline_count);
        }
        let scope = self.instruction_list(&name, false)?;
        let root = scope.root.unwrap_or(scope.insts.len() as u32 - 1) as usize;
        let root_shape = self.shape_at(scope.facts[root].shape)?;
        self.comp_names.insert(Cow::Owned(name.clone()), root_shape);
        self.wrapped.push(Comp {
            name: Cow::Owned(name.clone()),
            insts: scope.insts,
            is_entry: false,
            line,
        });
        Ok(name)
    }

    /// An operand of a lone instruction that names nothing: XLA makes it the next parameter.
    pub(crate) fn missing_parameter(
        &mut self,
        scope: &mut Scope<'a>,
        name: &'a str,
        s0: usize,
        s1: usize,
    ) -> Result<u32> {
        let number = scope.facts.iter().filter(|f| f.parameter >= 0).count() as i64;
        let mut pname: Cow<'a, str> = Cow::Borrowed(name);
        if name.is_empty() {
            let mut generated = format!("parameter.{number}");
            while scope.names.contains_key(generated.as_str()) {
                generated.push_str(".1");
            }
            pname = Cow::Owned(generated);
        }
        let inst = Inst {
            name: pname,
            opcode: Cow::Borrowed("parameter"),
            shape: strip_comments(self.c.text[s0..s1].trim_end()),
            operands: Vec::new(),
            attrs: Vec::new(),
            called: Vec::new(),
            payload: Cow::Owned(number.to_string()),
            metadata: None,
            is_root: false,
            line: self.line(s0),
        };
        let facts = Facts {
            shape: Some(s0),
            chain: None,
            parameter: number,
            pos: s0,
        };
        self.add(scope, inst, facts, s0)
    }

    /// The computation XLA builds for `op-start`: one parameter per operand and the op as root.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn wrap(
        &mut self,
        scope: &Scope<'a>,
        start_name: &str,
        opcode: &'a str,
        operands: &[u32],
        shape: Option<&Shape>,
        attrs: &[(&'a str, Cow<'a, str>)],
        line: u32,
    ) -> String {
        let mut name = format!("{start_name}.async_wrapped");
        while self.comp_names.contains_key(name.as_str()) {
            name.push_str(".1");
        }
        let mut insts = Vec::with_capacity(operands.len() + 1);
        let mut param_names = Vec::new();
        for (i, &o) in operands.iter().enumerate() {
            let pname = if i == 0 {
                "async_param".to_string()
            } else {
                format!("async_param.{i}")
            };
            param_names.push(i as u32);
            insts.push(Inst {
                name: Cow::Owned(pname),
                opcode: Cow::Borrowed("parameter"),
                shape: scope.insts[o as usize].shape.clone(),
                operands: Vec::new(),
                attrs: Vec::new(),
                called: Vec::new(),
                payload: Cow::Owned(i.to_string()),
                metadata: None,
                is_root: false,
                line,
            });
        }
        let root_shape = shape
            .and_then(Shape::tuple_elements)
            .and_then(|els| els.get(1))
            .map(|s| Cow::Owned(s.human()))
            .unwrap_or(Cow::Borrowed(""));
        let called: Vec<Cow<'a, str>> = attrs
            .iter()
            .filter(|(k, _)| COMPUTATION_ATTRIBUTES.contains(k))
            .flat_map(|(_, v)| {
                crate::parse::checks::names_in(v)
                    .into_iter()
                    .map(owned)
                    .collect::<Vec<_>>()
            })
            .collect();
        insts.push(Inst {
            name: Cow::Borrowed("async_op"),
            opcode: Cow::Borrowed(opcode),
            shape: root_shape,
            operands: param_names,
            attrs: attrs.to_vec(),
            called,
            payload: Cow::Borrowed(""),
            metadata: None,
            is_root: true,
            line,
        });
        self.comp_names.insert(Cow::Owned(name.clone()), None);
        self.wrapped.push(Comp {
            name: Cow::Owned(name.clone()),
            insts,
            is_entry: false,
            line,
        });
        name
    }
}
