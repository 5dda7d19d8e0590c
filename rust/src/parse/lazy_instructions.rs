//! A computation's instructions built when Python first asks for each (`Instructions`): a diff
//! of two 120K-instruction graphs reads a few thousand `Instruction`s, and building all of them
//! (under the GIL, one side after the other) was a fifth of its time. The sequence answers as
//! the tuple it stands for would: length, indices, slices, iteration, equality, hashing and
//! pickling (as that tuple); each instruction is built once and then kept.
//!
//! The reader's records borrow the module's text: the sequence keeps the Python string that
//! holds it, whose UTF-8 buffer lives, unmoved, as long as the string does.

use std::sync::{Arc, Mutex};

use pyo3::basic::CompareOp;
use pyo3::exceptions::PyIndexError;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PySlice, PyString, PyTuple, PyType};

use crate::parse::ir_build::Builder;
use crate::parse::text::Comp;

/// What the computations of one module share: the records, the builder, the text they borrow.
pub(crate) struct Held {
    /// Declared before `_text`: dropped first (dropping borrowed text reads nothing anyway).
    pub(crate) comps: Vec<Comp<'static>>,
    builder: Mutex<Builder<'static>>,
    /// The `Instruction` and `Metadata` classes, for a builder of its own where that one is busy.
    classes: (Py<PyType>, Py<PyType>),
    line_offset: i64,
    _text: Py<PyString>,
}

impl Held {
    /// SAFETY: every string `comps` borrows lies in `text`'s UTF-8 buffer (CPython keeps a
    /// string's UTF-8 form, unmoved, until the string is freed; `_text` keeps it).
    pub(crate) unsafe fn new(
        comps: Vec<Comp<'static>>,
        builder: Builder<'static>,
        line_offset: i64,
        text: Py<PyString>,
        py: Python<'_>,
    ) -> Self {
        Held {
            comps,
            classes: (
                builder.instruction.clone_ref(py),
                builder.metadata.clone_ref(py),
            ),
            builder: Mutex::new(builder),
            line_offset,
            _text: text,
        }
    }
}

#[pyclass(frozen, sequence, module = "xlagraph._core")]
pub struct Instructions {
    held: Arc<Held>,
    comp: usize,
    names: Box<[Py<PyString>]>,
    made: Box<[GILOnceCell<Py<PyAny>>]>,
}

impl Instructions {
    pub(crate) fn new(held: Arc<Held>, comp: usize, names: &[Bound<'_, PyString>]) -> Self {
        let made = (0..names.len()).map(|_| GILOnceCell::new()).collect();
        Instructions {
            held,
            comp,
            names: names.iter().map(|n| n.clone().unbind()).collect(),
            made,
        }
    }

    /// The `i`-th instruction, built on first use.
    pub(crate) fn get<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyAny>> {
        if let Some(v) = self.made[i].get(py) {
            return Ok(v.bind(py).clone());
        }
        let inst = &self.held.comps[self.comp].insts[i];
        let name = |k: usize| self.names[k].bind(py).clone();
        let own = name(i);
        let offset = self.held.line_offset;
        // Building allocates, so a garbage collection may run a finalizer that asks for another
        // instruction here: the shared builder is then busy, and a fresh one builds it (the same
        // values, only not shared).
        let made = match self.held.builder.try_lock() {
            Ok(mut b) => b.instruction(py, inst, own, name, offset)?.0,
            Err(_) => {
                let (cls, meta) = &self.held.classes;
                Builder::new(py, cls.clone_ref(py), meta.clone_ref(py))?
                    .instruction(py, inst, own, name, offset)?
                    .0
            }
        };
        let _ = self.made[i].set(py, made.unbind());
        Ok(self.made[i].get(py).expect("just set").bind(py).clone())
    }

    fn all<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let items = (0..self.names.len())
            .map(|i| self.get(py, i))
            .collect::<PyResult<Vec<_>>>()?;
        PyTuple::new(py, items)
    }
}

/// The `i`-th item of a computation's instructions: a tuple's, or a lazy sequence's.
pub(crate) fn item<'py>(seq: &Bound<'py, PyAny>, i: usize) -> PyResult<Bound<'py, PyAny>> {
    if let Ok(t) = seq.downcast::<PyTuple>() {
        return t.get_item(i);
    }
    if let Ok(lazy) = seq.downcast::<Instructions>() {
        return lazy.get().get(seq.py(), i);
    }
    seq.get_item(i)
}

#[pymethods]
impl Instructions {
    fn __len__(&self) -> usize {
        self.names.len()
    }

    fn __getitem__<'py>(
        &self,
        py: Python<'py>,
        index: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        if let Ok(slice) = index.downcast::<PySlice>() {
            let s = slice.indices(self.names.len() as isize)?;
            let mut out = Vec::with_capacity(s.slicelength);
            let mut k = s.start;
            for _ in 0..s.slicelength {
                out.push(self.get(py, k as usize)?);
                k += s.step;
            }
            return Ok(PyTuple::new(py, out)?.into_any());
        }
        let n = self.names.len() as isize;
        let mut i: isize = index.extract()?;
        if i < 0 {
            i += n;
        }
        if i < 0 || i >= n {
            return Err(PyIndexError::new_err("tuple index out of range"));
        }
        self.get(py, i as usize)
    }

    fn __iter__(slf: Bound<'_, Self>) -> InstructionsIter {
        InstructionsIter::over(slf, false)
    }

    fn __reversed__(slf: Bound<'_, Self>) -> InstructionsIter {
        InstructionsIter::over(slf, true)
    }

    fn __richcmp__<'py>(
        &self,
        py: Python<'py>,
        other: &Bound<'py, PyAny>,
        op: CompareOp,
    ) -> PyResult<Bound<'py, PyAny>> {
        let other = match other.downcast::<Instructions>() {
            Ok(o) => o.get().all(py)?.into_any(),
            Err(_) => other.clone(),
        };
        self.all(py)?.rich_compare(other, op)
    }

    fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
        self.all(py)?.hash()
    }

    /// Pickled as the tuple it stands for.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        (py.get_type::<PyTuple>(), (self.all(py)?,)).into_pyobject(py)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.all(py)?.repr()?.to_string())
    }

    /// Whether any instruction's metadata names a source file or a stack frame (what
    /// `diff._has_frames` asks), read from the records: no instruction is built.
    fn any_source_line(&self) -> bool {
        self.held.comps[self.comp].insts.iter().any(|inst| {
            inst.metadata
                .as_ref()
                .is_some_and(|m| !m.source_file.is_empty() || m.stack_frame_id != 0)
        })
    }

    /// The names of the instructions that call computations, in order.
    fn callers<'py>(&self, py: Python<'py>) -> Vec<Bound<'py, PyString>> {
        let insts = &self.held.comps[self.comp].insts;
        insts
            .iter()
            .enumerate()
            .filter(|(_, inst)| !inst.called.is_empty())
            .map(|(k, _)| self.names[k].bind(py).clone())
            .collect()
    }

    /// The name of the `i`-th instruction (no instruction is built).
    fn name_at<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyString>> {
        self.names
            .get(i)
            .map(|n| n.bind(py).clone())
            .ok_or_else(|| PyIndexError::new_err("tuple index out of range"))
    }
}

#[pyclass(module = "xlagraph._core")]
pub struct InstructionsIter {
    seq: Py<Instructions>,
    next: usize,
    end: usize,
    back: bool,
}

impl InstructionsIter {
    fn over(seq: Bound<'_, Instructions>, back: bool) -> Self {
        let end = seq.get().names.len();
        InstructionsIter {
            seq: seq.unbind(),
            next: 0,
            end,
            back,
        }
    }
}

#[pymethods]
impl InstructionsIter {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyAny>>> {
        if self.next >= self.end {
            return Ok(None);
        }
        let i = if self.back {
            self.end - 1 - self.next
        } else {
            self.next
        };
        self.next += 1;
        self.seq.get().get(py, i).map(Some)
    }

    fn __length_hint__(&self) -> usize {
        self.end - self.next
    }
}
