//! Rule 2 of the oracle (`live_order`): the instructions the outputs depend on, operands first, and
//! the inputs (a parameter nothing reads is still one); an operand cycle is refused.

use crate::canon::forwarding::Operands;
use crate::canon::model::{Failure, R};
use crate::parse::text::Comp;

/// The live instructions: `state` per instruction (0 unseen, 1 entered, 2 done: live), `order`
/// operands first, and `entered` in the order they were first entered (`operands`' key order).
pub(crate) struct Live {
    pub(crate) state: Vec<u8>,
    pub(crate) order: Vec<u32>,
    pub(crate) entered: Vec<u32>,
}

/// `_live` from `outputs` over `operands`; `input` numbers the inputs (-1: not an input).
pub(crate) fn live_order(
    comp: &Comp,
    outputs: &[u32],
    input: &[i64],
    operands: &Operands,
) -> R<Live> {
    let insts = &comp.insts;
    let n = insts.len();
    let mut state = vec![0u8; n];
    let mut order = Vec::new();
    let mut entered = Vec::new();
    let mut frames: Vec<(u32, usize)> = Vec::new();
    for &out in outputs {
        if state[out as usize] == 2 {
            continue;
        }
        state[out as usize] = 1;
        entered.push(out);
        frames.push((out, 0));
        while let Some(frame) = frames.last_mut() {
            let ops = operands.of(frame.0);
            let mut i = frame.1;
            while i < ops.len() && state[ops[i] as usize] == 2 {
                i += 1;
            }
            if i < ops.len() {
                frame.1 = i + 1;
                let o = ops[i];
                if state[o as usize] == 1 {
                    let ins = &insts[o as usize];
                    return Err(Failure::Bad(
                        format!(
                            "instruction {} in computation {} is its own operand (operand cycle)",
                            ins.name, comp.name
                        ),
                        ins.line,
                    ));
                }
                state[o as usize] = 1;
                entered.push(o);
                frames.push((o, 0));
            } else {
                let (name, _) = frames.pop().unwrap();
                state[name as usize] = 2;
                order.push(name);
            }
        }
    }
    for i in 0..n {
        if input[i] >= 0 && state[i] != 2 {
            state[i] = 2;
            order.push(i as u32);
            entered.push(i as u32);
        }
    }
    Ok(Live {
        state,
        order,
        entered,
    })
}
