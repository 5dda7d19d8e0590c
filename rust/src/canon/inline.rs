//! `call` instructions replaced by their callee's body, as XLA's CallInliner does before any
//! other pass (xla/service/call_inliner.cc): a jitted function called (`call`, `to_apply=f`) and
//! the same function inlined (`jax.jit(inline=True)`, `jnp.where` vs `lax.select`) are one
//! compiled program, so they are one program here too (issue 37).
//!
//! The reader's IR stays as the text has it (XLA's counts, issue 18); the reader builds a second
//! IR of the inlined copy, and the canonical form, the matching, the diagnosis and the reports
//! are made on that one (py/parse_hlo.rs, `Module.inlined`). The inlined instructions keep their
//! metadata (op_name, source lines) and the text line they were read from, so a change inside a
//! callee is still found, named and located where the user wrote it.
//!
//! Which calls XLA keeps as calls is `inline_kept.rs`.
//! Callees are inlined first (nested calls), each call site gets its own copy, and a callee no
//! instruction calls any more is dropped, as XLA's DCE drops it.

use std::borrow::Cow;
use std::collections::HashSet;

use crate::canon::inline_kept::{async_computations, inlinable};
use crate::canon::py_text::python_int;
use crate::parse::text::{Comp, FxMap, Inst, ModuleText};

/// The module with every inlinable `call` replaced by its callee's body: a copy of the records
/// (the reader's own stay as the text has them), None where nothing is inlined.
pub(crate) fn inline_calls<'a>(module: &ModuleText<'a>) -> Option<ModuleText<'a>> {
    let mut names: FxMap<&str, usize> = FxMap::default();
    for c in &module.comps {
        *names.entry(c.name.as_ref()).or_default() += 1;
    }
    let by_name: FxMap<&str, usize> = module
        .comps
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name.as_ref(), i))
        .collect();
    let asynchronous = async_computations(module);
    // A callee's name shared by several computations (those written in place are all `_`) is
    // not resolved here: such calls stay.
    let callee_of = |c: usize, ins: &Inst| -> Option<usize> {
        let comp = &module.comps[c];
        if ins.opcode != "call"
            || ins.called.len() != 1
            || asynchronous.contains(comp.name.as_ref())
        {
            return None;
        }
        let name = ins.called[0].as_ref();
        let callee = *by_name.get(name)?;
        (names[name] == 1
            && callee != c
            && inlinable(ins)
            && !module.comps[callee].insts.is_empty())
        .then_some(callee)
    };
    let wanted: Vec<Vec<(usize, usize)>> = module
        .comps
        .iter()
        .enumerate()
        .map(|(c, comp)| {
            comp.insts
                .iter()
                .enumerate()
                .filter_map(|(i, ins)| callee_of(c, ins).map(|callee| (i, callee)))
                .collect()
        })
        .collect();
    if wanted.iter().all(Vec::is_empty) {
        return None;
    }
    let mut comps: Vec<Comp<'a>> = module
        .comps
        .iter()
        .map(|c| Comp {
            name: c.name.clone(),
            insts: c.insts.clone(),
            is_entry: c.is_entry,
            line: c.line,
        })
        .collect();
    let called_before = called_names(&comps);
    // Callees first, so a callee's own calls are inlined before it is copied; a call cycle
    // (which XLA refuses) is left as it is (`state[callee] != 2` when its caller is done).
    let mut state = vec![0u8; comps.len()];
    for start in 0..comps.len() {
        let mut stack = vec![(start, false)];
        while let Some((c, expanded)) = stack.pop() {
            if expanded {
                if !wanted[c].is_empty() {
                    let insts = std::mem::take(&mut comps[c].insts);
                    comps[c].insts = inlined(insts, &wanted[c], &comps, &state);
                }
                state[c] = 2;
                continue;
            }
            if state[c] != 0 {
                continue;
            }
            state[c] = 1;
            stack.push((c, true));
            for &(_, callee) in &wanted[c] {
                if state[callee] == 0 {
                    stack.push((callee, false));
                }
            }
        }
    }
    drop_uncalled(&mut comps, &called_before);
    Some(module.with_comps(comps))
}

fn called_names(comps: &[Comp]) -> HashSet<String> {
    comps
        .iter()
        .flat_map(|c| &c.insts)
        .flat_map(|ins| ins.called.iter().map(|n| n.to_string()))
        .collect()
}

/// A computation's instructions with the calls `calls` (instruction, callee) replaced by copies
/// of their callees' bodies, in the call's place. `state[callee] == 2`: the callee is final (its
/// own calls inlined); otherwise (a cycle) the call stays.
fn inlined<'a>(
    insts: Vec<Inst<'a>>,
    calls: &[(usize, usize)],
    comps: &[Comp<'a>],
    state: &[u8],
) -> Vec<Inst<'a>> {
    let site: FxMap<usize, usize> = calls
        .iter()
        .filter(|&&(_, callee)| state[callee] == 2 && params_fit(&insts, comps, callee))
        .copied()
        .collect();
    if site.is_empty() {
        return insts;
    }
    let root = insts
        .iter()
        .rposition(|i| i.is_root)
        .unwrap_or(insts.len() - 1);
    let mut taken: HashSet<String> = insts.iter().map(|i| i.name.to_string()).collect();
    // Where each instruction of the caller lands (`Val::At`) or what it stands for: a call whose
    // callee returns a parameter is that operand of the call (`Val::Same`).
    enum Val {
        At(u32),
        Same(u32),
    }
    let mut out: Vec<Inst<'a>> = Vec::with_capacity(insts.len());
    let mut val: Vec<Val> = Vec::with_capacity(insts.len());
    // Per copied instruction of a callee: its operands as (is_caller_operand, index).
    let mut pending: Vec<(usize, Vec<Ref>)> = Vec::new();
    #[derive(Clone, Copy)]
    enum Ref {
        Caller(u32),
        Out(u32),
    }
    for (i, ins) in insts.iter().enumerate() {
        let Some(&callee) = site.get(&i) else {
            val.push(Val::At(out.len() as u32));
            out.push(ins.clone());
            continue;
        };
        let body = &comps[callee].insts;
        let mut mapped: Vec<Ref> = Vec::with_capacity(body.len());
        for b in body {
            if b.opcode == "parameter" {
                let n = python_int(&b.payload).unwrap_or(0) as usize;
                mapped.push(Ref::Caller(ins.operands[n]));
                continue;
            }
            let at = out.len() as u32;
            out.push(b.clone());
            out[at as usize].name = Cow::Owned(unique(&mut taken, &b.name));
            out[at as usize].is_root = false;
            pending.push((
                at as usize,
                b.operands.iter().map(|&o| mapped[o as usize]).collect(),
            ));
            mapped.push(Ref::Out(at));
        }
        let callee_root = body
            .iter()
            .rposition(|b| b.is_root)
            .unwrap_or(body.len() - 1);
        val.push(match mapped[callee_root] {
            Ref::Out(at) => Val::At(at),
            Ref::Caller(o) => Val::Same(o),
        });
    }
    // A caller's instruction as an index into `out`, through calls that return an operand.
    let resolve = |mut i: u32| -> u32 {
        loop {
            match val[i as usize] {
                Val::At(at) => return at,
                Val::Same(o) => i = o,
            }
        }
    };
    let mut copied = vec![false; out.len()];
    for (at, refs) in pending {
        copied[at] = true;
        out[at].operands = refs
            .into_iter()
            .map(|r| match r {
                Ref::Caller(o) => resolve(o),
                Ref::Out(o) => o,
            })
            .collect();
    }
    for (at, ins) in out.iter_mut().enumerate() {
        if !copied[at] {
            ins.operands = ins.operands.iter().map(|&o| resolve(o)).collect();
        }
        ins.is_root = false;
    }
    out[resolve(root as u32) as usize].is_root = true;
    out
}

/// Every parameter of the callee names an operand of each of its calls (XLA's verifier's check;
/// a call that fails it stays as written).
fn params_fit(insts: &[Inst], comps: &[Comp], callee: usize) -> bool {
    let fewest = insts
        .iter()
        .filter(|i| {
            i.opcode == "call"
                && i.called.first().map(|n| n.as_ref()) == Some(comps[callee].name.as_ref())
        })
        .map(|i| i.operands.len())
        .min()
        .unwrap_or(0);
    comps[callee].insts.iter().all(|b| {
        b.opcode != "parameter"
            || python_int(&b.payload).is_some_and(|n| n >= 0 && (n as usize) < fewest)
    })
}

/// The callee's name where the caller has none of it, else XLA's uniquifier's `name.N`.
fn unique(taken: &mut HashSet<String>, name: &str) -> String {
    let mut candidate = name.to_string();
    let mut n = 1;
    while taken.contains(&candidate) {
        candidate = format!("{name}.{n}");
        n += 1;
    }
    taken.insert(candidate.clone());
    candidate
}

/// Computations called before inlining and by nothing after it (XLA's DCE after CallInliner);
/// a computation nothing called before (the entry, an orphan) stays.
fn drop_uncalled(comps: &mut Vec<Comp>, called_before: &HashSet<String>) {
    loop {
        let called = called_names(comps);
        let before = comps.len();
        comps.retain(|c| {
            c.is_entry
                || called.contains(c.name.as_ref())
                || !called_before.contains(c.name.as_ref())
        });
        if comps.len() == before {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::inline_calls;
    use crate::parse::read::read;
    use crate::parse::text::ModuleText;

    /// Each computation as `name: inst(operand, ...) ...`, ROOT marked `!`.
    fn shown(m: &ModuleText) -> Vec<String> {
        m.comps
            .iter()
            .map(|c| {
                let insts: Vec<String> = c
                    .insts
                    .iter()
                    .map(|i| {
                        let ops: Vec<&str> = i
                            .operands
                            .iter()
                            .map(|&o| c.insts[o as usize].name.as_ref())
                            .collect();
                        let root = if i.is_root { "!" } else { "" };
                        format!("{root}{}={}({})", i.name, i.opcode, ops.join(","))
                    })
                    .collect();
                format!("{}: {}", c.name, insts.join(" "))
            })
            .collect()
    }

    const TWICE: &str = "HloModule m
f {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  s = f32[] subtract(a, b)
  ROOT n = f32[] negate(s)
}
g {
  x = f32[] parameter(0)
  ROOT c = f32[] call(x, x), to_apply=f
}
ENTRY e {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  s = f32[] call(p, q), to_apply=f
  t = f32[] call(q, p), to_apply=g
  ROOT r = f32[] add(s, t)
}
";

    #[test]
    fn each_call_gets_its_copy_nested_first_callees_dropped() {
        let m = read(TWICE).ok().expect("parses");
        let inlined = inline_calls(&m).expect("calls inlined");
        assert_eq!(
            shown(&inlined),
            vec![
                "e: p=parameter() q=parameter() s.1=subtract(p,q) n=negate(s.1) \
                 s.2=subtract(q,q) n.1=negate(s.2) !r=add(n,n.1)"
            ]
        );
        // The reader's own records are left as the text has them.
        assert_eq!(m.comps.len(), 3);
    }

    #[test]
    fn a_callee_returning_a_parameter_is_that_operand() {
        let text = "HloModule m
f {
  a = f32[] parameter(0)
  ROOT b = f32[] parameter(1)
}
ENTRY e {
  p = f32[] parameter(0)
  q = f32[] parameter(1)
  ROOT c = f32[] call(p, q), to_apply=f
}
";
        let m = read(text).ok().expect("parses");
        let inlined = inline_calls(&m).expect("calls inlined");
        assert_eq!(shown(&inlined), vec!["e: p=parameter() !q=parameter()"]);
    }

    #[test]
    fn calls_xla_keeps_stay() {
        for attribute in [
            "backend_config=\"x\"",
            "frontend_attributes={inlineable=\"false\"}",
            "frontend_attributes={_xla_compute_type=\"host\"}",
        ] {
            let text = TWICE.replace("to_apply=g", &format!("to_apply=g, {attribute}"));
            let m = read(&text).ok().expect("parses");
            let inlined = inline_calls(&m).expect("the other calls inlined");
            let entry = shown(&inlined).pop().expect("an entry");
            assert!(entry.contains("t=call(q,p)"), "{attribute}: {entry}");
        }
        let composite = TWICE.replace(
            "to_apply=g",
            "to_apply=g, frontend_attributes={composite.name=\"c\",composite.version=\"1\"}",
        );
        let m = read(&composite).ok().expect("parses");
        assert_eq!(shown(&inline_calls(&m).expect("inlined")).len(), 1);
    }
}
