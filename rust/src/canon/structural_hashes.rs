//! Rule 3 of the oracle (tests/canonical_reference.py): each live instruction's content key
//! (content_key.rs) and the bottom-up hashes over the live order: `h0` (`_keys_and_h0`), and `h1`,
//! where the entry's parameters are ranked by where the walk from its outputs, in canonical order,
//! first reaches them (`_walk_and_h1`; a called computation keeps its own numbering).

use crate::canon::content_key::{content_key, CacheKey, KeyCache};
use crate::canon::forwarding::Operands;
use crate::canon::model::{Failure, R};
use crate::canon::python_hash::{int_hash, tuple_hash, TupleHash};
use crate::canon::shape_text::layout_of;
use crate::parse::text::{FxMap, Inst, COMPUTATION_ATTRIBUTES};

/// Per instruction its content key and `h0`, and the inputs (`is_param`; `params` in the live
/// order, with their numbers), and the non-default layouts, defined on the live order.
pub(crate) struct Keyed {
    pub(crate) keys: Vec<u64>,
    pub(crate) h0: Vec<i128>,
    pub(crate) is_param: Vec<bool>,
    pub(crate) params: Vec<(u32, i64)>,
    pub(crate) layouts: Vec<(u32, String)>,
}

/// `hash((key, *operand_hashes))`, or `key` itself for a leaf (the Merkle step of the rules).
fn merkle(key: u64, ops: &[u32], h: &[i128]) -> i128 {
    if ops.is_empty() {
        return key as i128;
    }
    let mut t = TupleHash::new();
    t.add(int_hash(key as i128));
    for &o in ops {
        t.add(int_hash(h[o as usize]));
    }
    t.finish() as i128
}

/// `_keys_and_h0`: content keys, parameter numbers, layouts and h0, over the live order. Keys of
/// instructions that call nothing are looked up in `cache` first.
pub(crate) fn keys_and_h0<'b, 'a>(
    insts: &'b [Inst<'a>],
    order: &[u32],
    input: &[i64],
    operands: &Operands,
    callee_hash: &FxMap<&str, i64>,
    cache: &mut KeyCache<'b, 'a>,
) -> R<Keyed> {
    let n = insts.len();
    let mut keys = vec![0u64; n];
    let mut h0 = vec![0i128; n];
    let mut is_param = vec![false; n];
    let mut params: Vec<(u32, i64)> = Vec::new();
    let mut layouts: Vec<(u32, String)> = Vec::new();
    for &i in order {
        let ins = &insts[i as usize];
        let param = input[i as usize] >= 0;
        if param {
            let number = input[i as usize];
            is_param[i as usize] = true;
            params.push((i, number));
        }
        let cacheable = ins.called.is_empty()
            && !ins
                .attrs
                .iter()
                .any(|(k, _)| COMPUTATION_ATTRIBUTES.contains(k));
        let cache_key: CacheKey = (&ins.opcode, &ins.shape, &ins.attrs, &ins.payload, param);
        let hit = if cacheable {
            cache.get(&cache_key).cloned()
        } else {
            None
        };
        let (key, layout) = match hit {
            Some(v) => v,
            None => {
                let key = content_key(ins, param, callee_hash)
                    .map_err(|Failure::Bad(m, _)| Failure::Bad(m, ins.line))?;
                let v = (key, layout_of(&ins.shape));
                if cacheable {
                    cache.insert(cache_key, v.clone());
                }
                v
            }
        };
        keys[i as usize] = key;
        if !layout.is_empty() {
            layouts.push((i, layout));
        }
        h0[i as usize] = merkle(key, operands.of(i), &h0);
    }
    Ok(Keyed {
        keys,
        h0,
        is_param,
        params,
        layouts,
    })
}

/// Per instruction its `h1`, the parameters' ranks (`param_rank` in its key order), the walk
/// from the outputs (the oracle's `_walk`), and the entry's parameters the walk never reached.
pub(crate) struct Walked {
    pub(crate) h1: Vec<i128>,
    pub(crate) ranks: Vec<(u32, i64)>,
    pub(crate) walk: Vec<u32>,
    pub(crate) unread: Vec<(u32, i64)>,
}

/// `_walk_and_h1` for the entry (outputs in canonical order, parameters ranked as the walk
/// reaches them, then the unread ones by key and number); a called computation's `h1` is
/// `_merkle` with its own parameter numbers.
pub(crate) fn walk_and_h1(
    is_entry: bool,
    outputs: &[u32],
    order: &[u32],
    operands: &Operands,
    keyed: &Keyed,
) -> Walked {
    let (keys, h0, is_param, params) = (&keyed.keys, &keyed.h0, &keyed.is_param, &keyed.params);
    let n = keys.len();
    let ops_of = move |i: u32| operands.of(i);
    let mut h1 = vec![0i128; n];
    let mut rank = vec![-1i64; n];
    let mut ranks: Vec<(u32, i64)> = Vec::new();
    let walk;
    let mut unread: Vec<(u32, i64)> = Vec::new();
    if is_entry {
        let mut ranked: Vec<usize> = (0..outputs.len()).collect();
        ranked.sort_by_key(|&k| h0[outputs[k] as usize]);
        let canonical: Vec<u32> = ranked.iter().map(|&k| outputs[k]).collect();
        walk = walk_from(&canonical, n, ops_of, |name, ops| {
            let u = name as usize;
            if is_param[u] {
                rank[u] = ranks.len() as i64;
                ranks.push((name, rank[u]));
            }
            h1[u] = if !ops.is_empty() {
                merkle(keys[u], ops, &h1)
            } else if rank[u] >= 0 {
                tuple_hash(&[int_hash(keys[u] as i128), int_hash(rank[u] as i128)]) as i128
            } else {
                keys[u] as i128
            };
        });
        unread = params
            .iter()
            .copied()
            .filter(|&(p, _)| rank[p as usize] < 0)
            .collect();
        unread.sort_by_key(|&(p, number)| (keys[p as usize], number));
        for &(p, _) in &unread {
            let u = p as usize;
            rank[u] = ranks.len() as i64;
            ranks.push((p, rank[u]));
            h1[u] = tuple_hash(&[int_hash(keys[u] as i128), int_hash(rank[u] as i128)]) as i128;
        }
    } else {
        walk = walk_from(outputs, n, ops_of, |_, _| {});
        for &(p, number) in params {
            rank[p as usize] = number;
        }
        ranks = params.clone();
        for &i in order {
            let u = i as usize;
            let ops = ops_of(i);
            h1[u] = if !ops.is_empty() {
                merkle(keys[u], ops, &h1)
            } else if is_param[u] {
                tuple_hash(&[int_hash(keys[u] as i128), int_hash(rank[u] as i128)]) as i128
            } else {
                keys[u] as i128
            };
        }
    }
    Walked {
        h1,
        ranks,
        walk,
        unread,
    }
}

/// Depth-first post-order from `outputs` (the oracle's `_walk`), with `visit` called at each post-visit.
fn walk_from<'x>(
    outputs: &[u32],
    n: usize,
    ops: impl Fn(u32) -> &'x [u32],
    mut visit: impl FnMut(u32, &[u32]),
) -> Vec<u32> {
    let mut seen = vec![false; n];
    let mut walk = Vec::new();
    let mut stack: Vec<(u32, &'x [u32], usize)> = Vec::new();
    for &out in outputs {
        if seen[out as usize] {
            continue;
        }
        seen[out as usize] = true;
        stack.push((out, ops(out), 0));
        while let Some(frame) = stack.last_mut() {
            let mut i = frame.2;
            while i < frame.1.len() && seen[frame.1[i] as usize] {
                i += 1;
            }
            if i < frame.1.len() {
                frame.2 = i + 1;
                let o = frame.1[i];
                seen[o as usize] = true;
                stack.push((o, ops(o), 0));
                continue;
            }
            let (name, node_ops, _) = stack.pop().unwrap();
            walk.push(name);
            visit(name, node_ops);
        }
    }
    walk
}
