//! A handle's parts (`handle.rs`) made from the reader's records and the canonical form while
//! the reader runs without the GIL, and the handle made of them once the Python IR is built.

use std::sync::{Arc, OnceLock};

use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::PyString;

use crate::canon::handle::CanonHandle;
use crate::canon::indexed::Canon;
use crate::canon::model::{CompCanon, NONE};
use crate::parse::text::{Comp, FxMap};

/// Numbers each distinct value once, in order of first appearance.
struct Numbering<K> {
    ids: FxMap<K, u32>,
}

impl<K: std::hash::Hash + Eq> Numbering<K> {
    fn id(&mut self, key: K, mut first: impl FnMut()) -> u32 {
        let next = self.ids.len() as u32;
        *self.ids.entry(key).or_insert_with(|| {
            first();
            next
        })
    }
}

/// What a handle holds besides Python objects, made while the reader runs without the GIL
/// (names are unique in a computation: the readers refuse one defined twice).
pub(crate) struct Parts {
    canon: Canon0,
    opcode: Vec<u32>,
    shape: Vec<u32>,
    opcodes: Vec<String>,
    shapes: Vec<String>,
    kind: Vec<u32>,
    /// The first instruction of each kind.
    kind_first: Vec<u32>,
    keys: Vec<u64>,
    entered: Vec<u32>,
    forwarded: Vec<bool>,
    live: Vec<bool>,
    elided: Vec<u32>,
    source_files: Vec<String>,
    ones: Vec<u32>,
    effects: Vec<(u32, i128)>,
}

/// `Canon` but its names.
struct Canon0 {
    order: Vec<u32>,
    ops_start: Vec<u32>,
    ops: Vec<u32>,
    has_ops: Vec<bool>,
    outputs: Vec<u32>,
    h0: Vec<i128>,
    h1: Vec<i128>,
    params: Vec<(u32, i64)>,
}

pub(crate) fn parts(c: &CompCanon, comp: &Comp) -> Parts {
    let n = comp.insts.len();
    let (mut opcodes, mut shapes) = (Vec::new(), Vec::new());
    let mut opcode_ids = Numbering {
        ids: FxMap::default(),
    };
    let mut shape_ids = Numbering {
        ids: FxMap::default(),
    };
    let mut kind_ids = Numbering {
        ids: FxMap::default(),
    };
    let mut kind_first: Vec<u32> = Vec::new();
    let (mut opcode, mut shape, mut kind) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    let (mut elided, mut ones) = (Vec::new(), Vec::new());
    let mut files: FxMap<&str, ()> = FxMap::default();
    let mut source_files = Vec::new();
    let mut last_file = "";
    // One pass over the records (a 120K computation's do not fit in any cache).
    for (k, ins) in comp.insts.iter().enumerate() {
        let o = opcode_ids.id(ins.opcode.as_ref(), || opcodes.push(ins.opcode.to_string()));
        let s = shape_ids.id(ins.shape.as_ref(), || shapes.push(ins.shape.to_string()));
        let id = kind_ids.id((o, s, ins.attrs.as_slice(), ins.called.len()), || {
            kind_first.push(k as u32)
        });
        opcode.push(o);
        shape.push(s);
        kind.push(id);
        if ins.opcode == "constant" {
            let payload = ins.payload.chars().filter(|&c| c != ' ');
            if payload.eq("{...}".chars()) {
                elided.push(k as u32);
            }
            if scalar(&ins.shape) && is_one(&ins.payload) {
                ones.push(k as u32);
            }
        }
        if let Some(m) = &ins.metadata {
            let f = m.source_file.as_ref();
            // Neighbours mostly cite one file: only a change of file is looked up.
            if f != last_file && !f.is_empty() && files.insert(f, ()).is_none() {
                source_files.push(f.to_string());
            }
            last_file = f;
        }
    }
    let mut has_ops = vec![false; n];
    let mut per: Vec<&[u32]> = vec![&[]; n];
    for &i in &c.entered {
        has_ops[i as usize] = true;
        per[i as usize] = c.ops(comp, i);
    }
    let forwarded = c.fidx.iter().map(|&f| f != NONE).collect();
    let mut live = vec![false; n];
    for &i in &c.order {
        live[i as usize] = true;
    }
    let mut ops_start = Vec::with_capacity(n + 1);
    let mut ops = Vec::new();
    for row in &per {
        ops_start.push(ops.len() as u32);
        ops.extend_from_slice(row);
    }
    ops_start.push(ops.len() as u32);
    Parts {
        canon: Canon0 {
            order: c.order.clone(),
            ops_start,
            ops,
            has_ops,
            outputs: c.outputs.clone(),
            h0: c.h0.clone(),
            h1: c.h1.clone(),
            params: c.params.clone(),
        },
        opcode,
        shape,
        opcodes,
        shapes,
        kind,
        kind_first,
        keys: c.keys.clone(),
        entered: c.entered.clone(),
        forwarded,
        live,
        elided,
        source_files,
        ones,
        effects: c.effects.clone(),
    }
}

/// `multiply_by_one_reference._scalar`: the shape before any `{`, spaces aside, ends in `[]`.
fn scalar(shape: &str) -> bool {
    let head = shape.split('{').next().unwrap_or("");
    head.chars()
        .filter(|&c| c != ' ')
        .collect::<String>()
        .ends_with("[]")
}

/// `multiply_by_one_reference.ONE` (tests/oracles/): the printed values of a one.
const ONE: [&str; 8] = ["1", "1.", "1.0", "1e0", "1e+0", "1e+00", "1.0e+00", "true"];

/// `payload.strip().lower() in ONE` (Python's whitespace: Rust's and \x1c-\x1f).
fn is_one(payload: &str) -> bool {
    let space = |c: char| c.is_whitespace() || ('\x1c'..='\x1f').contains(&c);
    ONE.contains(&payload.trim_matches(space).to_lowercase().as_str())
}

/// The handle of one computation from its parts, `names` and `instructions` being what the
/// Python IR was built with.
pub(crate) fn handle<'py>(
    p: Parts,
    names: &[Bound<'py, PyString>],
    instructions: &Bound<'py, PyAny>,
) -> PyResult<CanonHandle> {
    let c = p.canon;
    Ok(CanonHandle {
        canon: Arc::new(Canon {
            names: names.iter().map(|s| s.clone().unbind()).collect(),
            order: c.order,
            ops_start: c.ops_start,
            ops: c.ops,
            has_ops: c.has_ops,
            outputs: c.outputs,
            h0: c.h0,
            h1: c.h1,
            params: c.params,
            index: GILOnceCell::new(),
            unique: true,
        }),
        opcode: p.opcode,
        shape: p.shape,
        opcodes: p.opcodes,
        shapes: p.shapes,
        kind: p.kind,
        kind_first: p.kind_first,
        keys: p.keys,
        h0_sorted: OnceLock::new(),
        h0_lone: OnceLock::new(),
        h1_classes: OnceLock::new(),
        instructions: instructions.clone().unbind(),
        entered: p.entered,
        forwarded: p.forwarded,
        live: p.live,
        elided: p.elided,
        source_files: p.source_files,
        ones: p.ones,
        effects: p.effects,
    })
}
