//! The program copy's part of shardy.rs's one-device rule: on a module whose Shardy meshes are
//! all one device, `xla.sdy.FuncResultSharding` custom-calls only carry a result's sharding,
//! which one device does not have, so they stand for their operand, as does the one-element
//! root tuple that carried the result's `sharding=`. The reader's own IR keeps them (the
//! text's counts); a diff counts the program's.

use crate::canon::shardy::{header_meshes, one_device};
use crate::parse::text::{Comp, Inst, ModuleText};

const RESULT_SHARDING: &str = "\"xla.sdy.FuncResultSharding\"";

/// The program copy's rule on one device: each `xla.sdy.FuncResultSharding` custom-call stands
/// for its operand, and so does the one-element tuple and its root get-tuple-element that JAX
/// wraps a result with to give it a sharding (None where the module has none of them, or is
/// not one device).
pub(crate) fn one_device_results<'a>(module: &ModuleText<'a>) -> Option<ModuleText<'a>> {
    let meshes = header_meshes(module);
    if meshes.is_empty() || !one_device(module, &meshes) {
        return None;
    }
    let stand_ins: Vec<Vec<Option<u32>>> = module.comps.iter().map(stand_ins).collect();
    if stand_ins.iter().flatten().all(Option::is_none) {
        return None;
    }
    let comps = module
        .comps
        .iter()
        .zip(&stand_ins)
        .map(|(c, s)| without(c, s))
        .collect();
    Some(module.with_comps(comps))
}

/// Per instruction, the operand it stands for where it goes (see `one_device_results`).
fn stand_ins(comp: &Comp) -> Vec<Option<u32>> {
    let insts = &comp.insts;
    let mut out: Vec<Option<u32>> = insts
        .iter()
        .map(|ins| {
            let target = ins
                .attrs
                .iter()
                .any(|(k, v)| *k == "custom_call_target" && v.as_ref() == RESULT_SHARDING);
            (ins.opcode == "custom-call" && target && ins.operands.len() == 1)
                .then(|| ins.operands[0])
        })
        .collect();
    // The entry's root `get-tuple-element(tuple(x)), index=0` of a tuple nothing else reads.
    let Some(root) = insts
        .iter()
        .rposition(|i| i.is_root)
        .filter(|_| comp.is_entry)
    else {
        return out;
    };
    let gte = &insts[root];
    let index = gte
        .attrs
        .iter()
        .find(|(k, _)| *k == "index")
        .map(|(_, v)| v.trim());
    if gte.opcode != "get-tuple-element" || index != Some("0") || gte.operands.len() != 1 {
        return out;
    }
    let t = gte.operands[0];
    let tuple = &insts[t as usize];
    let readers = insts.iter().filter(|i| i.operands.contains(&t)).count();
    let attributes = |i: &Inst| {
        i.attrs
            .iter()
            .all(|(k, _)| matches!(*k, "index" | "metadata"))
    };
    if tuple.opcode == "tuple"
        && tuple.operands.len() == 1
        && readers == 1
        && attributes(tuple)
        && attributes(gte)
    {
        out[t as usize] = Some(tuple.operands[0]);
        out[root] = Some(t);
    }
    out
}

/// A computation's instructions without those that stand for an operand (`stand_in`): their
/// users read the operand, which is the root where one of them was.
fn without<'a>(comp: &Comp<'a>, stand_in: &[Option<u32>]) -> Comp<'a> {
    let mut place = vec![0u32; comp.insts.len()];
    let mut n = 0;
    for (i, s) in stand_in.iter().enumerate() {
        if s.is_none() {
            place[i] = n;
            n += 1;
        }
    }
    // Through chains of them (an operand cycle, which canonicalization refuses, stops there).
    let resolve = |mut i: usize| -> u32 {
        for _ in 0..stand_in.len() {
            match stand_in[i] {
                Some(o) => i = o as usize,
                None => break,
            }
        }
        place[i]
    };
    let mut insts: Vec<Inst<'a>> = Vec::with_capacity(n as usize);
    let mut root = None;
    for (i, ins) in comp.insts.iter().enumerate() {
        if stand_in[i].is_some() {
            if ins.is_root {
                root = Some(resolve(i));
            }
            continue;
        }
        insts.push(Inst {
            name: ins.name.clone(),
            opcode: ins.opcode.clone(),
            shape: ins.shape.clone(),
            operands: ins.operands.iter().map(|&o| resolve(o as usize)).collect(),
            attrs: ins.attrs.clone(),
            called: ins.called.clone(),
            payload: ins.payload.clone(),
            metadata: ins.metadata.clone(),
            is_root: ins.is_root,
            line: ins.line,
        });
    }
    if let Some(r) = root {
        insts[r as usize].is_root = true;
    }
    Comp {
        name: comp.name.clone(),
        insts,
        is_entry: comp.is_entry,
        line: comp.line,
    }
}
