//! Rule 1 of the oracle (`forward_tuples`, `output_names`): a get-tuple-element of a tuple reads
//! the tuple's element directly; the entry's tuple parameters are unwrapped into their elements
//! (tuple_params.rs); a tuple root is flattened into its outputs. And the operands every later
//! rule reads, with forwarding applied, in one array.

use crate::canon::model::{NONE, R};
use crate::canon::py_text::{gte_index, parameter_number};
use crate::canon::tuple_params;
use crate::parse::text::Inst;

/// What forwarding gives, per instruction: the instruction it stands for (`alias`, NONE: itself)
/// and its input number (`input`, -1: not an input); the entry's tuple parameters whose elements
/// became the inputs (`unwrapped`), and what reads such elements (`reads`).
pub(crate) struct Forwarding {
    pub(crate) alias: Vec<u32>,
    pub(crate) input: Vec<i64>,
    pub(crate) unwrapped: Vec<u32>,
    pub(crate) reads: Vec<bool>,
}

/// `forward_tuples`: each get-tuple-element of a tuple (through other forwarded ones) stands for
/// the tuple's element; the inputs are the parameters, or in the entry (`is_entry`) the elements
/// of tuple parameters.
pub(crate) fn forward_tuples(insts: &[Inst], root: u32, is_entry: bool) -> R<Forwarding> {
    let n = insts.len();
    let mut alias = vec![NONE; n];
    let mut index_of: Vec<Option<i64>> = vec![None; n];
    for (i, ins) in insts.iter().enumerate() {
        if ins.opcode != "get-tuple-element" || ins.operands.len() != 1 {
            continue;
        }
        let Some((_, index)) = ins.attrs.iter().find(|(k, _)| *k == "index") else {
            continue;
        };
        let Some(k) = gte_index(ins, index)? else {
            continue;
        };
        index_of[i] = Some(k);
        let op = ins.operands[0];
        let source = if alias[op as usize] != NONE {
            alias[op as usize]
        } else {
            op
        };
        let target = &insts[source as usize];
        if target.opcode == "tuple" && (k as u64) < target.operands.len() as u64 {
            let element = target.operands[k as usize];
            let a = alias[element as usize];
            alias[i] = if a != NONE { a } else { element };
        }
    }
    // Inputs: the parameters, or in the entry the elements of tuple parameters (tuple_params.rs).
    let mut numbered: Vec<(i64, u32)> = Vec::new();
    for (i, ins) in insts.iter().enumerate() {
        if ins.opcode == "parameter" {
            numbered.push((parameter_number(ins)?, i as u32));
        }
    }
    let (input, unwrapped, reads) = if is_entry {
        tuple_params::unwrap(insts, root, &numbered, &index_of, &mut alias)
    } else {
        let mut input = vec![-1i64; n];
        for &(num, i) in &numbered {
            input[i as usize] = num;
        }
        (input, Vec::new(), vec![false; n])
    };
    Ok(Forwarding {
        alias,
        input,
        unwrapped,
        reads,
    })
}

/// The operands of each instruction that forwarding changes (`fidx`: an index into `fops`, NONE
/// where its own operands stand): an operand forwarded is replaced by what it stands for, and an
/// input read from a tuple parameter has none.
pub(crate) fn forwarded_operands(insts: &[Inst], f: &Forwarding) -> (Vec<u32>, Vec<Vec<u32>>) {
    let (alias, input) = (&f.alias, &f.input);
    let mut fidx = vec![NONE; insts.len()];
    let mut fops: Vec<Vec<u32>> = Vec::new();
    for (i, ins) in insts.iter().enumerate() {
        if input[i] >= 0 && !ins.operands.is_empty() {
            fidx[i] = fops.len() as u32;
            fops.push(Vec::new());
        } else if ins.operands.iter().any(|&o| alias[o as usize] != NONE) {
            fidx[i] = fops.len() as u32;
            let a = |o: u32| {
                if alias[o as usize] != NONE {
                    alias[o as usize]
                } else {
                    o
                }
            };
            fops.push(ins.operands.iter().map(|&o| a(o)).collect());
        }
    }
    (fidx, fops)
}

/// Every instruction's operands as the rules read them (forwarded where forwarding changed them),
/// in one array (CSR). The walks jump around the computation, and `Inst` records are large (a
/// 600K module's do not fit in any cache): one array for all of them, filled in the records'
/// order, keeps the walks' random jumps within a megabyte, not strewn over the reader's whole heap.
pub(crate) struct Operands {
    start: Vec<u32>,
    all: Vec<u32>,
}

impl Operands {
    pub(crate) fn new(insts: &[Inst], fidx: &[u32], fops: &[Vec<u32>]) -> Self {
        let n = insts.len();
        let mut start: Vec<u32> = Vec::with_capacity(n + 1);
        let mut all: Vec<u32> = Vec::with_capacity(2 * n);
        for (ins, &f) in insts.iter().zip(fidx) {
            start.push(all.len() as u32);
            all.extend_from_slice(if f == NONE {
                &ins.operands
            } else {
                &fops[f as usize]
            });
        }
        start.push(all.len() as u32);
        Operands { start, all }
    }

    #[inline]
    pub(crate) fn of(&self, i: u32) -> &[u32] {
        &self.all[self.start[i as usize] as usize..self.start[i as usize + 1] as usize]
    }
}

/// `output_names`: the root, or the elements of a tuple root (flattened, through forwarding).
pub(crate) fn output_names(insts: &[Inst], root: u32, alias: &[u32]) -> Vec<u32> {
    let mut outputs = Vec::new();
    let mut stack = vec![root];
    while let Some(mut name) = stack.pop() {
        if alias[name as usize] != NONE {
            name = alias[name as usize];
        }
        let ins = &insts[name as usize];
        if ins.opcode == "tuple" && !ins.operands.is_empty() {
            stack.extend(ins.operands.iter().rev());
        } else {
            outputs.push(name);
        }
    }
    outputs
}
