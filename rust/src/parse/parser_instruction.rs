//! One instruction's right-hand side, `shape? opcode(operands) attributes`: its opcode (old
//! spellings noted, async shorthand), its operands or its parameter number or literal, its
//! attributes, then the checks of its operands' shapes and async chain, and the instruction
//! added to its computation.

use std::borrow::Cow;
use std::sync::OnceLock;

use crate::parse::comments::strip_comments;
use crate::parse::literal::check_literal;
use crate::parse::opcodes::{async_shorthand, can_infer_shape, Async, OPCODES};
use crate::parse::parser::{Facts, Parser, Scope};
use crate::parse::parser_attributes::{tidy, Attributes};
use crate::parse::scan::{err, Error, Result};
use crate::parse::shape::{can_be_shape, skip_shape, MAX_DEPTH};
use crate::parse::text::{FxMap, Inst};

fn arities() -> &'static FxMap<&'static str, i8> {
    static MAP: OnceLock<FxMap<&'static str, i8>> = OnceLock::new();
    MAP.get_or_init(|| OPCODES.iter().copied().collect())
}

impl<'a> Parser<'a> {
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
        let (payload, parameter) =
            self.operand_list(scope, &name, opcode, open, shape_pos, &mut operands)?;
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

    /// What `opcode(` holds up to its closing `)`: a parameter's number or a constant's literal
    /// (returned as the payload, with the parameter's number), else the operands, each pushed
    /// on `operands` (a nested instruction read in place).
    fn operand_list(
        &mut self,
        scope: &mut Scope<'a>,
        name: &str,
        opcode: &'a str,
        open: usize,
        shape_pos: Option<usize>,
        operands: &mut Vec<u32>,
    ) -> Result<(Cow<'a, str>, i64)> {
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
                        let operand = self.operand(scope, name)?;
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
        Ok((payload, parameter))
    }
}
