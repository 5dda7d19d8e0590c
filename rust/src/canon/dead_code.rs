//! Dead code and plumbing (the oracle's `_canonicalize_computation`): of the instructions no
//! output depends on, the plumbing (what the root or a forwarded instruction reads on the way to
//! a live one: tuples, get-tuple-elements) and the dead code (the rest, but parameters and what
//! reads a tuple parameter's elements).

use crate::canon::model::NONE;
use crate::parse::text::Inst;

/// `(dead, plumbing)`, each in the order of the instructions; `state` is the live order's (2:
/// live), `fidx` the forwarded operands' (forwarding.rs), `reads` what reads a tuple
/// parameter's elements.
pub(crate) fn dead_and_plumbing(
    insts: &[Inst],
    root: u32,
    order: &[u32],
    state: &[u8],
    fidx: &[u32],
    reads: &[bool],
) -> (Vec<u32>, Vec<u32>) {
    let n = insts.len();
    let (mut dead, mut plumbing) = (Vec::new(), Vec::new());
    if order.len() != n {
        let mut reached = vec![false; n];
        let mut stack = vec![root];
        for &i in order {
            if fidx[i as usize] != NONE {
                stack.extend(insts[i as usize].operands.iter());
            }
        }
        while let Some(name) = stack.pop() {
            let u = name as usize;
            if state[u] == 2 || reached[u] {
                continue;
            }
            reached[u] = true;
            stack.extend(insts[u].operands.iter());
        }
        for (i, ins) in insts.iter().enumerate() {
            if state[i] == 2 {
                continue;
            }
            if reached[i] {
                plumbing.push(i as u32);
            } else if ins.opcode != "parameter" && !reads[i] {
                dead.push(i as u32);
            }
        }
    }
    (dead, plumbing)
}
