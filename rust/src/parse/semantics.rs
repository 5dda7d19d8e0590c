//! Checks that need shapes: an operand's declared shape against its definition, and what XLA
//! checks of conditionals, broadcasts, infeeds, parameter replication and custom-call layouts.

use std::borrow::Cow;

use crate::parse::opcodes::Async;
use crate::parse::parser::{Chain, Parser, Scope};
use crate::parse::scan::{err, Cursor, Result};
use crate::parse::shape::{parse_shape, Shape};

impl<'a> Parser<'a> {
    /// `add(f32[2,5] x, ...)`: the shape written with an operand must be its definition's
    /// (layout aside). Equal text is the common, cheap case.
    pub(crate) fn check_declared_shape(
        &mut self,
        scope: &Scope<'a>,
        i: u32,
        s0: usize,
        s1: usize,
    ) -> Result<()> {
        let declared = self.c.text[s0..s1].trim_end();
        let defined = &scope.insts[i as usize].shape;
        if defined.is_empty() || declared == defined.as_ref() {
            return Ok(());
        }
        let (Some(a), Some(b)) = (
            self.shape_at(Some(s0))?,
            self.shape_at(scope.facts[i as usize].shape)?,
        ) else {
            return Ok(());
        };
        if !a.compatible(&b) {
            return err(
                s0,
                format!(
                    "the declared operand shape {} is not compatible with the shape of {}, {}",
                    a.human(),
                    scope.insts[i as usize].name,
                    b.human()
                ),
            );
        }
        Ok(())
    }

    /// Checks that need operand or result shapes: conditional selectors, infeed, parameter
    /// replication, custom-call operand layouts.
    pub(crate) fn check_operand_shapes(
        &mut self,
        scope: &Scope<'a>,
        opcode: &str,
        operands: &[u32],
        shape_pos: Option<usize>,
        attrs: &[(&'a str, Cow<'a, str>)],
        op_pos: usize,
    ) -> Result<()> {
        let attr = |k: &str| {
            attrs
                .iter()
                .find(|(key, _)| *key == k)
                .map(|(_, v)| v.as_ref())
        };
        match opcode {
            "conditional" => {
                let Some(&first) = operands.first() else {
                    return err(op_pos, "conditional needs a branch selector operand");
                };
                if let Some(Shape::Array(t, dims, _)) =
                    self.shape_at(scope.facts[first as usize].shape)?
                {
                    let t = crate::parse::element_types::element_type_name(t);
                    if !dims.is_empty() || (t != "pred" && t != "s32") {
                        return err(
                            op_pos,
                            "the first operand of conditional must be a scalar of PRED or S32",
                        );
                    }
                    if t == "pred" && attr("branch_computations").is_some() {
                        return err(
                            op_pos,
                            "a conditional on PRED takes true_computation and false_computation",
                        );
                    }
                    if t == "s32" && attr("branch_computations").is_none() {
                        return err(op_pos, "a conditional on S32 takes branch_computations");
                    }
                }
            }
            "broadcast" if attr("dimensions").is_none() => {
                if let Some(&o) = operands.first() {
                    if matches!(self.shape_at(scope.facts[o as usize].shape)?, Some(Shape::Array(_, d, _)) if !d.is_empty())
                    {
                        return err(op_pos, "broadcast requires the attribute dimensions (its operand is not a scalar)");
                    }
                }
            }
            "infeed" if !matches!(self.shape_at(shape_pos)?, Some(Shape::Tuple(v)) if !v.is_empty()) =>
            {
                return err(op_pos, "infeed must have a non-empty tuple shape");
            }
            _ => {}
        }
        if let Some(value) = attr("parameter_replication") {
            if let Some(shape) = self.shape_at(shape_pos)? {
                let given = value
                    .split(',')
                    .filter(|v| !v.trim_matches(['{', '}', ' ']).is_empty())
                    .count();
                if given != shape.leaf_count() {
                    return err(
                        op_pos,
                        format!("parameter has {} leaf buffers, but parameter_replication has {given} elements", shape.leaf_count()),
                    );
                }
            }
        }
        if let Some(value) = attr("operand_layout_constraints") {
            let mut c = Cursor::new(value);
            c.expect(b'{', "'{' opening operand_layout_constraints")?;
            let mut layouts = Vec::new();
            if !c.eat(b'}')? {
                loop {
                    c.ws()?;
                    layouts.push(parse_shape(&mut c)?);
                    if c.eat(b',')? {
                        continue;
                    }
                    c.expect(b'}', "'}' closing operand_layout_constraints")?;
                    break;
                }
            }
            if layouts.len() != operands.len() {
                return err(
                    op_pos,
                    format!(
                        "expected {} operand layout constraints, {} given",
                        operands.len(),
                        layouts.len()
                    ),
                );
            }
            for (n, (layout, &o)) in layouts.iter().zip(operands).enumerate() {
                if let Some(actual) = self.shape_at(scope.facts[o as usize].shape)? {
                    if !layout.compatible(&actual) {
                        return err(op_pos, format!("operand layout constraint {} for operand {n} is not compatible with {}", layout.human(), actual.human()));
                    }
                }
            }
        }
        Ok(())
    }

    /// The opcode of the root of computation `name`, when it was read already.
    fn root_opcode(&self, name: &str) -> Option<Cow<'a, str>> {
        let comp = self.comps.iter().rev().find(|c| c.name == name)?;
        let root = comp
            .insts
            .iter()
            .find(|i| i.is_root)
            .or(comp.insts.last())?;
        Some(root.opcode.clone())
    }

    /// Async chains: start -> update* -> done, one wrapped computation and thread throughout.
    /// Creates the wrapped computation of shorthand starts (added to `called`).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn async_chain(
        &mut self,
        scope: &Scope<'a>,
        chain_kind: Option<Async>,
        wrapped_opcode: Option<&'a str>,
        name: &str,
        operands: &[u32],
        shape_pos: Option<usize>,
        attrs: &[(&'a str, Cow<'a, str>)],
        called: &mut Vec<Cow<'a, str>>,
        (op_pos, calls_pos, line): (usize, usize, u32),
    ) -> Result<Option<Chain<'a>>> {
        let thread: Option<Cow<'a, str>> = attrs
            .iter()
            .find(|(k, _)| *k == "async_execution_thread")
            .map(|(_, v)| Cow::Owned(v.trim_matches('"').to_string()));
        let Some(kind) = chain_kind else {
            return Ok(None);
        };
        {
            // The opcode the chain wraps: the shorthand's base, else the root of the computation
            // an explicit async-start calls (XLA compares the done's shorthand against it:
            // `async-start(...), calls=%c` then `custom-call-done(...)` is host offloading's form).
            let mut chain_wrapped: Option<Cow<'a, str>> = wrapped_opcode.map(Cow::Borrowed);
            let chain_name = match kind {
                Async::Start => {
                    let shape = self.shape_at(shape_pos)?;
                    let tuple_ok = matches!(shape.as_ref().and_then(Shape::tuple_elements),
                        Some(els) if els.len() >= 2 && els[0].tuple_elements().is_some());
                    if !tuple_ok {
                        return err(op_pos, "AsyncStart expects the op shape to be in the form of ((async-operands), async-outputs, state)");
                    }
                    if let Some(base) = wrapped_opcode {
                        let wrapped =
                            self.wrap(scope, name, base, operands, shape.as_ref(), attrs, line);
                        called.push(Cow::Owned(wrapped.clone()));
                        (
                            Cow::Owned(wrapped),
                            thread.clone().unwrap_or(Cow::Borrowed("main")),
                        )
                    } else {
                        let Some(c) = called.first() else {
                            return err(op_pos, "async-start needs calls=<computation>");
                        };
                        if !self.async_computations.insert(c.to_string()) {
                            return err(
                                calls_pos,
                                format!("computation {c} is called by more than one async op"),
                            );
                        }
                        chain_wrapped = self.root_opcode(c);
                        (c.clone(), thread.clone().unwrap_or(Cow::Borrowed("main")))
                    }
                }
                Async::Update | Async::Done => {
                    let previous = match operands {
                        [one] => scope.facts[*one as usize].chain.as_deref(),
                        _ => None,
                    };
                    let Some((prev_kind, prev_wrapped, prev_comp, prev_thread)) = previous else {
                        return err(
                            op_pos,
                            "AsyncUpdate and AsyncDone expect a single async op as their operand",
                        );
                    };
                    if *prev_kind == Async::Done {
                        return err(
                            op_pos,
                            "AsyncUpdate and AsyncDone expect a single async op as their operand",
                        );
                    }
                    if wrapped_opcode.is_some() && prev_wrapped.as_deref() != wrapped_opcode {
                        return err(
                            op_pos,
                            format!(
                                "Expect async wrapped opcode to be {}, but got {}",
                                prev_wrapped.as_deref().unwrap_or("async"),
                                wrapped_opcode.unwrap_or("")
                            ),
                        );
                    }
                    if let Some(c) = called.first() {
                        if c != prev_comp {
                            return err(calls_pos, format!("Expect async_wrapped_computation to be {prev_comp}, but got {c}"));
                        }
                    }
                    if let Some(t) = &thread {
                        if t != prev_thread {
                            return err(op_pos, format!("Expect async_execution_thread to be {prev_thread}, but got {t}"));
                        }
                    }
                    if kind == Async::Update {
                        let prev_shape = self.shape_at(scope.facts[operands[0] as usize].shape)?;
                        let shape = self.shape_at(shape_pos)?;
                        if prev_shape.is_some() && prev_shape != shape {
                            if !late_bound(prev_shape.as_ref(), shape.as_ref()) {
                                return err(op_pos, "AsyncUpdate expects the op shape to be the same as the operand shape");
                            }
                            self.note(crate::parse::notes::LATE_BOUND_ASYNC_UPDATE, op_pos);
                        }
                    }
                    chain_wrapped = prev_wrapped.clone();
                    (prev_comp.clone(), prev_thread.clone())
                }
            };
            Ok(Some((kind, chain_wrapped, chain_name.0, chain_name.1)))
        }
    }
}

/// An async-update that binds the output its async-start left empty (`((operands), (), context)`
/// then `((operands), output, context)`): newer XLA parses it (hlo_diff's
/// CreateWithLateBoundAsyncUpdateWorks), jaxlib 0.10.2 refuses it. Operands and context must agree.
fn late_bound(start: Option<&Shape>, update: Option<&Shape>) -> bool {
    let (Some(a), Some(b)) = (
        start.and_then(Shape::tuple_elements),
        update.and_then(Shape::tuple_elements),
    ) else {
        return false;
    };
    a.len() == b.len()
        && a.len() >= 3
        && a[0] == b[0]
        && a[a.len() - 1] == b[b.len() - 1]
        && a[1..a.len() - 1]
            .iter()
            .all(|s| s.tuple_elements().is_some_and(<[Shape]>::is_empty))
}
