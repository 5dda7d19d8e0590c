//! The structural matcher of `xlagraph.match`, compiled: the same phases, in the same order, with
//! the same tie-breaks, so that it pairs exactly what the Python reference pairs (and in the same
//! order: the `Matching` dictionaries' order is what later stages iterate).
//!
//! A computation is read once into a `MatchSide` (indices instead of names, interned opcodes and
//! shapes); `match_sides` runs the phases on two of them without the GIL and builds the three
//! dictionaries of `Matching`. Every rule cites the Python function it mirrors; the docstrings
//! there say why each rule is what it is.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};

use crate::canon::handle::Canon;
use crate::parse::text::FxMap;

const NONE: u32 = u32::MAX;

/// One id per distinct string, shared by every computation of the process, so that opcodes and
/// shapes of two computations compare as integers.
pub(crate) fn intern(s: &str) -> u32 {
    static TABLE: OnceLock<Mutex<FxMap<String, u32>>> = OnceLock::new();
    let mut t = TABLE
        .get_or_init(|| Mutex::new(FxMap::default()))
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(&id) = t.get(s) {
        return id;
    }
    let id = t.len() as u32;
    t.insert(s.to_owned(), id);
    id
}

/// A Python int hash as an i128 (CPython hashes are signed 64-bit, content keys unsigned).
/// Read without raising on the way: half the content keys overflow an i64, and an exception
/// per key would cost more than the rest of the conversion.
fn hash_of(v: &Bound<'_, PyAny>) -> PyResult<i128> {
    let mut overflow: std::os::raw::c_int = 0;
    // SAFETY: `v` is a valid object; the call sets `overflow` instead of raising for ints out of
    // range, and raises (returns -1, checked below) only for non-ints.
    let x = unsafe { pyo3::ffi::PyLong_AsLongLongAndOverflow(v.as_ptr(), &mut overflow) };
    if overflow == 0 {
        if x == -1 {
            if let Some(e) = PyErr::take(v.py()) {
                return Err(e);
            }
        }
        return Ok(x as i128);
    }
    if overflow > 0 {
        if let Ok(x) = v.extract::<u64>() {
            return Ok(x as i128);
        }
    }
    v.extract::<i128>()
}

/// `bottom_up._rank`: element type and rank, as the Python computes them from the printed shape
/// (the head before the first `[`, and the commas after it plus one).
pub(crate) fn rank_key(shape: &str) -> (u32, u32) {
    match shape.find('[') {
        None => (intern(shape), 1),
        Some(p) => {
            let dims = &shape[p + 1..];
            let commas = dims.bytes().filter(|&c| c == b',').count() as u32;
            (
                intern(&shape[..p]),
                commas + u32::from(!dims.starts_with(']')),
            )
        }
    }
}

/// One canonical computation as the matcher reads it: its names and canonical form (`Canon`,
/// shared with the handle it was made from, if any), and what the matcher adds.
#[pyclass(frozen, module = "xlagraph._core")]
pub struct MatchSide {
    pub(crate) canon: Arc<Canon>,
    pub(crate) opcode: Vec<u32>,
    /// Opcode in `COMMUTATIVE` / in `top_down._LEAVES`.
    pub(crate) commutative: Vec<bool>,
    pub(crate) leaf: Vec<bool>,
    /// The printed shape, the shape without layout (`strip_layout`), its rank key, its dims.
    pub(crate) shape: Vec<u32>,
    pub(crate) stripped: Vec<u32>,
    pub(crate) rank: Vec<(u32, u32)>,
    pub(crate) dims: Vec<u32>,
    pub(crate) dims_table: Vec<Option<Vec<i64>>>,
    pub(crate) has_h: Vec<bool>,
    /// Users of each instruction in `order` (`bottom_up.users_of`), CSR.
    pub(crate) users_start: Vec<u32>,
    pub(crate) users: Vec<u32>,
}

impl std::ops::Deref for MatchSide {
    type Target = Canon;
    fn deref(&self) -> &Canon {
        &self.canon
    }
}

impl MatchSide {
    pub(crate) fn users(&self, i: u32) -> &[u32] {
        let i = i as usize;
        &self.users[self.users_start[i] as usize..self.users_start[i + 1] as usize]
    }
}

/// Looks names up: by object identity first (the canonical form shares the IR's strings), then
/// by text (a table made on the first name that is not one of those objects).
struct Index<'py> {
    by_text: std::cell::OnceCell<FxMap<String, u32>>,
    by_ptr: FxMap<usize, u32>,
    _keep: Vec<Bound<'py, PyAny>>,
}

impl<'py> Index<'py> {
    fn get(&self, name: &Bound<'py, PyAny>, names: &[Py<PyString>]) -> PyResult<u32> {
        if let Some(&i) = self.by_ptr.get(&(name.as_ptr() as usize)) {
            return Ok(i);
        }
        let s = name.downcast::<PyString>()?.to_str()?;
        let table = self.by_text.get_or_init(|| {
            let py = name.py();
            let mut t = FxMap::default();
            for (k, n) in names.iter().enumerate() {
                if let Ok(text) = n.bind(py).to_str() {
                    t.insert(text.to_owned(), k as u32);
                }
            }
            t
        });
        table
            .get(s)
            .copied()
            .ok_or_else(|| PyValueError::new_err(format!("unknown instruction {s}")))
    }
}

/// Read a canonical computation for the matcher. `instructions` is the computation's tuple of
/// `Instruction`s, `shape_keys` maps each printed shape to `(strip_layout(shape), dims)` with
/// `dims` as `match._dims` gives them (None, or a list of ints); `commutative` is
/// `hashes.COMMUTATIVE`. The other arguments are `CanonicalComputation`'s fields of those names.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub fn match_side<'py>(
    py: Python<'py>,
    instructions: &Bound<'py, PyTuple>,
    shape_keys: &Bound<'py, PyDict>,
    commutative: &Bound<'py, PyAny>,
    order: &Bound<'py, PyTuple>,
    operands: &Bound<'py, PyDict>,
    outputs: &Bound<'py, PyTuple>,
    h0: &Bound<'py, PyDict>,
    h1: &Bound<'py, PyDict>,
    param_number: &Bound<'py, PyDict>,
) -> PyResult<MatchSide> {
    let n = instructions.len();
    let mut names = Vec::with_capacity(n);
    let mut opcode = Vec::with_capacity(n);
    let mut commut = Vec::with_capacity(n);
    let mut leaf = Vec::with_capacity(n);
    let mut shape = Vec::with_capacity(n);
    let mut stripped = Vec::with_capacity(n);
    let mut rank = Vec::with_capacity(n);
    let mut dims = Vec::with_capacity(n);
    let mut dims_table: Vec<Option<Vec<i64>>> = Vec::new();
    let mut index = Index {
        by_text: std::cell::OnceCell::new(),
        by_ptr: FxMap::default(),
        _keep: Vec::new(),
    };
    index.by_ptr.reserve(n);
    // Per distinct printed shape / opcode object: (shape, stripped, rank, dims) and flags.
    let mut shape_cache: FxMap<usize, (u32, u32, (u32, u32), u32)> = FxMap::default();
    let mut opcode_cache: FxMap<usize, (u32, bool, bool)> = FxMap::default();
    let mut dims_ids: FxMap<Option<Vec<i64>>, u32> = FxMap::default();
    for (k, ins) in instructions.iter().enumerate() {
        let ins = ins.downcast::<PyTuple>()?;
        let name = ins.get_item(0)?;
        let op = ins.get_item(1)?;
        let sh = ins.get_item(2)?;
        let name_s = name.downcast::<PyString>()?;
        // Last wins, as `Computation.by_name` keeps the last of a repeated name.
        index.by_ptr.insert(name.as_ptr() as usize, k as u32);
        names.push(name_s.clone().unbind());
        let o = match opcode_cache.get(&(op.as_ptr() as usize)) {
            Some(&o) => o,
            None => {
                let s = op.downcast::<PyString>()?.to_str()?;
                let o = (
                    intern(s),
                    commutative.contains(&op)?,
                    s == "parameter" || s == "constant",
                );
                opcode_cache.insert(op.as_ptr() as usize, o);
                index._keep.push(op.clone());
                o
            }
        };
        opcode.push(o.0);
        commut.push(o.1);
        leaf.push(o.2);
        let s = match shape_cache.get(&(sh.as_ptr() as usize)) {
            Some(&s) => s,
            None => {
                let text = sh.downcast::<PyString>()?.to_str()?;
                let key = shape_keys
                    .get_item(&sh)?
                    .ok_or_else(|| PyValueError::new_err(format!("no shape key for {text}")))?;
                let key = key.downcast::<PyTuple>()?;
                let strip = key.get_item(0)?;
                let d: Option<Vec<i64>> = key.get_item(1)?.extract()?;
                let next = dims_ids.len() as u32;
                let did = *dims_ids.entry(d.clone()).or_insert_with(|| {
                    dims_table.push(d);
                    next
                });
                let s = (
                    intern(text),
                    intern(strip.downcast::<PyString>()?.to_str()?),
                    rank_key(text),
                    did,
                );
                shape_cache.insert(sh.as_ptr() as usize, s);
                index._keep.push(sh.clone());
                s
            }
        };
        shape.push(s.0);
        stripped.push(s.1);
        rank.push(s.2);
        dims.push(s.3);
        index._keep.push(name);
    }
    let order_ix: Vec<u32> = order
        .iter()
        .map(|x| index.get(&x, &names))
        .collect::<PyResult<_>>()?;
    // The canonical form's dictionaries list `order`'s names in its order: a key that is the
    // object expected at its position needs no lookup (a cache miss each, on 600K names).
    let at = |pos: usize, key: &Bound<'py, PyAny>| -> PyResult<u32> {
        if let Some(&i) = order_ix.get(pos) {
            if names[i as usize].as_ptr() == key.as_ptr() {
                return Ok(i);
            }
        }
        index.get(key, &names)
    };
    // Canonical operands, CSR by instruction.
    let mut per: Vec<Option<Vec<u32>>> = vec![None; n];
    for (pos, (k, v)) in operands.iter().enumerate() {
        let i = at(pos, &k)? as usize;
        let t = v.downcast::<PyTuple>()?;
        per[i] = Some(
            t.iter()
                .map(|x| index.get(&x, &names))
                .collect::<PyResult<_>>()?,
        );
    }
    let mut ops_start = Vec::with_capacity(n + 1);
    let mut ops = Vec::new();
    let mut has_ops = Vec::with_capacity(n);
    for p in &per {
        ops_start.push(ops.len() as u32);
        has_ops.push(p.is_some());
        if let Some(v) = p {
            ops.extend_from_slice(v);
        }
    }
    ops_start.push(ops.len() as u32);
    drop(per);
    let outputs_ix: Vec<u32> = outputs
        .iter()
        .map(|x| index.get(&x, &names))
        .collect::<PyResult<_>>()?;
    let mut hv0 = vec![0i128; n];
    let mut hv1 = vec![0i128; n];
    let mut has_h0 = vec![false; n];
    let mut has_h = vec![false; n];
    for (pos, (k, v)) in h0.iter().enumerate() {
        let i = at(pos, &k)? as usize;
        hv0[i] = hash_of(&v)?;
        has_h0[i] = true;
    }
    for (pos, (k, v)) in h1.iter().enumerate() {
        let i = at(pos, &k)? as usize;
        hv1[i] = hash_of(&v)?;
        has_h[i] = true;
    }
    // The matcher reads h0 only where it reads h1 (instructions of `order`).
    if has_h0 != has_h {
        return Err(PyValueError::new_err(
            "h0 and h1 name different instructions",
        ));
    }
    let params = param_number
        .iter()
        .map(|(k, v)| Ok((index.get(&k, &names)?, v.extract::<i64>()?)))
        .collect::<PyResult<Vec<_>>>()?;
    // An input read from a tuple parameter (a get-tuple-element) is a leaf like a parameter.
    for &(i, _) in &params {
        leaf[i as usize] = true;
    }
    let (users_start, users) = users_of(n, &order_ix, &ops_start, &ops, &has_ops)?;
    let _ = py;
    Ok(MatchSide {
        canon: Arc::new(Canon {
            names,
            order: order_ix,
            ops_start,
            ops,
            has_ops,
            outputs: outputs_ix,
            h0: hv0,
            h1: hv1,
            params,
            index: pyo3::sync::GILOnceCell::new(),
            unique: false,
        }),
        opcode,
        commutative: commut,
        leaf,
        shape,
        stripped,
        rank,
        dims,
        dims_table,
        has_h,
        users_start,
        users,
    })
}

/// `bottom_up.users_of`: the users of each instruction in `order`, once per operand occurrence
/// (CSR). Every instruction of `order` must have an operands entry.
pub(crate) fn users_of(
    n: usize,
    order: &[u32],
    ops_start: &[u32],
    ops: &[u32],
    has_ops: &[bool],
) -> PyResult<(Vec<u32>, Vec<u32>)> {
    let mut count = vec![0u32; n + 1];
    for &u in order {
        let u = u as usize;
        if !has_ops[u] {
            return Err(PyValueError::new_err(
                "an instruction of order has no operands entry",
            ));
        }
        for &o in &ops[ops_start[u] as usize..ops_start[u + 1] as usize] {
            count[o as usize + 1] += 1;
        }
    }
    for i in 0..n {
        count[i + 1] += count[i];
    }
    let users_start = count.clone();
    let mut fill = count;
    let mut users = vec![0u32; users_start[n] as usize];
    for &u in order {
        let u = u as usize;
        for &o in &ops[ops_start[u] as usize..ops_start[u + 1] as usize] {
            users[fill[o as usize] as usize] = u as u32;
            fill[o as usize] += 1;
        }
    }
    Ok((users_start, users))
}

const OUTPUTS_EXACT: u8 = 0;
const OUTPUTS: u8 = 1;
const TOP_DOWN: u8 = 2;
const TOP_DOWN_LENIENT: u8 = 3;
const EXACT: u8 = 4;
const EXACT_SHAPE: u8 = 5;
const BOTTOM_UP: u8 = 6;
const PARAMETERS: u8 = 7;
const OUTPUTS_CONTEXT: u8 = 8;
const TAGS: [&str; 9] = [
    "outputs-exact",
    "outputs",
    "top-down",
    "top-down-lenient",
    "exact",
    "exact-shape",
    "bottom-up",
    "parameters",
    "outputs-context",
];

/// A hash the Python would have looked up in a dictionary that lacks it (a KeyError there): the
/// matcher stops and the caller runs the Python reference, which raises as it always did.
struct Missing;
type R<T> = Result<T, Missing>;

/// `mappings.Mappings`, by index.
struct M<'s> {
    l: &'s MatchSide,
    r: &'s MatchSide,
    left: Vec<u32>,
    right: Vec<u32>,
    tag: Vec<u8>,
    pairs: Vec<(u32, u32)>,
    expanded: Vec<bool>,
}

impl<'s> M<'s> {
    fn add(&mut self, a: u32, b: u32, tag: u8) -> bool {
        if self.left[a as usize] != NONE || self.right[b as usize] != NONE {
            return false;
        }
        self.left[a as usize] = b;
        self.right[b as usize] = a;
        self.tag[a as usize] = tag;
        self.pairs.push((a, b));
        true
    }
    fn lp(&self, a: u32) -> bool {
        self.left[a as usize] != NONE
    }
    fn rp(&self, b: u32) -> bool {
        self.right[b as usize] != NONE
    }
    fn hash(side: &MatchSide, key_h1: bool, i: u32) -> R<i128> {
        if !side.has_h[i as usize] {
            return Err(Missing);
        }
        Ok(if key_h1 {
            side.h1[i as usize]
        } else {
            side.h0[i as usize]
        })
    }
    fn ops_l(&self, i: u32) -> R<&'s [u32]> {
        self.l.operands(i).ok_or(Missing)
    }
    fn ops_r(&self, i: u32) -> R<&'s [u32]> {
        self.r.operands(i).ok_or(Missing)
    }

    /// `match._complete`.
    fn complete(&self, left_side: bool) -> bool {
        let (side, paired, count) = if left_side {
            (self.l, &self.left, self.pairs.len())
        } else {
            (self.r, &self.right, self.pairs.len())
        };
        if count < side.order.len() {
            return false;
        }
        side.order.iter().all(|&i| paired[i as usize] != NONE)
            && side.params.iter().all(|&(i, _)| paired[i as usize] != NONE)
    }

    /// `exact.zip_subgraphs`.
    fn zip_subgraphs(&mut self, a: u32, b: u32, key_h1: bool, tag: u8) -> R<()> {
        let (l, r) = (self.l, self.r);
        let mut stack = vec![(a, b)];
        let mut sa: Vec<u32> = Vec::new();
        let mut sb: Vec<u32> = Vec::new();
        while let Some((x, y)) = stack.pop() {
            let (ox, oy) = (self.ops_l(x)?, self.ops_r(y)?);
            if ox.len() != oy.len() {
                continue;
            }
            sa.clear();
            sb.clear();
            sa.extend_from_slice(ox);
            sb.extend_from_slice(oy);
            if ox.len() > 1 && l.commutative[x as usize] {
                for &p in &sa {
                    Self::hash(l, key_h1, p)?;
                }
                for &q in &sb {
                    Self::hash(r, key_h1, q)?;
                }
                // Stable, by the hash's value, as `sorted(key=...)`.
                let hl = if key_h1 { &l.h1 } else { &l.h0 };
                let hr = if key_h1 { &r.h1 } else { &r.h0 };
                sa.sort_by_key(|&p| hl[p as usize]);
                sb.sort_by_key(|&q| hr[q as usize]);
            }
            for k in 0..sa.len() {
                let (p, q) = (sa[k], sb[k]);
                if Self::hash(l, key_h1, p)? == Self::hash(r, key_h1, q)?
                    && self.add(p, q, tag)
                    && !self.ops_l(p)?.is_empty()
                {
                    stack.push((p, q));
                }
            }
        }
        Ok(())
    }

    /// `match._match_outputs_exact`.
    fn outputs_exact(&mut self) -> R<()> {
        let (l, r) = (self.l, self.r);
        let mut pool: FxMap<i128, VecDeque<u32>> = FxMap::default();
        for &b in &r.outputs {
            pool.entry(Self::hash(r, true, b)?)
                .or_default()
                .push_back(b);
        }
        for &a in &l.outputs {
            let h = Self::hash(l, true, a)?;
            let Some(candidates) = pool.get_mut(&h) else {
                continue;
            };
            while let Some(&c) = candidates.front() {
                if self.right[c as usize] != NONE {
                    candidates.pop_front();
                } else {
                    break;
                }
            }
            if !candidates.is_empty() && !self.lp(a) {
                let b = candidates.pop_front().unwrap_or(NONE);
                self.add(a, b, OUTPUTS_EXACT);
                self.zip_subgraphs(a, b, true, OUTPUTS_EXACT)?;
            }
        }
        Ok(())
    }

    /// `match._match_outputs`.
    fn outputs(&mut self, sent_l: &[bool], sent_r: &[bool], resharded: bool, balanced_only: bool) {
        let (l, r) = (self.l, self.r);
        let slots = l.outputs.len() == r.outputs.len() && !r.outputs.is_empty();
        // Positions in `outputs` of each output (the last, as a dict comprehension keeps).
        let mut position: FxMap<u32, usize> = FxMap::default();
        if slots {
            for (i, &a) in l.outputs.iter().enumerate() {
                position.insert(a, i);
            }
        }
        // `sent` is looked up by name; outputs' flags are given by position.
        let mut is_sent_l: FxMap<u32, bool> = FxMap::default();
        for (k, &a) in l.outputs.iter().enumerate() {
            if sent_l[k] {
                is_sent_l.insert(a, true);
            }
        }
        let mut is_sent_r: FxMap<u32, bool> = FxMap::default();
        for (k, &b) in r.outputs.iter().enumerate() {
            if sent_r[k] {
                is_sent_r.insert(b, true);
            }
        }
        for same_opcode in [true, false] {
            let free_right: Vec<u32> = r.outputs.iter().copied().filter(|&b| !self.rp(b)).collect();
            let free_left: Vec<u32> = l.outputs.iter().copied().filter(|&a| !self.lp(a)).collect();
            let mut at: FxMap<u32, usize> = FxMap::default();
            for (k, &b) in free_right.iter().enumerate() {
                at.insert(b, k);
            }
            let mut skip: FxMap<u32, ()> = FxMap::default();
            if balanced_only {
                let mut count: FxMap<u32, (i64, i64)> = FxMap::default();
                for &b in &free_right {
                    count.entry(r.stripped[b as usize]).or_default().1 += 1;
                }
                for &a in &free_left {
                    count.entry(l.stripped[a as usize]).or_default().0 += 1;
                }
                for (s, (x, y)) in count {
                    if x != y {
                        skip.insert(s, ());
                    }
                }
            }
            let mut start = 0usize;
            for &a in &free_left {
                if self.lp(a) || is_sent_l.contains_key(&a) {
                    continue;
                }
                let (shape, opcode) = (l.stripped[a as usize], l.opcode[a as usize]);
                if slots {
                    let b = r.outputs[position[&a]];
                    if let Some(&k) = at.get(&b) {
                        if !self.rp(b) && !is_sent_r.contains_key(&b) {
                            let (shape_b, opcode_b) =
                                (r.stripped[b as usize], r.opcode[b as usize]);
                            let (da, db) = (
                                &l.dims_table[l.dims[a as usize] as usize],
                                &r.dims_table[r.dims[b as usize] as usize],
                            );
                            if opcode == opcode_b
                                && shape != shape_b
                                && sharded_alike(da, db)
                                && (resharded || da == db)
                            {
                                self.add(a, b, OUTPUTS);
                                start = start.max(k + 1);
                                continue;
                            }
                        }
                    }
                }
                if skip.contains_key(&shape) {
                    continue;
                }
                for (k, &b) in free_right.iter().enumerate().skip(start) {
                    if self.rp(b) || shape != r.stripped[b as usize] || is_sent_r.contains_key(&b) {
                        continue;
                    }
                    if same_opcode && opcode != r.opcode[b as usize] {
                        continue;
                    }
                    self.add(a, b, OUTPUTS);
                    start = k + 1;
                    break;
                }
            }
        }
    }

    /// `match._match_parameters`.
    fn parameters(&mut self) {
        let (l, r) = (self.l, self.r);
        let mut free_left: Vec<(u32, i64)> = l
            .params
            .iter()
            .copied()
            .filter(|&(p, _)| !self.lp(p))
            .collect();
        let mut free_right: Vec<(u32, i64)> = r
            .params
            .iter()
            .copied()
            .filter(|&(p, _)| !self.rp(p))
            .collect();
        free_left.sort_by_key(|&(_, n)| n);
        free_right.sort_by_key(|&(_, n)| n);
        for &(a, _) in &free_left {
            for &(b, _) in &free_right {
                if !self.rp(b) && l.stripped[a as usize] == r.stripped[b as usize] {
                    self.add(a, b, PARAMETERS);
                    break;
                }
            }
        }
        let rest_left: Vec<u32> = free_left
            .iter()
            .map(|p| p.0)
            .filter(|&p| !self.lp(p))
            .collect();
        let rest_right: Vec<u32> = free_right
            .iter()
            .map(|p| p.0)
            .filter(|&p| !self.rp(p))
            .collect();
        if rest_left.len() == rest_right.len() {
            for (a, b) in rest_left.into_iter().zip(rest_right) {
                self.add(a, b, PARAMETERS);
            }
        }
    }

    /// `top_down._open_pairs`.
    fn open_pairs(&self) -> Vec<(u32, u32)> {
        let (l, r) = (self.l, self.r);
        let free_left: Vec<u32> = l.order.iter().copied().filter(|&a| !self.lp(a)).collect();
        let free_right: Vec<u32> = r.order.iter().copied().filter(|&b| !self.rp(b)).collect();
        if free_left.len() + free_right.len() >= self.pairs.len() {
            return self.pairs.clone();
        }
        let mut with_free_left = vec![false; l.names.len()];
        for &n in &free_left {
            for &u in l.users(n) {
                if self.lp(u) {
                    with_free_left[u as usize] = true;
                }
            }
        }
        let mut with_free_right = vec![false; r.names.len()];
        for &n in &free_right {
            for &u in r.users(n) {
                if self.rp(u) {
                    with_free_right[u as usize] = true;
                }
            }
        }
        self.pairs
            .iter()
            .copied()
            .filter(|&(a, _)| {
                with_free_left[a as usize] && with_free_right[self.left[a as usize] as usize]
            })
            .collect()
    }

    /// `top_down.match_top_down`.
    fn top_down(&mut self, strict: bool) -> R<()> {
        let (l, r) = (self.l, self.r);
        let tag = if strict { TOP_DOWN } else { TOP_DOWN_LENIENT };
        let mut stack = self.open_pairs();
        if strict {
            stack.retain(|&(a, _)| !self.expanded[a as usize]);
        }
        while let Some((a, b)) = stack.pop() {
            if strict {
                if self.expanded[a as usize] {
                    continue;
                }
                self.expanded[a as usize] = true;
            }
            let (Some(oa), Some(ob)) = (l.operands(a), r.operands(b)) else {
                continue;
            };
            if oa.len() != ob.len() {
                continue;
            }
            let (oa, ob): (Vec<u32>, Vec<u32>) = if oa.len() > 1 && l.commutative[a as usize] {
                if oa.iter().all(|&x| self.lp(x)) || ob.iter().all(|&y| self.rp(y)) {
                    continue;
                }
                self.align_commutative(oa, ob)?
            } else {
                (oa.to_vec(), ob.to_vec())
            };
            for (&x, &y) in oa.iter().zip(ob.iter()) {
                if self.lp(x) || self.rp(y) {
                    continue;
                }
                let (ox, oy) = (l.opcode[x as usize], r.opcode[y as usize]);
                if ox != oy {
                    if strict || l.leaf[x as usize] || r.leaf[y as usize] {
                        continue;
                    }
                    if l.stripped[x as usize] != r.stripped[y as usize] {
                        continue;
                    }
                }
                self.add(x, y, tag);
                if !self.ops_l(x)?.is_empty() {
                    if Self::hash(l, true, x)? == Self::hash(r, true, y)? {
                        self.zip_subgraphs(x, y, true, tag)?;
                    }
                    stack.push((x, y));
                }
            }
        }
        Ok(())
    }

    /// `top_down._align_commutative` (and `_align_two`).
    fn align_commutative(&self, oa: &[u32], ob: &[u32]) -> R<(Vec<u32>, Vec<u32>)> {
        let (l, r) = (self.l, self.r);
        if oa.len() == 2 {
            let (x0, x1, y0, y1) = (oa[0], oa[1], ob[0], ob[1]);
            let straight = (vec![x0, x1], vec![y0, y1]);
            // The Python builds the three rules' keys before trying the first.
            let h = [
                Self::hash(l, true, x0)?,
                Self::hash(l, true, x1)?,
                Self::hash(r, true, y0)?,
                Self::hash(r, true, y1)?,
            ];
            // Rule 0: already paired (None never equals a name).
            let (m0, m1) = (self.left[x0 as usize], self.left[x1 as usize]);
            let keys0 = [m0, m1, y0, y1];
            if let Some(v) = Self::decide2(keys0, |k| k != NONE, oa, ob) {
                return Ok(v);
            }
            if let Some(v) = Self::decide2(h, |_| true, oa, ob) {
                return Ok(v);
            }
            let h0 = [
                Self::hash(l, false, x0)?,
                Self::hash(l, false, x1)?,
                Self::hash(r, false, y0)?,
                Self::hash(r, false, y1)?,
            ];
            if let Some(v) = Self::decide2(h0, |_| true, oa, ob) {
                return Ok(v);
            }
            let o = [
                l.opcode[x0 as usize],
                l.opcode[x1 as usize],
                r.opcode[y0 as usize],
                r.opcode[y1 as usize],
            ];
            if let Some(v) = Self::decide2(o, |_| true, oa, ob) {
                return Ok(v);
            }
            return Ok(straight);
        }
        let mut rest_a = oa.to_vec();
        let mut rest_b = ob.to_vec();
        let mut first_a = Vec::new();
        let mut first_b = Vec::new();
        for rule in 0..4 {
            let snapshot = rest_a.clone();
            for &x in &snapshot {
                let mut found = None;
                for &y in &rest_b {
                    let ok = match rule {
                        0 => self.left[x as usize] == y,
                        1 => Self::hash(l, true, x)? == Self::hash(r, true, y)?,
                        2 => Self::hash(l, false, x)? == Self::hash(r, false, y)?,
                        _ => l.opcode[x as usize] == r.opcode[y as usize],
                    };
                    if ok {
                        found = Some(y);
                        break;
                    }
                }
                if let Some(y) = found {
                    if let Some(p) = rest_a.iter().position(|&v| v == x) {
                        rest_a.remove(p);
                    }
                    if let Some(p) = rest_b.iter().position(|&v| v == y) {
                        rest_b.remove(p);
                    }
                    first_a.push(x);
                    first_b.push(y);
                }
            }
        }
        first_a.extend(rest_a);
        first_b.extend(rest_b);
        Ok((first_a, first_b))
    }

    /// The first of `k0 == v0`, `k0 == v1`, `k1 == v0`, `k1 == v1` that holds decides; `valid`
    /// says whether a left key can equal anything (None cannot).
    fn decide2<T: PartialEq + Copy>(
        k: [T; 4],
        valid: impl Fn(T) -> bool,
        oa: &[u32],
        ob: &[u32],
    ) -> Option<(Vec<u32>, Vec<u32>)> {
        let (k0, k1, v0, v1) = (k[0], k[1], k[2], k[3]);
        let a = vec![oa[0], oa[1]];
        let sa = vec![oa[1], oa[0]];
        let b = vec![ob[0], ob[1]];
        let sb = vec![ob[1], ob[0]];
        if valid(k0) && k0 == v0 {
            return Some((a, b));
        }
        if valid(k0) && k0 == v1 {
            return Some((a, sb));
        }
        if valid(k1) && k1 == v0 {
            return Some((sa, b));
        }
        if valid(k1) && k1 == v1 {
            return Some((sa, sb));
        }
        None
    }

    /// `exact.match_exact`.
    fn exact(&mut self, key_h1: bool) -> R<()> {
        let (l, r) = (self.l, self.r);
        let tag = if key_h1 { EXACT } else { EXACT_SHAPE };
        let mut candidates: FxMap<i128, (Vec<u32>, usize)> = FxMap::default();
        for &b in r.order.iter().rev() {
            if !self.rp(b) {
                candidates
                    .entry(Self::hash(r, key_h1, b)?)
                    .or_default()
                    .0
                    .push(b);
            }
        }
        let mut left_count: FxMap<i128, u32> = FxMap::default();
        for &a in &l.order {
            if !self.lp(a) {
                *left_count.entry(Self::hash(l, key_h1, a)?).or_default() += 1;
            }
        }
        for &name in l.order.iter().rev() {
            if self.lp(name) {
                continue;
            }
            let h = Self::hash(l, key_h1, name)?;
            let Some((pool, head)) = candidates.get_mut(&h) else {
                continue;
            };
            while *head < pool.len() && self.right[pool[*head] as usize] != NONE {
                *head += 1;
            }
            let left = pool.len() - *head;
            if left == 0 {
                continue;
            }
            if left > 1 || left_count.get(&h).copied().unwrap_or(0) > 1 {
                continue;
            }
            let other = pool[*head];
            *head += 1;
            self.add(name, other, tag);
            self.zip_subgraphs(name, other, key_h1, tag)?;
        }
        Ok(())
    }

    /// `bottom_up.match_bottom_up`.
    fn bottom_up(&mut self) -> R<()> {
        let (l, r) = (self.l, self.r);
        let mut mapped: Vec<u32> = Vec::new();
        for &b in &r.order {
            if self.rp(b) {
                continue;
            }
            let ob = self.ops_r(b)?;
            mapped.clear();
            mapped.extend(
                ob.iter()
                    .filter(|&&o| self.rp(o))
                    .map(|&o| self.right[o as usize]),
            );
            if mapped.is_empty() {
                continue;
            }
            let rank = r.rank[b as usize];
            let (mut best, mut best_score) = (NONE, 0u32);
            for &counterpart in &mapped {
                for &a in l.users(counterpart) {
                    if self.lp(a)
                        || l.opcode[a as usize] != r.opcode[b as usize]
                        || l.rank[a as usize] != rank
                    {
                        continue;
                    }
                    let oa = self.ops_l(a)?;
                    let agree = oa
                        .iter()
                        .zip(ob.iter())
                        .filter(|(&x, &y)| self.left[x as usize] == y)
                        .count() as u32;
                    let score = 2 * agree + u32::from(l.shape[a as usize] == r.shape[b as usize]);
                    if score > best_score {
                        best = a;
                        best_score = score;
                    }
                }
            }
            if best != NONE {
                self.add(best, b, BOTTOM_UP);
            }
        }
        Ok(())
    }
}

/// `match._sharded_alike` on dims already read (`match._dims`).
fn sharded_alike(x: &Option<Vec<i64>>, y: &Option<Vec<i64>>) -> bool {
    match (x, y) {
        (Some(x), Some(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|(&p, &q)| p == q || (p.min(q) > 1 && p.max(q).rem_euclid(p.min(q)) == 0))
        }
        _ => false,
    }
}

#[derive(Clone, Copy)]
enum Phase {
    OutputsExact,
    OutputsContext,
    Outputs { balanced: bool },
    TopDown { strict: bool },
    Exact { h1: bool },
    BottomUp,
    Parameters,
}

const PHASES: [Phase; 13] = [
    Phase::OutputsExact,
    Phase::OutputsContext,
    Phase::Outputs { balanced: true },
    Phase::TopDown { strict: true },
    Phase::Exact { h1: true },
    Phase::Exact { h1: false },
    Phase::TopDown { strict: true },
    Phase::BottomUp,
    Phase::Outputs { balanced: false },
    Phase::Parameters,
    Phase::TopDown { strict: true },
    Phase::BottomUp,
    Phase::TopDown { strict: false },
];

/// The pairs in the order they were made, and the phase that made each.
type Paired = (Vec<(u32, u32)>, Vec<u8>);

fn run(
    l: &MatchSide,
    r: &MatchSide,
    sent_l: &[bool],
    sent_r: &[bool],
    resharded: bool,
    context: &[(u32, u32)],
) -> R<Paired> {
    let mut m = M {
        l,
        r,
        left: vec![NONE; l.names.len()],
        right: vec![NONE; r.names.len()],
        tag: vec![0; l.names.len()],
        pairs: Vec::new(),
        expanded: vec![false; l.names.len()],
    };
    let none_sent_l = vec![false; l.outputs.len()];
    let none_sent_r = vec![false; r.outputs.len()];
    for phase in PHASES {
        if m.complete(true) || m.complete(false) {
            break;
        }
        match phase {
            Phase::OutputsExact => m.outputs_exact()?,
            // `match._match_outputs_context`: the caller's candidate slots, paired where free.
            Phase::OutputsContext => {
                for &(i, j) in context {
                    m.add(
                        l.outputs[i as usize],
                        r.outputs[j as usize],
                        OUTPUTS_CONTEXT,
                    );
                }
            }
            Phase::Outputs { balanced: true } => m.outputs(sent_l, sent_r, resharded, true),
            Phase::Outputs { balanced: false } => {
                m.outputs(&none_sent_l, &none_sent_r, resharded, false)
            }
            Phase::TopDown { strict } => m.top_down(strict)?,
            Phase::Exact { h1 } => m.exact(h1)?,
            Phase::BottomUp => m.bottom_up()?,
            Phase::Parameters => m.parameters(),
        }
    }
    let tags = m.pairs.iter().map(|&(a, _)| m.tag[a as usize]).collect();
    Ok((m.pairs, tags))
}

/// Match two computations read by `match_side`. `sent_left` / `sent_right` flag the outputs
/// (by position) that are in `match._sent`; `resharded` is `match`'s; `context` the output
/// slots `match._context_pairs` gives, in its order. Returns the `Matching`
/// dictionaries `(left, right, matcher)` in pairing order, or None where the Python reference
/// must answer (it would look up a hash the canonical form does not hold).
#[pyfunction]
pub fn match_sides<'py>(
    py: Python<'py>,
    left: &Bound<'py, MatchSide>,
    right: &Bound<'py, MatchSide>,
    sent_left: Vec<bool>,
    sent_right: Vec<bool>,
    resharded: bool,
    context: Vec<(u32, u32)>,
) -> PyResult<Option<Bound<'py, PyTuple>>> {
    let (l, r) = (left.get(), right.get());
    if sent_left.len() != l.outputs.len() || sent_right.len() != r.outputs.len() {
        return Err(PyValueError::new_err("sent flags do not match the outputs"));
    }
    let (nl, nr) = (l.outputs.len() as u32, r.outputs.len() as u32);
    if context.iter().any(|&(i, j)| i >= nl || j >= nr) {
        return Err(PyValueError::new_err("a context pair names no output"));
    }
    let result = py.allow_threads(|| run(l, r, &sent_left, &sent_right, resharded, &context));
    let Ok((pairs, tags)) = result else {
        return Ok(None);
    };
    let tag_str: Vec<Bound<'py, PyString>> = TAGS.iter().map(|t| PyString::intern(py, t)).collect();
    // Mappings over the pairs where both sides' names are unique (canon_map.rs): building three
    // dictionaries of every pair cost six times the matching itself on a 600K pair.
    let kept = tag_str.iter().map(|t| t.clone().unbind()).collect();
    if let Some(maps) =
        crate::canon::canon_map::pair_maps(py, &l.canon, &r.canon, &pairs, &tags, kept)?
    {
        return Ok(Some(PyTuple::new(py, maps)?));
    }
    let dl = PyDict::new(py);
    let dr = PyDict::new(py);
    let dm = PyDict::new(py);
    for (&(a, b), &t) in pairs.iter().zip(&tags) {
        let (na, nb) = (l.names[a as usize].bind(py), r.names[b as usize].bind(py));
        dl.set_item(na, nb)?;
        dr.set_item(nb, na)?;
        dm.set_item(na, &tag_str[t as usize])?;
    }
    Ok(Some(PyTuple::new(
        py,
        [dl.into_any(), dr.into_any(), dm.into_any()],
    )?))
}

/// Users of each instruction of a side, by name (`bottom_up.users_of`), for callers that want
/// the dictionary without building it in Python.
#[pyfunction]
pub fn side_users<'py>(
    py: Python<'py>,
    side: &Bound<'py, MatchSide>,
) -> PyResult<Bound<'py, PyDict>> {
    let s = side.get();
    let d = PyDict::new(py);
    // Key order as the Python builds it: by first use in `order`.
    let mut seen = vec![false; s.names.len()];
    for &u in &s.order {
        if let Some(ops) = s.operands(u) {
            for &o in ops {
                if !seen[o as usize] {
                    seen[o as usize] = true;
                    let users: Vec<&Py<PyString>> =
                        s.users(o).iter().map(|&x| &s.names[x as usize]).collect();
                    d.set_item(s.names[o as usize].bind(py), PyList::new(py, users)?)?;
                }
            }
        }
    }
    Ok(d)
}
