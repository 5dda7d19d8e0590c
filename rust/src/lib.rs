//! `xlagraph._core`: the HLO text reader, and the canonical form of what it read (canon.rs).
//! Parsing and canonicalization run without the GIL on borrowed text; the result is built as the
//! Python IR directly (`Instruction` and `Metadata` NamedTuples), with repeated strings (opcodes,
//! shapes, attribute text) shared as one object each.

mod canon;
mod diagnose;
mod families;
mod matching;
mod parse;

use std::sync::Arc;

use pyo3::create_exception;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple, PyType};

use canon::{canon_map, handle};
use diagnose::{changes, pair_edits};
use matching::{from_handle, matcher, multiply_by_one, refine, users};
use parse::ir_build::{self, untrack, Builder, Built};
use parse::lazy_instructions;
use parse::parser::Parser;
use parse::text::{self, FxMap, ModuleText};

create_exception!(
    _core,
    HloSyntaxError,
    PyValueError,
    "Malformed HLO text: args are (message, line)."
);

/// Parse, turning an error's offset into its line. The parser runs on a thread of its own with a
/// known, ample stack (nesting is bounded, but a caller's thread may have as little as 512 KiB).
/// A panic (a bug in this reader) is reported as an error at line 0, never as an exception
/// Python cannot expect.
fn read(text: &str) -> Result<ModuleText<'_>, (String, usize)> {
    let attempt = || {
        std::panic::catch_unwind(|| {
            let mut p = Parser::new(text);
            p.parse_module()
                .map_err(|e| (e.message, p.c.line_of(e.pos)))
        })
        .unwrap_or_else(|_| {
            Err((
                "internal error of the HLO reader on this input (please report it)".into(),
                0,
            ))
        })
    };
    let result = std::thread::scope(|scope| {
        match std::thread::Builder::new()
            .stack_size(PARSER_STACK)
            .spawn_scoped(scope, attempt)
        {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|_| Err(("internal error of the HLO reader".into(), 0))),
            Err(_) => attempt(), // no thread to be had: parse here
        }
    });
    // Messages quote the input: control characters (a terminal's escape sequences) go out escaped.
    result.map_err(|(message, line)| (escape_controls(&message), line))
}

fn escape_controls(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for c in message.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

const PARSER_STACK: usize = 64 << 20;

/// Parse one HLO module. Returns `(name, header, computations, frame_rows, canonical)` where
/// computations are `(name, instructions, is_entry, line)`, frame rows `(table, index, raw_text)`
/// and `canonical` is `(fingerprint, order, forms)` (see `canonical_form`, callees first),
/// `(message, line)` when canonicalization refuses the module, or None to leave it to Python.
/// Raises `HloSyntaxError(message, line)`; lines are 1-based plus `line_offset`.
#[pyfunction]
#[pyo3(signature = (text, line_offset, instruction_cls, metadata_cls, ir_first = false, lazy = false))]
fn parse_hlo<'py>(
    py: Python<'py>,
    text: &Bound<'py, PyString>,
    line_offset: i64,
    instruction_cls: Bound<'py, PyType>,
    metadata_cls: Bound<'py, PyType>,
    ir_first: bool,
    lazy: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    let built = build(
        py,
        text,
        line_offset,
        (instruction_cls, metadata_cls),
        ir_first,
        lazy,
    );
    if text.to_str()?.len() > TRIM_PAST {
        release_free_memory();
    }
    built
}

/// Past this much text, the reader's records (freed once the Python IR is built) are worth
/// handing back to the system: a report that keeps 20 graphs of 100K instructions otherwise
/// keeps each one's freed records too (about a third of its resident size).
const TRIM_PAST: usize = 1 << 20;

/// Return the allocator's free memory to the system (glibc's `malloc_trim`; elsewhere nothing).
fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        extern "C" {
            fn malloc_trim(pad: usize) -> std::os::raw::c_int;
        }
        // SAFETY: glibc's malloc_trim only releases free memory; it has no preconditions.
        unsafe {
            malloc_trim(0);
        }
    }
}

/// `lazy`: each computation's instructions are a `lazy_instructions::Instructions`, built as Python asks
/// for them (where every computation has a core handle; else the tuples are built whole).
fn build<'py>(
    py: Python<'py>,
    text: &Bound<'py, PyString>,
    line_offset: i64,
    (instruction_cls, metadata_cls): (Bound<'py, PyType>, Bound<'py, PyType>),
    ir_first: bool,
    lazy: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    // SAFETY: the records borrowing the text outlive this call only inside a `lazy_instructions::Held`,
    // which keeps `text` (see `Held::new`); everything else is dropped before it returns.
    let source = unsafe { std::mem::transmute::<&str, &'static str>(text.to_str()?) };
    let parsed = py.allow_threads(|| read(source));
    let mut module = match parsed {
        Ok(m) => m,
        Err((message, line)) => {
            return Err(HloSyntaxError::new_err((
                message,
                line as i64 + line_offset,
            )));
        }
    };
    let mut b = Builder::new(py, instruction_cls.unbind(), metadata_cls.unbind())?;
    let header = PyTuple::new(
        py,
        module
            .header
            .iter()
            .map(|(k, v)| PyTuple::new(py, [PyString::new(py, k), PyString::new(py, v.trim())]))
            .collect::<PyResult<Vec<_>>>()?,
    )?;
    // `ir_first`: the Python IR before the canonical form, which is then made without the GIL.
    // A diff reads one side so, the other canonical form first: each side's GIL-bound IR is
    // built while the other side canonicalizes, instead of both waiting on the GIL at the end.
    // It holds the reader's records and the IR at once, so only one side of a diff asks for it.
    let early: Vec<Built<'py>> = if ir_first && !lazy {
        let mut built = Vec::with_capacity(module.comps.len());
        for comp in &module.comps {
            built.push(b.computation(py, comp, line_offset)?);
        }
        built
    } else {
        Vec::new()
    };
    // The handles' parts (all but their Python objects) are made here too, without the GIL.
    let (canonical, mut parts) = py.allow_threads(|| {
        let canonical = canon::canonicalize(&module);
        let mut parts: Vec<Option<handle::Parts>> = Vec::new();
        if let Ok(m) = &canonical {
            parts.resize_with(module.comps.len(), || None);
            for c in &m.comps {
                parts[c.comp] = handle::parts(c, &module.comps[c.comp]);
            }
        }
        (canonical, parts)
    });
    // Where each computation's canonical form is in `canonical` (callees first).
    let mut place = vec![usize::MAX; module.comps.len()];
    if let Ok(m) = &canonical {
        for (k, c) in m.comps.iter().enumerate() {
            place[c.comp] = k;
        }
    }
    let mut forms: Vec<Option<Bound<'py, PyTuple>>> = vec![None; place.len()];
    let mut ints = FxMap::default();
    let comps = PyList::empty(py);
    let all_kept = canonical.is_ok() && parts.iter().all(Option::is_some);
    if lazy && all_kept {
        let m = canonical.as_ref().ok().expect("all_kept");
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
            let kept = handle::handle(p, &names, &seq)?;
            let c = &m.comps[place[index]];
            forms[place[index]] = Some(canonical_form(
                py,
                &mut ints,
                c,
                comp,
                &names,
                &[],
                Some(kept),
            )?);
        }
    } else {
        // Each computation's Rust records are freed once it is built: the peak holds one copy.
        let mut early = early.into_iter();
        for (index, comp) in std::mem::take(&mut module.comps).into_iter().enumerate() {
            let (built, names, operands) = match early.next() {
                Some(made) => made,
                None => b.computation(py, &comp, line_offset)?,
            };
            comps.append(&built)?;
            if let Ok(m) = &canonical {
                let c = &m.comps[place[index]];
                let instructions = built.get_item(1)?;
                let kept = match parts.get_mut(index).and_then(Option::take) {
                    Some(p) => Some(handle::handle(p, &names, &instructions)?),
                    None => None,
                };
                forms[place[index]] = Some(canonical_form(
                    py, &mut ints, c, &comp, &names, &operands, kept,
                )?);
            }
        }
    }
    let canonical = match canonical {
        Ok(m) => PyTuple::new(
            py,
            [
                PyString::new(py, &m.fingerprint).into_any(),
                PyString::new(py, &m.order).into_any(),
                PyList::new(py, forms.into_iter().flatten().collect::<Vec<_>>())?.into_any(),
            ],
        )?
        .into_any(),
        Err(canon::Failure::Bad(message, line)) => (message, line as i64 + line_offset)
            .into_pyobject(py)?
            .into_any(),
        Err(canon::Failure::Fallback) => py.None().into_bound(py),
    };
    let rows = PyList::empty(py);
    for (table, index, value) in &module.tables {
        rows.append((*table, *index, *value))?;
    }
    PyTuple::new(
        py,
        [
            PyString::new(py, &module.name).into_any(),
            header.into_any(),
            comps.into_any(),
            rows.into_any(),
            canonical,
            notes(py, &module.notes, line_offset)?.into_any(),
        ],
    )
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

/// A Python int of a canonical hash (CPython's tuple hashes are signed, content keys unsigned).
pub(crate) fn py_int<'py>(py: Python<'py>, v: i128) -> PyResult<Bound<'py, PyAny>> {
    Ok(match i64::try_from(v) {
        Ok(x) => x.into_pyobject(py)?.into_any(),
        Err(_) => (v as u64).into_pyobject(py)?.into_any(),
    })
}

/// One computation's canonical form as the fields of `CanonicalComputation`, names shared with
/// the IR: its index, then `CanonicalComputation`'s fields past `computation` in their order;
/// dictionaries in the key order `rules.py` gives them; last the core's handle on it (`core`,
/// handle.rs), None where a name repeats.
fn canonical_form<'py>(
    py: Python<'py>,
    ints: &mut FxMap<u64, Bound<'py, PyAny>>,
    c: &canon::CompCanon,
    comp: &text::Comp,
    names: &[Bound<'py, PyString>],
    operands: &[Bound<'py, PyTuple>],
    kept: Option<handle::CanonHandle>,
) -> PyResult<Bound<'py, PyTuple>> {
    let name = |i: &u32| names[*i as usize].clone();
    let tuple = |v: &[u32]| PyTuple::new(py, v.iter().map(name)).map(untrack);
    // Where the core keeps a handle, the tables by name are mappings over it (canon_map.rs):
    // a diff asks them about a few names, and building them was most of the IR's cost.
    let kept = match kept {
        Some(h) => Some(Bound::new(py, h)?),
        None => None,
    };
    let (ops, keys, h0, h1) = match &kept {
        Some(h) => {
            let map = |f| canon_map::canon_map(py, h, f).map(|m| m.into_bound(py).into_any());
            use canon_map::Field;
            (
                map(Field::Operands)?,
                map(Field::Keys)?,
                map(Field::H0)?,
                map(Field::H1)?,
            )
        }
        None => {
            let (ops, keys, h0, h1) = tables(py, ints, c, comp, names, operands)?;
            (
                ops.into_any(),
                keys.into_any(),
                h0.into_any(),
                h1.into_any(),
            )
        }
    };
    let pairs = |v: &[(u32, i64)]| -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (i, number) in v {
            d.set_item(name(i), number)?;
        }
        Ok(d)
    };
    let layouts = PyDict::new(py);
    for (i, lay) in &c.layouts {
        layouts.set_item(name(i), lay)?;
    }
    PyTuple::new(
        py,
        [
            c.comp.into_pyobject(py)?.into_any(),
            tuple(&c.order)?.into_any(),
            ops,
            tuple(&c.outputs)?.into_any(),
            keys,
            h0,
            h1,
            pairs(&c.params)?.into_any(),
            pairs(&c.ranks)?.into_any(),
            tuple(&c.plumbing)?.into_any(),
            tuple(&c.dead)?.into_any(),
            c.hash.into_pyobject(py)?.into_any(),
            layouts.into_any(),
            tuple(&c.walk)?.into_any(),
            match kept {
                Some(h) => h.into_any(),
                None => py.None().into_bound(py),
            },
        ],
    )
}

/// The canonical form's tables by name as dictionaries (where no handle is kept: a name repeats).
#[allow(clippy::type_complexity)]
fn tables<'py>(
    py: Python<'py>,
    ints: &mut FxMap<u64, Bound<'py, PyAny>>,
    c: &canon::CompCanon,
    comp: &text::Comp,
    names: &[Bound<'py, PyString>],
    operands: &[Bound<'py, PyTuple>],
) -> PyResult<(
    Bound<'py, PyDict>,
    Bound<'py, PyDict>,
    Bound<'py, PyDict>,
    Bound<'py, PyDict>,
)> {
    let name = |i: &u32| names[*i as usize].clone();
    let tuple = |v: &[u32]| PyTuple::new(py, v.iter().map(name)).map(untrack);
    let ops = PyDict::new(py);
    for &i in &c.entered {
        if c.fidx[i as usize] == u32::MAX {
            ops.set_item(name(&i), &operands[i as usize])?;
        } else {
            ops.set_item(name(&i), tuple(c.ops(comp, i))?)?;
        }
    }
    // One int object per distinct content key (a module repeats a few thousand), shared by the
    // leaves' h0/h1 (a leaf's h0 is its key).
    let keys = PyDict::new(py);
    for &i in &c.order {
        let k = c.keys[i as usize];
        let v = match ints.get(&k) {
            Some(v) => v.clone(),
            None => {
                let v = k.into_pyobject(py)?.into_any();
                ints.insert(k, v.clone());
                v
            }
        };
        keys.set_item(name(&i), v)?;
    }
    // h0 and h1 have the keys' key order: copies of `keys` (no rehashing as they grow) whose
    // values are replaced.
    let fill = |hashes: &[i128]| -> PyResult<Bound<'py, PyDict>> {
        let d = keys.copy()?;
        for &i in &c.order {
            let h = hashes[i as usize];
            if h != c.keys[i as usize] as i128 {
                d.set_item(name(&i), py_int(py, h)?)?;
            }
        }
        Ok(d)
    };
    let (h0, h1) = (fill(&c.h0)?, fill(&c.h1)?);
    Ok((ops, keys, h0, h1))
}

/// Parse and canonicalize without building the IR: `(name, instruction_count,
/// computation_count, canonical)`, `canonical` being `(fingerprint, order)`, `(message, line)`
/// when canonicalization refuses the module, or None when only Python's can say. All that
/// listing graphs needs. Raises `HloSyntaxError(message, line)` as `parse_hlo` does.
#[pyfunction]
fn summarize_hlo<'py>(
    py: Python<'py>,
    text: &str,
    line_offset: i64,
) -> PyResult<Bound<'py, PyTuple>> {
    let summary = py.allow_threads(|| {
        read(text).map(|m| {
            let count: usize = m.comps.iter().map(|c| c.insts.len()).sum();
            let canonical = match canon::canonicalize(&m) {
                Ok(c) => Ok((c.fingerprint, c.order)),
                Err(canon::Failure::Bad(message, line)) => Err(Some((message, line))),
                Err(canon::Failure::Fallback) => Err(None),
            };
            let notes = m.notes.clone();
            (m.name.into_owned(), count, m.comps.len(), canonical, notes)
        })
    });
    let (name, count, comps, canonical, old) = summary
        .map_err(|(message, line)| HloSyntaxError::new_err((message, line as i64 + line_offset)))?;
    let canonical = match canonical {
        Ok(pair) => pair.into_pyobject(py)?.into_any(),
        Err(Some((message, line))) => (message, line as i64 + line_offset)
            .into_pyobject(py)?
            .into_any(),
        Err(None) => py.None().into_bound(py),
    };
    (name, count, comps, canonical, notes(py, &old, line_offset)?).into_pyobject(py)
}

/// Parse without building the IR; returns the instruction count (benchmarks split the cost).
#[pyfunction]
fn parse_only(py: Python<'_>, text: &str) -> PyResult<usize> {
    py.allow_threads(|| read(text).map(|m| m.comps.iter().map(|c| c.insts.len()).sum::<usize>()))
        .map_err(|(message, line)| HloSyntaxError::new_err((message, line as i64)))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(parse_hlo, m)?)?;
    m.add_function(wrap_pyfunction!(families::opcode_families, m)?)?;
    m.add_function(wrap_pyfunction!(parse_only, m)?)?;
    m.add_function(wrap_pyfunction!(summarize_hlo, m)?)?;
    m.add_class::<matcher::MatchSide>()?;
    m.add_function(wrap_pyfunction!(matcher::match_side, m)?)?;
    m.add_function(wrap_pyfunction!(matcher::match_sides, m)?)?;
    m.add_function(wrap_pyfunction!(matcher::side_users, m)?)?;
    m.add_function(wrap_pyfunction!(refine::refine_history, m)?)?;
    m.add_function(wrap_pyfunction!(refine::refine_graph, m)?)?;
    m.add_function(wrap_pyfunction!(refine::refine_picked, m)?)?;
    m.add_class::<refine::RefineGraph>()?;
    m.add_class::<handle::CanonHandle>()?;
    m.add_class::<lazy_instructions::Instructions>()?;
    m.add_class::<lazy_instructions::InstructionsIter>()?;
    m.add_class::<canon_map::CanonMap>()?;
    m.add_class::<canon_map::PairMap>()?;
    m.add_class::<pair_edits::EditedPairs>()?;
    m.add_function(wrap_pyfunction!(pair_edits::edited_pairs, m)?)?;
    m.add_function(wrap_pyfunction!(from_handle::match_side_of, m)?)?;
    m.add_function(wrap_pyfunction!(from_handle::refine_graph_of, m)?)?;
    m.add_function(wrap_pyfunction!(from_handle::refine_graphs_of, m)?)?;
    m.add_function(wrap_pyfunction!(changes::matched_walk, m)?)?;
    m.add_function(wrap_pyfunction!(changes::unexplained, m)?)?;
    m.add_function(wrap_pyfunction!(
        multiply_by_one::identity_multiplies_of,
        m
    )?)?;
    m.add_function(wrap_pyfunction!(users::side_users_mapping, m)?)?;
    m.add_class::<users::SideUsers>()?;
    m.add("HloSyntaxError", m.py().get_type::<HloSyntaxError>())?;
    Ok(())
}
