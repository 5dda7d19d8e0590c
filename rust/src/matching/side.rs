//! One canonical computation as the matcher reads it (`MatchSide`): indices instead of names,
//! interned opcodes and shapes, the users of each instruction. `match_side` reads it from the
//! Python IR and the canonical form's dictionaries; `from_handle.rs` from a computation's handle.

use std::sync::{Arc, Mutex, OnceLock};

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

use crate::canon::indexed::{users_of, Canon};
use crate::parse::text::FxMap;

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
