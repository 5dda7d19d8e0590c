//! Checks XLA makes once a computation or the module is read: parameter numbering, the header's
//! `input_output_alias` and `buffer_donor`; and the small value grammars (metadata, name lists).

use std::borrow::Cow;

use crate::parse::scan::{err, is_ident_char, is_ident_start, Cursor, Error, Result};
use crate::parse::shape::Shape;
use crate::parse::text::{FxMap, Meta, ModuleText};

/// Parameter numbers of a computation are distinct and run 0..N-1. Returns the offending index.
pub fn check_parameters(comp: &str, numbers: &[i64]) -> std::result::Result<(), (usize, String)> {
    let count = numbers.iter().filter(|n| **n >= 0).count();
    let mut seen = vec![false; count];
    for (i, &n) in numbers.iter().enumerate() {
        if n < 0 {
            continue;
        }
        if n as usize >= count {
            return Err((
                i,
                format!(
                    "parameter number {n} of computation {comp} is out of range: it has {count}"
                ),
            ));
        }
        if seen[n as usize] {
            return Err((
                i,
                format!("parameter number {n} already allocated in computation {comp}"),
            ));
        }
        seen[n as usize] = true;
    }
    Ok(())
}

/// Computation or instruction names in `%a` / `{%a, %b}` values.
pub fn names_in(value: &str) -> Vec<Cow<'_, str>> {
    let b = value.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if is_ident_start(b[i]) {
            let s = i;
            while i < b.len() && is_ident_char(b[i]) {
                i += 1;
            }
            out.push(Cow::Borrowed(&value[s..i]));
        } else {
            i += 1;
        }
    }
    out
}

fn meta_fields(s: &str) -> Result<Meta<'_>> {
    let mut m = Meta::default();
    let b = s.as_bytes();
    let mut i = 0;
    let inner_end = if s.ends_with('}') {
        b.len() - 1
    } else {
        b.len()
    };
    if i < b.len() && b[0] == b'{' {
        i = 1;
    }
    while i < inner_end {
        while i < inner_end && (b[i].is_ascii_whitespace() || b[i] == b',') {
            i += 1;
        }
        if i >= inner_end {
            break;
        }
        let k0 = i;
        while i < inner_end && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
            i += 1;
        }
        let key = &s[k0..i];
        if key.is_empty() || i >= inner_end || b[i] != b'=' {
            return err(
                0,
                format!(
                    "malformed metadata near {:?}",
                    s[k0..inner_end].chars().take(30).collect::<String>()
                ),
            );
        }
        i += 1;
        let v0 = i;
        let value: &str;
        let quoted = i < inner_end && b[i] == b'"';
        if quoted {
            i += 1;
            while i < inner_end && b[i] != b'"' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            if i >= inner_end {
                return err(0, "unterminated string in metadata");
            }
            value = &s[v0 + 1..i];
            i += 1;
        } else {
            while i < inner_end && !b[i].is_ascii_whitespace() && b[i] != b',' {
                i += 1;
            }
            value = &s[v0..i];
        }
        match key {
            "op_type" => m.op_type = unescape_cow(value),
            "op_name" => m.op_name = unescape_cow(value),
            "source_file" => m.source_file = unescape_cow(value),
            "source_line" => m.source_line = value.parse().unwrap_or(0),
            "stack_frame_id" => {
                m.stack_frame_id = value.parse::<i64>().ok().filter(|n| *n >= 0).unwrap_or(0)
            }
            _ => {}
        }
    }
    Ok(m)
}

fn unescape_cow(s: &str) -> Cow<'_, str> {
    crate::parse::text::unescape(s)
}

/// Parse `metadata={...}`; borrows from the source text when the value is a plain slice of it.
pub fn metadata<'a>(value: &Cow<'a, str>, pos: usize) -> Result<Meta<'a>> {
    let fix = |e: Error| Error {
        message: e.message,
        pos,
    };
    match value {
        Cow::Borrowed(s) => Ok(Meta { text: s, ..meta_fields(s).map_err(fix)? }),
        Cow::Owned(s) => {
            let m = meta_fields(s).map_err(fix)?;
            Ok(Meta {
                text: "",
                op_type: Cow::Owned(m.op_type.into_owned()),
                op_name: Cow::Owned(m.op_name.into_owned()),
                source_file: Cow::Owned(m.source_file.into_owned()),
                source_line: m.source_line,
                stack_frame_id: m.stack_frame_id,
            })
        }
    }
}

fn int(c: &mut Cursor) -> Result<i64> {
    c.ws()?;
    let n0 = c.pos;
    if c.peek() == b'-' {
        c.pos += 1;
    }
    while c.peek().is_ascii_digit() {
        c.pos += 1;
    }
    c.text[n0..c.pos]
        .parse()
        .or_else(|_| err(n0, format!("expected an integer, got {}", c.snippet(n0))))
}

fn shape_index(c: &mut Cursor) -> Result<Vec<i64>> {
    c.expect(b'{', "'{' opening a shape index")?;
    let mut out = Vec::new();
    if c.eat(b'}')? {
        return Ok(out);
    }
    loop {
        out.push(int(c)?);
        if c.eat(b',')? {
            continue;
        }
        c.expect(b'}', "'}' closing a shape index")?;
        return Ok(out);
    }
}

fn aliasing(value: &str, result: Option<&Shape>) -> Result<()> {
    let mut c = Cursor::new(value);
    c.expect(b'{', "'{' opening input_output_alias")?;
    if c.eat(b'}')? {
        return Ok(());
    }
    let mut outputs: Vec<Vec<i64>> = Vec::new();
    loop {
        c.ws()?;
        let out_pos = c.pos;
        let output = shape_index(&mut c)?;
        c.expect(b':', "':' after an output index")?;
        c.expect(b'(', "'(' opening an alias")?;
        let param = int(&mut c)?;
        c.expect(b',', "',' after the parameter number")?;
        shape_index(&mut c)?;
        if c.eat(b',')? {
            c.ws()?;
            let k0 = c.pos;
            let kind = c.ident();
            if kind != "may-alias" && kind != "must-alias" {
                return err(k0, format!("unknown alias kind {kind}"));
            }
        }
        c.expect(b')', "')' closing an alias")?;
        if param < 0 {
            return err(out_pos, format!("parameter number {param} must be >= 0"));
        }
        if let Some(shape) = result {
            if !shape.index_is_valid(&output) {
                return err(
                    out_pos,
                    format!(
                        "output index {output:?} is invalid for the result shape {}",
                        shape.human()
                    ),
                );
            }
        }
        if outputs.contains(&output) {
            return err(
                out_pos,
                format!("output index {output:?} is already aliased"),
            );
        }
        outputs.push(output);
        if c.eat(b',')? {
            continue;
        }
        c.expect(b'}', "'}' closing input_output_alias")?;
        break;
    }
    c.ws()?;
    if !c.at_end() {
        return err(c.pos, "unexpected text after input_output_alias");
    }
    Ok(())
}

fn donors(value: &str) -> Result<()> {
    let mut c = Cursor::new(value);
    c.expect(b'{', "'{' opening buffer_donor")?;
    if c.eat(b'}')? {
        return Ok(());
    }
    let mut seen: Vec<(i64, Vec<i64>)> = Vec::new();
    loop {
        c.ws()?;
        let p0 = c.pos;
        c.expect(b'(', "'(' opening a buffer donor")?;
        let param = int(&mut c)?;
        c.expect(b',', "',' after the parameter number")?;
        let index = shape_index(&mut c)?;
        c.expect(b')', "')' closing a buffer donor")?;
        if param < 0 {
            return err(p0, format!("parameter number {param} must be >= 0"));
        }
        let entry = (param, index);
        if seen.contains(&entry) {
            return err(p0, "buffer donor listed twice");
        }
        seen.push(entry);
        if c.eat(b',')? {
            continue;
        }
        c.expect(b'}', "'}' closing buffer_donor")?;
        break;
    }
    c.ws()?;
    if !c.at_end() {
        return err(c.pos, "unexpected text after buffer_donor");
    }
    Ok(())
}

/// The header's aliasing attributes against the entry computation's result shape.
pub fn check_header(module: &ModuleText, shapes: &FxMap<Cow<str>, Option<Shape>>) -> Result<()> {
    let entry = module
        .comps
        .iter()
        .find(|c| c.is_entry)
        .or(module.comps.last());
    let result = entry
        .and_then(|c| shapes.get(c.name.as_ref()))
        .and_then(|s| s.as_ref());
    for (key, value) in &module.header {
        let checked = match *key {
            "input_output_alias" => aliasing(value, result),
            "buffer_donor" => donors(value),
            _ => Ok(()),
        };
        if let Err(e) = checked {
            return err(module.header_pos, format!("malformed {key}: {}", e.message));
        }
    }
    Ok(())
}
