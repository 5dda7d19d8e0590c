//! The reader's records -> the Python IR (`Instruction` and `Metadata` NamedTuples), with
//! repeated strings (opcodes, shapes, attribute text) and attribute pairs shared as one object
//! each. The builder keeps its tables as owned references, so that a lazy computation
//! (lazy_instructions.rs) can keep it and build its instructions when Python first asks for them.

use std::borrow::Cow;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyString, PyTuple, PyType};

use crate::parse::text::{self, FxMap, Meta};

pub(crate) struct Builder<'a> {
    /// One Python string per distinct text.
    strings: FxMap<Cow<'a, str>, Py<PyString>>,
    /// `(key, value)` attribute pairs, shared: most instructions repeat a few of them.
    pairs: FxMap<(&'a str, Cow<'a, str>), Py<PyTuple>>,
    /// `Metadata` instances by the text they were read from (immutable: shared like strings),
    /// that text named by where it is: the reader gives equal metadata the slice of its first
    /// occurrence (parser.rs), so the address and length name the text without hashing it.
    metas: FxMap<(usize, usize), Py<PyAny>>,
    /// Allocate NamedTuple instances directly (CPython < 3.14, whose tuples cache no hash).
    direct: bool,
    tuple_new: Py<PyAny>,
    pub(crate) instruction: Py<PyType>,
    pub(crate) metadata: Py<PyType>,
    empty: Py<PyTuple>,
}

/// A computation as built, with its instructions' names.
pub(crate) type Built<'py> = (Bound<'py, PyTuple>, Vec<Bound<'py, PyString>>);

/// Take an object the reader built out of the cyclic garbage collector's view. Only for tuples
/// (and NamedTuple instances) holding strings, numbers, None and other such tuples: they can
/// never be part of a cycle, and 100K-instruction modules otherwise cost every full collection a
/// walk over half a million objects. (CPython untracks such tuples itself, but lazily.)
pub(crate) fn untrack<T>(obj: Bound<'_, T>) -> Bound<'_, T> {
    // SAFETY: a valid object; untracking an object the collector does not track is a no-op.
    unsafe { pyo3::ffi::PyObject_GC_UnTrack(obj.as_ptr().cast()) };
    obj
}

impl<'a> Builder<'a> {
    pub(crate) fn new(
        py: Python<'_>,
        instruction: Py<PyType>,
        metadata: Py<PyType>,
    ) -> PyResult<Self> {
        Ok(Builder {
            strings: FxMap::default(),
            pairs: FxMap::default(),
            metas: FxMap::default(),
            direct: py.version_info() < (3, 14),
            tuple_new: py.get_type::<PyTuple>().getattr("__new__")?.unbind(),
            instruction,
            metadata,
            empty: PyTuple::empty(py).unbind(),
        })
    }

    #[allow(clippy::ptr_arg)] // the Cow itself is kept as the key: borrowed text stays borrowed
    pub(crate) fn string<'py>(
        &mut self,
        py: Python<'py>,
        s: &Cow<'a, str>,
    ) -> Bound<'py, PyString> {
        if let Some(v) = self.strings.get(s.as_ref()) {
            return v.bind(py).clone();
        }
        let v = PyString::new(py, s);
        self.strings.insert(s.clone(), v.clone().unbind());
        v
    }

    /// An instance of the tuple subclass `cls` (a NamedTuple) holding `items`.
    fn make<'py, const N: usize>(
        &self,
        py: Python<'py>,
        cls: &Py<PyType>,
        items: [Bound<'py, PyAny>; N],
    ) -> PyResult<Bound<'py, PyAny>> {
        if self.direct {
            // What tuple.__new__(cls, items) does, without the intermediate tuple: allocate the
            // subclass instance and move the items in.
            // SAFETY: `cls` is a tuple subclass without extra fields (NamedTuple, __slots__ = ());
            // the fresh object has refcount 1 and N empty slots, each filled once (SetItem steals).
            unsafe {
                let obj = pyo3::ffi::PyType_GenericAlloc(
                    cls.bind(py).as_type_ptr(),
                    N as pyo3::ffi::Py_ssize_t,
                );
                if obj.is_null() {
                    return Err(PyErr::fetch(py));
                }
                for (i, item) in items.into_iter().enumerate() {
                    pyo3::ffi::PyTuple_SetItem(obj, i as pyo3::ffi::Py_ssize_t, item.into_ptr());
                }
                return Ok(untrack(Bound::from_owned_ptr(py, obj)));
            }
        }
        Ok(untrack(
            self.tuple_new
                .bind(py)
                .call1((cls, PyTuple::new(py, items)?))?,
        ))
    }

    fn meta<'py>(&mut self, py: Python<'py>, m: &Meta<'a>) -> PyResult<Bound<'py, PyAny>> {
        let key = (m.text.as_ptr() as usize, m.text.len());
        if let Some(v) = self.metas.get(&key) {
            return Ok(v.bind(py).clone());
        }
        let items = [
            self.string(py, &m.op_type).into_any(),
            self.string(py, &m.op_name).into_any(),
            self.string(py, &m.source_file).into_any(),
            m.source_line.into_pyobject(py)?.into_any(),
            m.stack_frame_id.into_pyobject(py)?.into_any(),
        ];
        let cls = self.metadata.clone_ref(py);
        let made = self.make(py, &cls, items)?;
        if !m.text.is_empty() {
            self.metas.insert(key, made.clone().unbind());
        }
        Ok(made)
    }

    /// One `Instruction` and its operand tuple; `name(k)` is the name of the computation's k-th
    /// instruction (one string object per name, shared by the operand tuples that cite it).
    pub(crate) fn instruction<'py>(
        &mut self,
        py: Python<'py>,
        inst: &text::Inst<'a>,
        own: Bound<'py, PyString>,
        name: impl Fn(usize) -> Bound<'py, PyString>,
        line_offset: i64,
    ) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyTuple>)> {
        let operands = if inst.operands.is_empty() {
            self.empty.bind(py).clone()
        } else {
            untrack(PyTuple::new(
                py,
                inst.operands.iter().map(|i| name(*i as usize)),
            )?)
        };
        let attrs = if inst.attrs.is_empty() {
            self.empty.bind(py).clone()
        } else {
            let mut pairs = Vec::with_capacity(inst.attrs.len());
            for (k, v) in &inst.attrs {
                if v.len() > 96 {
                    let key = self.string(py, &Cow::Borrowed(*k));
                    pairs.push(untrack(PyTuple::new(py, [key, PyString::new(py, v)])?));
                    continue;
                }
                if let Some(pair) = self.pairs.get(&(*k, v.clone())) {
                    pairs.push(pair.bind(py).clone());
                    continue;
                }
                let key = self.string(py, &Cow::Borrowed(*k));
                let pair = untrack(PyTuple::new(py, [key, self.string(py, v)])?);
                self.pairs.insert((*k, v.clone()), pair.clone().unbind());
                pairs.push(pair);
            }
            untrack(PyTuple::new(py, pairs)?)
        };
        let called = if inst.called.is_empty() {
            self.empty.bind(py).clone()
        } else {
            let items: Vec<_> = inst.called.iter().map(|c| self.string(py, c)).collect();
            untrack(PyTuple::new(py, items)?)
        };
        let metadata = match &inst.metadata {
            Some(m) => self.meta(py, m)?,
            None => py.None().into_bound(py),
        };
        let items = [
            own.into_any(),
            self.string(py, &inst.opcode).into_any(),
            self.string(py, &inst.shape).into_any(),
            operands.clone().into_any(),
            attrs.into_any(),
            called.into_any(),
            self.string(py, &inst.payload).into_any(),
            metadata,
            PyBool::new(py, inst.is_root).to_owned().into_any(),
            (inst.line as i64 + line_offset)
                .into_pyobject(py)?
                .into_any(),
        ];
        let cls = self.instruction.clone_ref(py);
        Ok((self.make(py, &cls, items)?, operands))
    }

    /// The computation's `(name, instructions, is_entry, line)` from `instructions` (a tuple, or
    /// a lazy sequence), its line counted from `line_offset`.
    pub(crate) fn computation_tuple<'py>(
        py: Python<'py>,
        comp: &text::Comp<'a>,
        instructions: Bound<'py, PyAny>,
        line_offset: i64,
    ) -> PyResult<Bound<'py, PyTuple>> {
        let line = comp.line as i64 + line_offset;
        (PyString::new(py, &comp.name), instructions, comp.is_entry, line).into_pyobject(py)
    }

    /// The computation built whole: `(name, instructions, is_entry, line)`, and its
    /// instructions' names (for the canonical form, which shares them).
    pub(crate) fn computation<'py>(
        &mut self,
        py: Python<'py>,
        comp: &text::Comp<'a>,
        line_offset: i64,
    ) -> PyResult<Built<'py>> {
        let names = names_of(py, comp);
        let mut out: Vec<Bound<'py, PyAny>> = Vec::with_capacity(comp.insts.len());
        for (k, inst) in comp.insts.iter().enumerate() {
            let (made, _) = self.instruction(
                py,
                inst,
                names[k].clone(),
                |i| names[i].clone(),
                line_offset,
            )?;
            out.push(made);
        }
        let built = Self::computation_tuple(
            py,
            comp,
            untrack(PyTuple::new(py, out)?).into_any(),
            line_offset,
        )?;
        Ok((built, names))
    }
}

/// One string per instruction name (each instruction's own, cited by its users' operands),
/// interned: the graphs of one program's recompiles mostly repeat each other's names (the
/// 20-variant report's 99K names per graph are the same in all 20), and a module then keeps the
/// string another module already holds instead of a copy of its own (2M strings, a 15th of that
/// report's page faults). Python interns them mortal: each goes with the last module holding it.
pub(crate) fn names_of<'py>(py: Python<'py>, comp: &text::Comp<'_>) -> Vec<Bound<'py, PyString>> {
    comp.insts
        .iter()
        .map(|inst| PyString::intern(py, &inst.name))
        .collect()
}
