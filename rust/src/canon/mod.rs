//! Canonicalization on the reader's own IR, with instruction indices instead of names: the one
//! engine of the rules (`xlagraph/canonical/__init__.py` says why each is what it is), which
//! `tests/canonical_reference.py` writes plainly as the tests' oracle, to the same numbers. Hashes
//! are CPython's (python_hash.rs), and content keys are BLAKE2b of the same key text
//! (content_key.rs, `hashes_reference.content_key`).
//!
//! Before any of them, Shardy's mesh and axis names are read as bound names and a one-device
//! module's shardings as none (shardy.rs), on the reader's records; then `call`s are inlined as
//! XLA inlines them (inline.rs) in a copy, the program, so the IR is built from it too.
//!
//! One file per rule, in the order `canon_computation` runs them: tuple forwarding
//! (forwarding.rs, tuple_params.rs), the live order (live.rs), content keys and the structural
//! hashes h0 / h1 (structural_hashes.rs), dead code and plumbing (dead_code.rs), and the
//! computation's own hash (computation_hash.rs, effects.rs). The canonical form and its handle
//! as Python reads them are handle.rs (handle_methods.rs what Python asks of it), handle_parts.rs
//! and mapping.rs.
//!
//! Where the rules lean on Python (ints of any size, `\w` and `isdigit` on non-ASCII text), the
//! port asks py_semantics.rs for Python's answer (py_text.rs reads numbers with it). What Python
//! could not take either (a get-tuple-element index `int()` refuses, a parameter number that is
//! not one, an empty computation) is `Failure::Bad` naming it; there is no second engine to fall
//! back on.

pub(crate) mod attributes;
pub(crate) mod backend_config;
pub(crate) mod blake2b;
pub(crate) mod computation_hash;
pub(crate) mod content_key;
pub(crate) mod dead_code;
pub(crate) mod effects;
pub(crate) mod forwarding;
pub(crate) mod handle;
pub(crate) mod handle_methods;
pub(crate) mod handle_parts;
pub(crate) mod indexed;
pub(crate) mod inline;
pub(crate) mod inline_kept;
pub(crate) mod iota;
pub(crate) mod live;
pub(crate) mod mapping;
pub(crate) mod model;
pub(crate) mod py_semantics;
pub(crate) mod py_text;
pub(crate) mod python_hash;
pub(crate) mod shape_text;
pub(crate) mod shardy;
pub(crate) mod shardy_results;
pub(crate) mod structural_hashes;
pub(crate) mod tuple_params;

use crate::canon::blake2b::hexdigest;
use crate::canon::computation_hash::{computation_hash, with_effects};
use crate::canon::content_key::KeyCache;
use crate::canon::dead_code::dead_and_plumbing;
use crate::canon::effects::effect_hashes;
use crate::canon::forwarding::{forward_tuples, forwarded_operands, output_names, Operands};
use crate::canon::live::live_order;
use crate::canon::model::{CompCanon, Failure, ModuleCanon, R};
use crate::canon::py_text::repr_tuple;
use crate::canon::structural_hashes::{keys_and_h0, walk_and_h1};
use crate::parse::text::{Comp, FxMap, ModuleText};

/// The program XLA compiles, where it is not the module as written: its calls inlined
/// (inline.rs), a one-device module's result shardings gone (shardy_results.rs); None where neither
/// applies.
pub(crate) fn program<'a>(module: &ModuleText<'a>) -> Option<ModuleText<'a>> {
    match inline::inline_calls(module) {
        Some(copy) => Some(shardy_results::one_device_results(&copy).unwrap_or(copy)),
        None => shardy_results::one_device_results(module),
    }
}

fn root_of(comp: &Comp) -> usize {
    comp.insts
        .iter()
        .rposition(|i| i.is_root)
        .unwrap_or(comp.insts.len() - 1)
}

/// One computation in canonical form (the oracle's `_canonicalize_computation`): the rules in order.
fn canon_computation<'b, 'a>(
    index: usize,
    comp: &'b Comp<'a>,
    is_entry: bool,
    callee_hash: &FxMap<&str, i64>,
    cache: &mut KeyCache<'b, 'a>,
) -> R<CompCanon> {
    let insts = &comp.insts;
    let root = root_of(comp) as u32;
    let forwarding = forward_tuples(insts, root, is_entry)?;
    let (fidx, fops) = forwarded_operands(insts, &forwarding);
    let operands = Operands::new(insts, &fidx, &fops);
    let outputs = output_names(insts, root, &forwarding.alias);
    let live = live_order(comp, &outputs, &forwarding.input, &operands)?;
    let keyed = keys_and_h0(
        insts,
        &live.order,
        &forwarding.input,
        &operands,
        callee_hash,
        cache,
    )?;
    let walked = walk_and_h1(is_entry, &outputs, &live.order, &operands, &keyed);
    let (dead, plumbing) = dead_and_plumbing(
        insts,
        root,
        &live.order,
        &live.state,
        &fidx,
        &forwarding.reads,
    );
    let hash = computation_hash(
        insts,
        root,
        live.state[root as usize] == 2,
        is_entry,
        &outputs,
        &keyed,
        &walked,
        &forwarding.unwrapped,
    );
    let effects = effect_hashes(
        insts,
        dead.iter().chain(&plumbing),
        &live.state,
        &walked.h1,
        callee_hash,
    )?;
    Ok(CompCanon {
        comp: index,
        order: live.order,
        entered: live.entered,
        fidx,
        fops,
        outputs,
        keys: keyed.keys,
        h0: keyed.h0,
        h1: walked.h1,
        params: keyed.params,
        ranks: walked.ranks,
        layouts: keyed.layouts,
        walk: walked.walk,
        dead,
        plumbing,
        hash: with_effects(hash, sorted_values(&effects)),
        effects,
    })
}

/// What the computation's side effects add to its hash: their hashes, sorted.
fn sorted_values(effects: &[(u32, i128)]) -> Vec<i128> {
    let mut values: Vec<i128> = effects.iter().map(|&(_, h)| h).collect();
    values.sort();
    values
}

/// `Module.by_name`: each name's computation, the last of that name (a dictionary by name).
fn comps_by_name<'m>(module: &'m ModuleText) -> FxMap<&'m str, usize> {
    module
        .comps
        .iter()
        .enumerate()
        .map(|(i, c)| (c.name.as_ref(), i))
        .collect()
}

/// `_callees_first` (the oracle's): by name, so a computation another of its name follows (both
/// written in place as `_`) is never canonicalized, as by a dictionary by name.
fn callees_first(module: &ModuleText, by_name: &FxMap<&str, usize>) -> Vec<usize> {
    let mut state = vec![0u8; module.comps.len()];
    let mut order = Vec::with_capacity(module.comps.len());
    for root in 0..module.comps.len() {
        let root = by_name[module.comps[root].name.as_ref()];
        let mut stack = vec![(root, false)];
        while let Some((c, expanded)) = stack.pop() {
            if expanded {
                state[c] = 2;
                order.push(c);
                continue;
            }
            if state[c] != 0 {
                continue;
            }
            state[c] = 1;
            stack.push((c, true));
            for ins in &module.comps[c].insts {
                for callee in &ins.called {
                    if let Some(&j) = by_name.get(callee.as_ref()) {
                        if state[j] == 0 {
                            stack.push((j, false));
                        }
                    }
                }
            }
        }
    }
    order
}

/// Every computation, callees first, and the module's fingerprint and order (the oracle's
/// `canonicalize`). Computations that share a name are canonicalized as dictionaries by name
/// (`Module.by_name`) have them: the last of each name, and `CompCanon`s only for those. A panic
/// (a bug of this port) is an error of its own.
pub fn canonicalize(module: &ModuleText) -> R<ModuleCanon> {
    std::panic::catch_unwind(|| canonicalize_module(module)).unwrap_or_else(|_| {
        Err(Failure::Bad(
            "internal error of canonicalization on this input (please report it)".into(),
            0,
        ))
    })
}

fn canonicalize_module(module: &ModuleText) -> R<ModuleCanon> {
    if module.comps.is_empty() {
        return Err(Failure::Bad("the module has no computations".into(), 0));
    }
    let by_name = comps_by_name(module);
    let entry = module
        .comps
        .iter()
        .position(|c| c.is_entry)
        .unwrap_or(module.comps.len() - 1);
    let mut callee_hash: FxMap<&str, i64> = FxMap::default();
    let mut cache: KeyCache = FxMap::default();
    let mut comps = Vec::with_capacity(module.comps.len());
    for c in callees_first(module, &by_name) {
        let comp = &module.comps[c];
        if comp.insts.is_empty() {
            return Err(Failure::Bad(
                format!("computation {} has no instructions", comp.name),
                comp.line,
            ));
        }
        let canon = canon_computation(c, comp, c == entry, &callee_hash, &mut cache)?;
        callee_hash.insert(comp.name.as_ref(), canon.hash);
        comps.push(canon);
    }
    // `result[module.entry.name]`: the entry's name's computation.
    let entry = by_name[module.comps[entry].name.as_ref()];
    let e = comps
        .iter()
        .find(|c| c.comp == entry)
        .expect("entry canonicalized");
    let fingerprint = hexdigest(&e.hash.to_string(), 8);
    let mut params = e.params.clone();
    params.sort_by_key(|&(_, number)| number);
    let rank: FxMap<u32, i64> = e.ranks.iter().copied().collect();
    let layout = format!(
        "({}, {})",
        repr_tuple(e.outputs.iter().map(|&o| e.h1[o as usize].to_string())),
        repr_tuple(params.iter().map(|(p, _)| rank[p].to_string()))
    );
    let order = hexdigest(&layout, 8);
    Ok(ModuleCanon {
        comps,
        fingerprint,
        order,
    })
}
