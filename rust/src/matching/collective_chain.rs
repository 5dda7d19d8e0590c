//! torch_xla's chain of all-reduces, left out of the correspondence's graph.
//!
//! torch_xla orders its collectives by a pseudo-token (`BuildAllReduce`): each all-reduce reduces
//! the gradients of its bucket and a scalar token as its last operand, and hands the next token
//! over as its last tuple element, which only the next all-reduce reads. The token edges say in
//! which order the buckets were issued, not what they reduce: two graphs that issue the same
//! buckets in another order differ there alone, and a colour that reads them pairs the users of
//! "the first all-reduce" across the graphs (another layer's update) instead of the users of the
//! same bucket. The correspondence reads each all-reduce by what it reduces. The hashes and the
//! matcher keep the edges: the order is still a difference, `collective`'s own.
//! tests/oracles/collective_chain_reference.py is the rule in Python.

use pyo3::prelude::*;

use crate::canon::handle::CanonHandle;
use crate::canon::indexed::users_of;
use crate::canon::shape_text::strip_layout;

/// The operand edges of the chain, as (reader, operand position), sorted: an all-reduce's token
/// operand, and the `get-tuple-element` that takes its next token.
pub(crate) fn chain_edges(h: &CanonHandle) -> Vec<(u32, u32)> {
    let id = |opcode: &str| h.opcodes.iter().position(|o| o == opcode).map(|p| p as u32);
    let (Some(all_reduce), gte, convert) =
        (id("all-reduce"), id("get-tuple-element"), id("convert"))
    else {
        return Vec::new();
    };
    let n = h.names.len();
    let Ok((users_start, users)) = users_of(n, &h.order, &h.ops_start, &h.ops, &h.has_ops) else {
        return Vec::new();
    };
    let users =
        |i: u32| &users[users_start[i as usize] as usize..users_start[i as usize + 1] as usize];
    let shape = |i: u32| strip_layout(&h.shapes[h.shape[i as usize] as usize]).replace(' ', "");
    let scalar = |i: u32| {
        let s = shape(i);
        !s.starts_with('(') && s.ends_with("[]")
    };
    let is = |i: u32, op: Option<u32>| Some(h.opcode[i as usize]) == op;
    // A value the chain passes on, converts seen through (a bucket of another element type
    // reduces the token converted to its type).
    let through = |mut i: u32| {
        while is(i, convert) {
            match h.operands(i) {
                Some(&[o]) => i = o,
                _ => break,
            }
        }
        i
    };
    let is_chain = |x: u32| {
        is(x, Some(all_reduce))
            && shape(x).starts_with('(')
            && h.operands(x)
                .is_some_and(|ops| ops.len() >= 2 && scalar(ops[ops.len() - 1]))
    };
    // Read only as the token of chained all-reduces (directly or converted).
    let token_of_next = |v: u32| {
        users(v).iter().all(|&u| {
            let last = h.operands(u).and_then(|ops| ops.last().copied());
            (is_chain(u) && last == Some(v))
                || (is(u, convert)
                    && users(u).iter().all(|&w| {
                        is_chain(w) && h.operands(w).and_then(|o| o.last().copied()) == Some(u)
                    }))
        })
    };
    let mut cut = Vec::new();
    for &x in &h.order {
        if !is_chain(x) {
            continue;
        }
        let ops = h.operands(x).unwrap_or(&[]);
        let token = through(ops[ops.len() - 1]);
        let passed = is(token, gte)
            && scalar(token)
            && h.operands(token)
                .is_some_and(|o| o.len() == 1 && is_chain(o[0]));
        let first = h.operands(token).is_some_and(<[u32]>::is_empty) || !h.has_ops[token as usize];
        if passed || (first && token_of_next(token)) {
            cut.push((x, ops.len() as u32 - 1));
        }
        for &g in users(x) {
            if is(g, gte) && scalar(g) && token_of_next(g) {
                cut.push((g, 0));
            }
        }
    }
    cut.sort_unstable();
    cut.dedup();
    cut
}

/// `chain_edges` of the computation `handle` holds (the tests' `refinement_reference.Graph`
/// leaves out the same edges).
#[pyfunction]
pub fn collective_chain_of(py: Python<'_>, handle: &CanonHandle) -> Vec<(u32, u32)> {
    py.allow_threads(|| chain_edges(handle))
}
