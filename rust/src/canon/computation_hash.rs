//! A computation's own hash (the oracle's `_canonicalize_computation`): its root's tuple skeleton
//! (and what a forwarded root declares), its outputs' `h1`, its interface (the entry's unread and
//! unwrapped inputs; a called computation's parameter numbers and keys), its non-default layouts,
//! and the side effects among its dead code and plumbing (effects.rs).

use crate::canon::attributes::plumbing_attributes;
use crate::canon::blake2b::stable_hash;
use crate::canon::python_hash::{int_hash, tuple_hash};
use crate::canon::shape_text::{declared_shapes, tuple_skeleton};
use crate::canon::structural_hashes::{Keyed, Walked};
use crate::parse::text::Inst;

/// The hash before side effects are added (`with_effects`); `live_root`: the root is an
/// instruction of its own (a root forwarding removed adds what it declares).
#[allow(clippy::too_many_arguments)]
pub(crate) fn computation_hash(
    insts: &[Inst],
    root: u32,
    live_root: bool,
    is_entry: bool,
    outputs: &[u32],
    keyed: &Keyed,
    walked: &Walked,
    unwrapped: &[u32],
) -> i64 {
    let (keys, params, layouts) = (&keyed.keys, &keyed.params, &keyed.layouts);
    let (h1, unread) = (&walked.h1, &walked.unread);
    let mut skeleton_text = tuple_skeleton(&insts[root as usize].shape);
    if !live_root {
        let text = plumbing_attributes(&insts[root as usize]);
        skeleton_text.push('|');
        skeleton_text.push_str(&declared_shapes(&insts[root as usize].shape));
        if !text.is_empty() {
            skeleton_text.push('|');
            skeleton_text.push_str(&text);
        }
    }
    let skeleton = int_hash(stable_hash(&skeleton_text) as i128);
    let mut layout_key: Vec<(i128, u64)> = layouts
        .iter()
        .map(|(i, lay)| (h1[*i as usize], stable_hash(lay)))
        .collect();
    layout_key.sort();
    layout_key.dedup();
    let layout_lanes: Vec<i64> = layout_key
        .iter()
        .map(|&(h, l)| tuple_hash(&[int_hash(h), int_hash(l as i128)]))
        .collect();
    if is_entry {
        let mut outs: Vec<i128> = outputs.iter().map(|&o| h1[o as usize]).collect();
        outs.sort();
        let mut unused: Vec<u64> = unread.iter().map(|&(p, _)| keys[p as usize]).collect();
        unused.sort();
        // The unwrapped shape (the oracle's `_canonicalize_computation`): how a tuple whose
        // elements are the inputs nests, and its shapes.
        let mut wrapped: Vec<u64> = unwrapped
            .iter()
            .map(|&p| {
                let shape = &insts[p as usize].shape;
                stable_hash(&format!(
                    "{}|{}",
                    tuple_skeleton(shape),
                    declared_shapes(shape)
                ))
            })
            .collect();
        wrapped.sort();
        unused.extend(wrapped);
        let outs: Vec<i64> = outs.into_iter().map(int_hash).collect();
        let unused: Vec<i64> = unused.into_iter().map(|k| int_hash(k as i128)).collect();
        tuple_hash(&[
            skeleton,
            tuple_hash(&outs),
            tuple_hash(&unused),
            tuple_hash(&layout_lanes),
        ])
    } else {
        let mut signature: Vec<(i64, u64)> = params
            .iter()
            .map(|&(p, num)| (num, keys[p as usize]))
            .collect();
        signature.sort();
        let signature: Vec<i64> = signature
            .iter()
            .map(|&(num, k)| tuple_hash(&[int_hash(num as i128), int_hash(k as i128)]))
            .collect();
        let outs: Vec<i64> = outputs.iter().map(|&o| int_hash(h1[o as usize])).collect();
        tuple_hash(&[
            skeleton,
            tuple_hash(&outs),
            tuple_hash(&signature),
            tuple_hash(&layout_lanes),
        ])
    }
}

/// `hash((comp_hash, effects))` where there are side effects (`effects`, sorted), else the hash.
pub(crate) fn with_effects(hash: i64, effects: Vec<i128>) -> i64 {
    if effects.is_empty() {
        hash
    } else {
        let lanes: Vec<i64> = effects.into_iter().map(int_hash).collect();
        tuple_hash(&[int_hash(hash as i128), tuple_hash(&lanes)])
    }
}
