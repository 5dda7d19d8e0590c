//! The reader's entry points: `parse_hlo` (a module as the Python IR and its canonical form, with
//! each computation's handle), `summarize_hlo` and `parse_only`. Parsing and canonicalization run
//! without the GIL on borrowed text; the result is built as the Python IR directly (`Instruction`
//! and `Metadata` NamedTuples), with repeated strings (opcodes, shapes, attribute text) shared as
//! one object each.

use std::sync::Arc;

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple, PyType};

use crate::canon::canonicalize;
use crate::canon::handle_parts;
use crate::canon::model::Failure;
use crate::canon::program;
use crate::canon::shardy::{canonical_meshes, Written};
use crate::parse::ir_build::{self, Builder, Built};
use crate::parse::lazy_instructions;
use crate::parse::line_map;
use crate::parse::read::read;
use crate::parse::text::ModuleText;
use crate::py::canonical_form::canonical_form;

create_exception!(
    _core,
    HloSyntaxError,
    PyValueError,
    "Malformed HLO text: args are (message, line)."
);

/// Parse one HLO module. Returns `(name, header, computations, frame_rows, canonical)` where
/// computations are `(name, instructions, is_entry, line)`, frame rows `(table, index, raw_text)`
/// and `canonical` is `(fingerprint, order, forms)` (see `canonical_form`, callees first),
/// or `(message, line)` when canonicalization refuses the module; then the notes, and last
/// `inlined`: for a module with calls XLA inlines (canon/inline.rs), `(computations, canonical)`
/// of the inlined copy, `canonical` being then None; else None; and last `written`: what the
/// canonical form re-spelled of its Shardy shardings (canon/shardy.rs `Written`), as
/// `(((line, canonical, written), ...), ((mesh, definition), ...))`.
/// Raises `HloSyntaxError(message, line)`; lines are 1-based plus `line_offset`. `line_map`:
/// the text was written by another reader (StableHLO), and line k of it stands for the user's
/// line `line_map[k]` (line_map.rs); `line_offset` then applies to those.
#[pyfunction]
#[pyo3(signature = (text, line_offset, instruction_cls, metadata_cls, ir_first = false, lazy = false, line_map = None))]
pub fn parse_hlo<'py>(
    py: Python<'py>,
    text: &Bound<'py, PyString>,
    line_offset: i64,
    instruction_cls: Bound<'py, PyType>,
    metadata_cls: Bound<'py, PyType>,
    ir_first: bool,
    lazy: bool,
    line_map: Option<Vec<u32>>,
) -> PyResult<Bound<'py, PyTuple>> {
    // The reader's records, freed once the Python IR is built, stay with the allocator: the next
    // graph's reading takes the same memory again (a report reads 20 graphs of 100K instructions).
    // Handing them back to the system after each large graph (glibc's `malloc_trim`, done here
    // before) kept no less resident at the peak and made that reading fault every page in again:
    // a third more page faults and 4 to 8% more CPU over 8 such graphs read in one process.
    build(
        py,
        text,
        line_offset,
        (instruction_cls, metadata_cls),
        (ir_first, lazy),
        line_map.as_deref(),
    )
}

/// `lazy`: each computation's instructions are a `lazy_instructions::Instructions`, built as
/// Python asks for them (where every computation has a core handle; else the tuples are built
/// whole).
fn build<'py>(
    py: Python<'py>,
    text: &Bound<'py, PyString>,
    line_offset: i64,
    (instruction_cls, metadata_cls): (Bound<'py, PyType>, Bound<'py, PyType>),
    (ir_first, lazy): (bool, bool),
    line_map: Option<&[u32]>,
) -> PyResult<Bound<'py, PyTuple>> {
    // SAFETY: the records borrowing the text outlive this call only inside a
    // `lazy_instructions::Held`, which keeps `text` (see `Held::new`); everything else is dropped
    // before it returns.
    let source = unsafe { std::mem::transmute::<&str, &'static str>(text.to_str()?) };
    let parsed = py.allow_threads(|| read(source));
    let (mut module, written) = match parsed {
        Ok(mut m) => {
            if let Some(map) = line_map {
                line_map::remap(&mut m, map);
            }
            let written = canonical_meshes(&mut m);
            (m, written)
        }
        Err((message, line)) => {
            let line = line_map.map_or(line, |map| line_map::source_line(map, line));
            return Err(HloSyntaxError::new_err((
                message,
                line as i64 + line_offset,
            )));
        }
    };
    let b = Builder::new(
        py,
        instruction_cls.clone().unbind(),
        metadata_cls.clone().unbind(),
    )?;
    let header = PyTuple::new(py, module.header.iter().map(|(k, v)| (*k, v.trim())))?;
    // A module with calls XLA inlines: the IR as the text has it (no canonical form of its own),
    // and the IR of the inlined copy with the canonical form every later stage reads
    // (canon/inline.rs): `(computations, canonical)`, else None.
    let copy = py.allow_threads(|| program(&module));
    let own = copy.is_none();
    let asked = if own { (ir_first, lazy) } else { (false, false) };
    let (comps, canonical) =
        computations(py, text, module_records(&mut module), b, line_offset, asked, own)?;
    let inlined = match copy {
        None => py.None().into_bound(py),
        Some(copy) => {
            let b = Builder::new(py, instruction_cls.unbind(), metadata_cls.unbind())?;
            let (inl, canonical) =
                computations(py, text, copy, b, line_offset, (ir_first, lazy), true)?;
            (inl, canonical).into_pyobject(py)?.into_any()
        }
    };
    let rows = PyList::empty(py);
    for (table, index, value) in &module.tables {
        rows.append((*table, *index, *value))?;
    }
    let notes = notes(py, &module.notes, line_offset)?;
    let written = written_tuple(py, written, line_offset)?;
    (&*module.name, header, comps, rows, canonical, notes, inlined, written).into_pyobject(py)
}

/// `Written` as Python reads it (lines as the IR's).
fn written_tuple(py: Python<'_>, w: Written, line_offset: i64) -> PyResult<Bound<'_, PyTuple>> {
    let values = w
        .values
        .into_iter()
        .map(|(line, canonical, text)| (line as i64 + line_offset, canonical, text));
    (PyTuple::new(py, values)?, PyTuple::new(py, w.meshes)?).into_pyobject(py)
}

/// The module's computations moved out, the rest (header, tables, notes) left for the caller.
fn module_records(module: &mut ModuleText<'static>) -> ModuleText<'static> {
    ModuleText {
        name: module.name.clone(),
        header_pos: module.header_pos,
        header: Vec::new(),
        comps: std::mem::take(&mut module.comps),
        tables: Vec::new(),
        notes: Vec::new(),
    }
}

/// The Python IR of `module`'s computations and, with `canon`, its canonical form
/// (`(fingerprint, order, forms)`, or `(message, line)` where canonicalization refuses the
/// module; None without `canon`).
fn computations<'py>(
    py: Python<'py>,
    text: &Bound<'py, PyString>,
    mut module: ModuleText<'static>,
    mut b: Builder<'static>,
    line_offset: i64,
    (ir_first, lazy): (bool, bool),
    canon: bool,
) -> PyResult<(Bound<'py, PyList>, Bound<'py, PyAny>)> {
    // `ir_first`: the Python IR before the canonical form, which is then made without the GIL.
    // A diff reads one side so, the other canonical form first: each side's GIL-bound IR is
    // built while the other side canonicalizes, instead of both waiting on the GIL at the end.
    // It holds the reader's records and the IR at once, so only one side of a diff asks for it.
    let early: Vec<Built<'py>> = if ir_first && !lazy {
        let built = module.comps.iter().map(|comp| b.computation(py, comp, line_offset));
        built.collect::<Result<_, _>>()?
    } else {
        Vec::new()
    };
    // The handles' parts (all but their Python objects) are made here too, without the GIL.
    let (canonical, mut parts) = py.allow_threads(|| {
        let canonical = canon.then(|| canonicalize(&module));
        let mut parts: Vec<Option<handle_parts::Parts>> = Vec::new();
        if let Some(Ok(m)) = &canonical {
            parts.resize_with(module.comps.len(), || None);
            for c in &m.comps {
                parts[c.comp] = Some(handle_parts::parts(c, &module.comps[c.comp]));
            }
        }
        (canonical, parts)
    });
    // Where each computation's canonical form is in `canonical` (callees first).
    let mut place = vec![usize::MAX; module.comps.len()];
    if let Some(Ok(m)) = &canonical {
        for (k, c) in m.comps.iter().enumerate() {
            place[c.comp] = k;
        }
    }
    let mut forms: Vec<Option<Bound<'py, PyTuple>>> = vec![None; place.len()];
    let comps = PyList::empty(py);
    let all_kept = matches!(canonical, Some(Ok(_))) && parts.iter().all(Option::is_some);
    if lazy && all_kept {
        let Some(Ok(m)) = &canonical else {
            unreachable!("all_kept")
        };
        let comps_read = std::mem::take(&mut module.comps);
        // SAFETY: the records borrow `text` alone (`source` above), and `Held` keeps it.
        let held = Arc::new(unsafe {
            lazy_instructions::Held::new(comps_read, b, line_offset, text.clone().unbind(), py)
        });
        for (index, comp) in held.comps.iter().enumerate() {
            let names = ir_build::names_of(py, comp);
            let seq = Bound::new(
                py,
                lazy_instructions::Instructions::new(held.clone(), index, &names),
            )?;
            let seq = seq.into_any();
            comps.append(Builder::computation_tuple(
                py,
                comp,
                seq.clone(),
                line_offset,
            )?)?;
            let p = parts[index].take().expect("all_kept");
            let kept = handle_parts::handle(p, &names, &seq)?;
            let c = &m.comps[place[index]];
            forms[place[index]] = Some(canonical_form(py, c, &names, kept)?);
        }
    } else {
        // Each computation's Rust records are freed once it is built: the peak holds one copy.
        let mut early = early.into_iter();
        for (index, comp) in std::mem::take(&mut module.comps).into_iter().enumerate() {
            let (built, names) = match early.next() {
                Some(made) => made,
                None => b.computation(py, &comp, line_offset)?,
            };
            comps.append(&built)?;
            // A computation another of its name follows has no canonical form (canon/mod.rs).
            if let (Some(Ok(m)), true) = (&canonical, place[index] != usize::MAX) {
                let c = &m.comps[place[index]];
                let p = parts[index].take().expect("a canonical form has its parts");
                let kept = handle_parts::handle(p, &names, &built.get_item(1)?)?;
                forms[place[index]] = Some(canonical_form(py, c, &names, kept)?);
            }
        }
    }
    let canonical = match canonical {
        None => py.None().into_bound(py),
        Some(Ok(m)) => {
            let forms = PyList::new(py, forms.into_iter().flatten().collect::<Vec<_>>())?;
            (m.fingerprint, m.order, forms).into_pyobject(py)?.into_any()
        }
        Some(Err(Failure::Bad(message, line))) => (message, line as i64 + line_offset)
            .into_pyobject(py)?
            .into_any(),
    };
    Ok((comps, canonical))
}

/// The old spellings read (notes.rs), as `(what, line of the first, how many)` tuples.
fn notes<'py>(
    py: Python<'py>,
    notes: &[(&str, u32, usize)],
    line_offset: i64,
) -> PyResult<Bound<'py, PyTuple>> {
    PyTuple::new(
        py,
        notes
            .iter()
            .map(|(what, line, n)| (*what, *line as i64 + line_offset, *n)),
    )
}

/// Parse and canonicalize without building the IR: `(name, instruction_count,
/// computation_count, canonical)`, `canonical` being `(fingerprint, order)`, `(message, line)`
/// when canonicalization refuses the module. All that listing graphs needs. Raises `HloSyntaxError(message, line)` as `parse_hlo` does.
#[pyfunction]
#[pyo3(signature = (text, line_offset, line_map = None))]
pub fn summarize_hlo<'py>(
    py: Python<'py>,
    text: &str,
    line_offset: i64,
    line_map: Option<Vec<u32>>,
) -> PyResult<Bound<'py, PyTuple>> {
    let map = line_map.as_deref();
    let summary = py.allow_threads(|| {
        let read = read(text).map_err(|(message, line)| {
            (
                message,
                map.map_or(line, |m| line_map::source_line(m, line)),
            )
        });
        read.map(|mut m| {
            if let Some(map) = map {
                line_map::remap(&mut m, map);
            }
            canonical_meshes(&mut m); // (what it renamed is for the views: none here)
            let count: usize = m.comps.iter().map(|c| c.insts.len()).sum();
            // Counts as the text has them, the canonical form of the program XLA compiles.
            let canonical = match canonicalize(program(&m).as_ref().unwrap_or(&m)) {
                Ok(c) => Ok((c.fingerprint, c.order)),
                Err(Failure::Bad(message, line)) => Err((message, line)),
            };
            let notes = m.notes.clone();
            (m.name.into_owned(), count, m.comps.len(), canonical, notes)
        })
    });
    let (name, count, comps, canonical, old) = summary
        .map_err(|(message, line)| HloSyntaxError::new_err((message, line as i64 + line_offset)))?;
    let canonical = match canonical {
        Ok(pair) => pair.into_pyobject(py)?.into_any(),
        Err((message, line)) => (message, line as i64 + line_offset)
            .into_pyobject(py)?
            .into_any(),
    };
    (name, count, comps, canonical, notes(py, &old, line_offset)?).into_pyobject(py)
}

/// Parse without building the IR; returns the instruction count (benchmarks split the cost).
#[pyfunction]
pub fn parse_only(py: Python<'_>, text: &str) -> PyResult<usize> {
    py.allow_threads(|| read(text).map(|m| m.comps.iter().map(|c| c.insts.len()).sum::<usize>()))
        .map_err(|(message, line)| HloSyntaxError::new_err((message, line as i64)))
}
