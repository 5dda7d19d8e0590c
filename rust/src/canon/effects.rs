//! The oracle's `effect_hashes`: what the instructions with side effects among the dead code and the
//! plumbing add to the computation's hash (removing one is a change, though nothing reads it).

use crate::canon::content_key::content_key;
use crate::canon::model::{Failure, R};
use crate::canon::py_text::parameter_number;
use crate::canon::python_hash::{int_hash, tuple_hash, TupleHash};
use crate::families;
use crate::parse::text::{FxMap, Inst};

/// `opcodes.SIDE_EFFECTS` / `has_side_effect` (families.rs).
fn has_side_effect(ins: &Inst) -> bool {
    if ins.opcode == "custom-call" {
        return ins
            .attrs
            .iter()
            .find(|(k, _)| *k == "custom_call_has_side_effect")
            .is_some_and(|(_, v)| v.as_ref() == "true");
    }
    families::SIDE_EFFECTS.contains(&ins.opcode.as_ref())
}

/// The oracle's `effect_hash_map`: each instruction with a side effect among `candidates`, in
/// their order, and its hash; an operand cycle counts as 0, and a key that fails is the error at
/// its instruction's line, as Python has them.
pub(crate) fn effect_hashes<'x>(
    insts: &[Inst],
    candidates: impl Iterator<Item = &'x u32>,
    state: &[u8],
    h1: &[i128],
    callee_hash: &FxMap<&str, i64>,
) -> R<Vec<(u32, i128)>> {
    let found: Vec<u32> = candidates
        .copied()
        .filter(|&i| has_side_effect(&insts[i as usize]))
        .collect();
    if found.is_empty() {
        return Ok(Vec::new());
    }
    let live = |i: u32| state[i as usize] == 2;
    let mut memo: Vec<Option<i128>> = vec![None; insts.len()];
    let mut entered = vec![false; insts.len()];
    for &start in &found {
        let mut stack = vec![(start, false)];
        while let Some((i, ready)) = stack.pop() {
            let ins = &insts[i as usize];
            if !ready {
                if live(i) || entered[i as usize] {
                    continue;
                }
                entered[i as usize] = true;
                stack.push((i, true));
                for &o in ins.operands.iter().rev() {
                    if !live(o) && !entered[o as usize] {
                        stack.push((o, false));
                    }
                }
                continue;
            }
            let parameter = ins.opcode == "parameter";
            // `EffectKeyError`: the message, at this instruction's line.
            let key = content_key(ins, parameter, callee_hash)
                .map_err(|Failure::Bad(m, _)| Failure::Bad(m, ins.line))?;
            let value = if parameter {
                let number = parameter_number(ins)?;
                tuple_hash(&[int_hash(key as i128), int_hash(number as i128)]) as i128
            } else if ins.operands.is_empty() {
                key as i128
            } else {
                let mut operand_hashes = Vec::with_capacity(ins.operands.len());
                for &o in &ins.operands {
                    // `memo.get(o, 0)`: an operand cycle counts as 0.
                    operand_hashes.push(if live(o) {
                        h1[o as usize]
                    } else {
                        memo[o as usize].unwrap_or(0)
                    });
                }
                let mut t = TupleHash::new();
                t.add(int_hash(key as i128));
                for h in operand_hashes {
                    t.add(int_hash(h));
                }
                t.finish() as i128
            };
            memo[i as usize] = Some(value);
        }
    }
    Ok(found
        .iter()
        .map(|&i| {
            let h = if live(i) {
                h1[i as usize]
            } else {
                memo[i as usize].unwrap_or(0)
            };
            (i, h)
        })
        .collect())
}
