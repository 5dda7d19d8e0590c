//! Canonicalization of a module built in Python (`xlagraph.ir.Module`: lazy IR, protos, modules
//! made by hand): its instructions are read into the core's records (owned text), canonicalized
//! by canon/ like a module the text reader read, and handed back as `parse_hlo` hands its
//! canonical form, bound to the given IR (its name strings, operand tuples and instructions).
//! One engine for every module, whatever read it.

use std::borrow::Cow;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

use crate::canon::canonicalize;
use crate::canon::handle_parts::{self, Parts};
use crate::canon::model::Failure;
use crate::parse::text::{Comp, FxMap, Inst, Meta, ModuleText};
use crate::py::canonical_form::canonical_form;

/// `Metadata`'s fields.
type OwnedMeta = (String, String, String, i64, i64);

/// One `Instruction` as owned text (the records borrow it while canonicalization runs).
struct Owned {
    name: String,
    opcode: String,
    shape: String,
    operands: Vec<String>,
    attrs: Vec<(String, String)>,
    called: Vec<String>,
    payload: String,
    metadata: Option<OwnedMeta>,
    is_root: bool,
    line: u32,
}

/// A Python line as the records keep it (a line past u32, or negative, is no line: 0).
fn line_of(line: i64) -> u32 {
    u32::try_from(line).unwrap_or(0)
}

fn owned(ins: &Bound<'_, PyAny>) -> PyResult<Owned> {
    let field = |k: usize| ins.get_item(k);
    Ok(Owned {
        name: field(0)?.extract()?,
        opcode: field(1)?.extract()?,
        shape: field(2)?.extract()?,
        operands: field(3)?.extract()?,
        attrs: field(4)?.extract()?,
        called: field(5)?.extract()?,
        payload: field(6)?.extract()?,
        metadata: field(7)?.extract()?,
        is_root: field(8)?.extract()?,
        line: line_of(field(9)?.extract()?),
    })
}

/// The records of one computation, operands as indices. A name defined twice (which
/// `Computation.by_name` would hide) and an operand no instruction defines (the oracle raises
/// `KeyError` once a walk reaches it) are refused.
fn records<'a>(
    name: &'a str,
    insts: &'a [Owned],
    is_entry: bool,
    line: u32,
) -> Result<Comp<'a>, (String, u32)> {
    let by_name: FxMap<&str, u32> = insts
        .iter()
        .enumerate()
        .map(|(i, ins)| (ins.name.as_str(), i as u32))
        .collect();
    if by_name.len() != insts.len() {
        let mut seen: FxMap<&str, ()> = FxMap::default();
        let twice = insts
            .iter()
            .find(|ins| seen.insert(ins.name.as_str(), ()).is_some())
            .expect("a repeated name");
        return Err((
            format!(
                "instruction name {} is defined twice in computation {name}",
                twice.name
            ),
            twice.line,
        ));
    }
    let mut records = Vec::with_capacity(insts.len());
    for ins in insts {
        let mut operands = Vec::with_capacity(ins.operands.len());
        for o in &ins.operands {
            match by_name.get(o.as_str()) {
                Some(&i) => operands.push(i),
                None => {
                    return Err((
                        format!(
                            "operand {o} of instruction {} is not defined in computation {name}",
                            ins.name
                        ),
                        ins.line,
                    ))
                }
            }
        }
        records.push(Inst {
            name: Cow::Borrowed(&ins.name),
            opcode: Cow::Borrowed(&ins.opcode),
            shape: Cow::Borrowed(&ins.shape),
            operands,
            attrs: ins
                .attrs
                .iter()
                .map(|(k, v)| (k.as_str(), Cow::Borrowed(v.as_str())))
                .collect(),
            called: ins
                .called
                .iter()
                .map(|c| Cow::Borrowed(c.as_str()))
                .collect(),
            payload: Cow::Borrowed(&ins.payload),
            metadata: ins.metadata.as_ref().map(
                |(op_type, op_name, source_file, source_line, frame)| Arc::new(Meta {
                    text: "",
                    op_type: Cow::Borrowed(op_type),
                    op_name: Cow::Borrowed(op_name),
                    source_file: Cow::Borrowed(source_file),
                    source_line: *source_line,
                    stack_frame_id: *frame,
                }),
            ),
            is_root: ins.is_root,
            line: ins.line,
        });
    }
    Ok(Comp {
        name: Cow::Borrowed(name),
        insts: records,
        is_entry,
        line,
    })
}

/// The canonical form of `computations` (`Module.computations`), as `parse_hlo` gives a text
/// module's: `(fingerprint, order, forms)`, or `(message, line)` where canonicalization refuses
/// the module. Each computation's instructions are read once, in order, whatever sequence holds
/// them; the forms share the IR's name strings and keep a core handle (a repeated name is refused).
#[pyfunction]
pub fn canonicalize_ir<'py>(
    py: Python<'py>,
    computations: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    // Read: names, instruction sequences and the name objects of each.
    let mut comps_owned: Vec<(String, Vec<Owned>, bool, u32)> = Vec::new();
    let mut python: Vec<(Bound<'py, PyAny>, Vec<Bound<'py, PyString>>)> = Vec::new();
    for comp in computations.try_iter()? {
        let comp = comp?;
        let instructions = comp.getattr("instructions")?;
        let (mut insts, mut names) = (Vec::new(), Vec::new());
        for ins in instructions.try_iter()? {
            let ins = ins?;
            insts.push(owned(&ins)?);
            names.push(ins.get_item(0)?.downcast_into::<PyString>()?);
        }
        comps_owned.push((
            comp.getattr("name")?.extract()?,
            insts,
            comp.getattr("is_entry")?.extract()?,
            line_of(comp.getattr("line")?.extract()?),
        ));
        python.push((instructions, names));
    }
    // Records, canonical form and the handles' parts, without the GIL.
    let made = py.allow_threads(|| {
        let mut comps = Vec::with_capacity(comps_owned.len());
        for (name, insts, is_entry, line) in &comps_owned {
            comps.push(records(name, insts, *is_entry, *line)?);
        }
        let module = ModuleText {
            name: Cow::Borrowed(""),
            header_pos: 0,
            header: Vec::new(),
            comps,
            tables: Vec::new(),
            notes: Vec::new(),
        };
        let canonical = canonicalize(&module).map_err(|Failure::Bad(m, line)| (m, line))?;
        let parts: Vec<Parts> = canonical
            .comps
            .iter()
            .map(|c| handle_parts::parts(c, &module.comps[c.comp]))
            .collect();
        Ok::<_, (String, u32)>((canonical, parts))
    });
    let (canonical, parts) = match made {
        Ok(made) => made,
        Err(refused) => return refused.into_pyobject(py),
    };
    let mut forms = Vec::with_capacity(canonical.comps.len());
    for (c, p) in canonical.comps.iter().zip(parts) {
        let (instructions, names) = &python[c.comp];
        let kept = handle_parts::handle(p, names, instructions)?;
        forms.push(canonical_form(py, c, names, kept)?);
    }
    (canonical.fingerprint, canonical.order, PyList::new(py, forms)?).into_pyobject(py)
}
