//! StableHLO text (MLIR's printed form) split into its structure: the module, its functions, and
//! each function's operations with their regions, each operation as one flat line of text (its
//! regions taken out) and the line it starts on. What an operation's text means is ops.rs's job.
//!
//! The MLIR printer writes one operation per line and a region's body on lines of its own, closed
//! by a line that starts with `}` (mlir/lib/IR/AsmPrinter.cpp); this reader relies on that
//! layout, which every printer of StableHLO text keeps. Text that breaks it is refused, naming the
//! line.

use std::collections::HashMap;

use crate::parse::stablehlo::error::{at, index_error, stack_guard, Error, R, MAX_NESTING};
use crate::parse::stablehlo::lines::Lines;
use crate::parse::stablehlo::strip_loc::strip_loc;
use crate::parse::stablehlo::structure_lines::{
    block_line, complete_loc, func_line, loc_alias, mesh_line, module_line, other_alias, results,
};
use crate::parse::stablehlo::text::{depth, head, is_space, partition, split_top, string_end, strip};

/// A region's body: its block's arguments `(name, type)`, its operations, and the text before
/// its `{` (`cond`, `do`, `reducer(...)`).
pub(crate) struct Region {
    pub label: String,
    pub args: Vec<(String, String)>,
    pub ops: Vec<Op>,
    pub line: usize,
}

/// One operation: its results (`(name, count)`), its name as written, its text after the name
/// with regions removed and the trailing `loc(...)` apart, and its regions in order.
pub(crate) struct Op {
    pub results: Vec<(String, usize)>,
    pub name: String,
    pub text: String,
    pub loc: String,
    pub regions: Vec<Region>,
    pub line: usize,
}

pub(crate) struct Func {
    pub name: String,
    pub visibility: String,
    pub signature: String,
    pub body: Option<Region>,
    pub line: usize,
}

pub(crate) struct MlirModule {
    pub name: String,
    pub attributes: String,
    pub funcs: Vec<Func>,
    pub locs: HashMap<String, String>,
    pub line: usize,
    pub meshes: Vec<(String, String, usize)>,
}

/// The module's functions, operations and location aliases.
pub(crate) fn read_structure(text: &str) -> R<MlirModule> {
    let mut src = Lines::new(text.trim_start_matches('\u{feff}'));
    let mut module: Option<MlirModule> = None;
    let mut locs = HashMap::new();
    while let Some((s, line)) = src.next_meaningful() {
        if let Some((k, v)) = loc_alias(&s) {
            if !complete_loc(v) {
                return at(format!("location alias {k} cut short or malformed: {}", head(&s, 60)), line);
            }
            locs.insert(k.to_string(), v.to_string());
            continue;
        }
        if other_alias(&s) {
            continue;
        }
        if module.is_some() {
            return at(format!("text after the module's closing `}}`: {}", head(&s, 60)), line);
        }
        let (code, _) = strip_loc(&s);
        match module_line(code) {
            None => {
                if s.starts_with("func.func") {
                    src.i -= 1;
                    let mut m = new_module(String::new(), String::new(), line);
                    read_module_body(&mut src, &mut m, true)?;
                    module = Some(m);
                    continue;
                }
                refuse_generic(&s, line)?;
                return at(format!("expected `module` or `func.func`, found: {}", head(&s, 60)), line);
            }
            Some((name, attributes)) => {
                let mut m = new_module(name, attributes, line);
                read_module_body(&mut src, &mut m, false)?;
                module = Some(m);
            }
        }
    }
    let Some(mut module) = module else { return at("no `module` in the text", 1) };
    if let Some((name, line)) = undefined_location(text.trim_start_matches('\u{feff}'), &locs) {
        return at(format!("location {name} is not defined (the location table cut short?)"), line);
    }
    module.locs = locs;
    Ok(module)
}

/// The first `#locN` an operation or an alias refers to that the table does not define, and its
/// line: MLIR refuses such a file, and one cut at a line of its location table reads whole.
fn undefined_location(text: &str, locs: &HashMap<String, String>) -> Option<(String, usize)> {
    if !text.contains("#loc") {
        return None;
    }
    for (k, line) in text.split('\n').enumerate() {
        let b = line.as_bytes();
        for (at, _) in line.match_indices("#loc") {
            // After `(`, `[`, `,` or ASCII whitespace, digits, no word character (the oracle's regex).
            let Some(&before) = at.checked_sub(1).and_then(|i| b.get(i)) else { continue };
            if !b"([, \t\r\x0b\x0c".contains(&before) {
                continue;
            }
            let mut end = at + 4;
            while end < b.len() && b[end].is_ascii_digit() {
                end += 1;
            }
            if end < b.len() && (b[end].is_ascii_alphanumeric() || b[end] == b'_') {
                continue;
            }
            let name = &line[at..end];
            if !locs.contains_key(name) {
                return Some((name.to_string(), k + 1));
            }
        }
    }
    None
}

fn new_module(name: String, attributes: String, line: usize) -> MlirModule {
    MlirModule { name, attributes, funcs: Vec::new(), locs: HashMap::new(), line, meshes: Vec::new() }
}

/// A structural operation in MLIR's generic form (`"builtin.module"() <{...}> ({`, `"func.func"()
/// ...`): refused by name, the reader taking the custom form every printer writes by default.
fn refuse_generic(s: &str, line: usize) -> R<()> {
    let Some(r) = s.strip_prefix('"') else { return Ok(()) };
    let Some(q) = r.find('"') else { return Ok(()) };
    let name = &r[..q];
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$';
    let (dialect, _, op) = partition(name, ".");
    let ok = dialect.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && dialect.chars().all(word)
        && !op.is_empty()
        && name.len() > dialect.len()
        && op.chars().all(|c| word(c) || c == '.');
    if ok && r[q + 1..].trim_start_matches([' ', '\t']).starts_with('(') {
        return at(
            format!(
                "{name} in MLIR's generic form (\"{name}\"(...)) is not read: print the module in its custom form \
                 (not --mlir-print-op-generic or print_generic_op_form=True)"
            ),
            line,
        );
    }
    Ok(())
}

fn read_module_body(src: &mut Lines, module: &mut MlirModule, implicit: bool) -> R<()> {
    loop {
        let Some((s, line)) = src.next_meaningful() else {
            if implicit {
                return Ok(());
            }
            return at("the text ends inside the module (truncated?): no closing `}`", src.len());
        };
        if s.starts_with('}') && !implicit {
            return Ok(());
        }
        if let Some((name, text)) = mesh_line(strip_loc(&s).0) {
            module.meshes.push((name, text, line));
            continue;
        }
        let Some((visibility, raw_name, end)) = func_line(&s) else {
            if implicit && loc_alias(&s).is_some() {
                src.i -= 1;
                return Ok(());
            }
            refuse_generic(&s, line)?;
            let first = s.split('(').next().unwrap_or("");
            let Some(word) = first.split(is_space).find(|w| !w.is_empty()) else {
                return index_error();
            };
            return at(format!("`{word}` at module level is not read (only func.func and sdy.mesh)"), line);
        };
        let (code, _) = strip_loc(&s);
        let name = raw_name.trim_matches('"').to_string();
        if !code.ends_with('{') {
            return at(format!("function @{raw_name} has no body on its line"), line);
        }
        if let Some(f) = module.funcs.iter().find(|f| f.name == name) {
            return at(format!("function @{name} is defined twice (first on line {})", f.line), line);
        }
        let mut body = Region { label: String::new(), args: Vec::new(), ops: Vec::new(), line };
        read_region(src, &mut body, 0)?;
        let signature = strip(code.get(end - 1..code.len() - 1).unwrap_or("")).to_string();
        module.funcs.push(Func {
            name,
            visibility: if visibility.is_empty() { "public".into() } else { visibility },
            signature,
            body: Some(body),
            line,
        });
    }
}

/// Operations up to the line that closes the region (which is left consumed).
fn read_region(src: &mut Lines, region: &mut Region, nesting: usize) -> R<()> {
    if nesting > MAX_NESTING {
        return Err(Error::Deep);
    }
    stack_guard()?;
    let mut first = true;
    loop {
        let Some((s, line)) = src.next_meaningful() else {
            return at("the text ends inside a region (truncated?): no closing `}`", src.len());
        };
        if s.starts_with('}') {
            return Ok(());
        }
        if first {
            if let Some(args) = block_line(&s) {
                region.args = block_args(args, line)?;
                first = false;
                continue;
            }
        }
        if s.starts_with('^') {
            return at("a region of several blocks is not read (no StableHLO op has one)", line);
        }
        first = false;
        let op = read_op(src, &s, line, nesting)?;
        region.ops.push(op);
    }
}

fn block_args(text: &str, line: usize) -> R<Vec<(String, String)>> {
    let mut out = Vec::new();
    for part in split_top(text, ",") {
        let (part, _) = strip_loc(part);
        let (name, sep, type_) = partition(part, ":");
        if !sep || !strip(name).starts_with('%') {
            return at(format!("malformed block argument: {}", head(part, 60)), line);
        }
        out.push((strip(name).to_string(), strip(type_).to_string()));
    }
    Ok(out)
}

fn read_op(src: &mut Lines, s: &str, line: usize, nesting: usize) -> R<Op> {
    let mut results_ = Vec::new();
    let mut s = s;
    if let Some((r, end)) = results(s) {
        results_ = r;
        s = &s[end..];
    }
    let (name, rest) = if s.starts_with('"') {
        let end = string_end(s, 0);
        (s.get(1..end.saturating_sub(1).max(1)).unwrap_or("").to_string(), &s[end..])
    } else {
        let k = s.find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '.' || c == '$')).unwrap_or(s.len());
        (s[..k].to_string(), &s[k..])
    };
    if name.is_empty() {
        let more = if s.is_empty() || s.starts_with([':', '(', '{']) {
            " (the rest of an operation written over several lines?)"
        } else {
            ""
        };
        return at(format!("expected an operation, found: {}{more}", head(s, 60)), line);
    }
    let mut joined = rest.to_string();
    let mut last_start = 0usize; // where pieces[-1] starts in `joined`
    let mut regions = Vec::new();
    let mut d;
    loop {
        d = depth(&joined);
        let opens = d > 0 && strip_loc(&joined[last_start..]).0.ends_with('{');
        if opens {
            let last = joined[last_start..].to_string();
            let (code, _) = strip_loc(&last);
            let label = strip(&code[..code.len() - 1]).to_string();
            let kept = if label.starts_with("reducer(") { "" } else { &code[..code.len() - 1] };
            let replaced = format!("{kept}{{}}");
            joined.truncate(last_start);
            joined.push_str(&replaced);
            let mut region = Region { label, args: Vec::new(), ops: Vec::new(), line: src.i };
            read_region(src, &mut region, nesting + 1)?;
            regions.push(region);
            let closing = strip(src.line(src.i - 1)).to_string();
            last_start = joined.len();
            joined.push_str(closing.get(1..).unwrap_or(""));
            continue;
        }
        if d == 0 {
            let next = src.peek();
            if next.starts_with("cond {") || next.starts_with("reducer(") {
                let (got, _) = src.next_meaningful().expect("peeked");
                last_start = joined.len();
                joined.push(' ');
                joined.push_str(&got);
                continue;
            }
        }
        break;
    }
    if d != 0 {
        return at(
            format!(
                "`{name}` is not closed on its line: an operation over several lines (no MLIR printer \
                 writes one so), or text cut short"
            ),
            line,
        );
    }
    let (text, loc) = strip_loc(&joined);
    Ok(Op { results: results_, name, text: strip(text).to_string(), loc: loc.to_string(), regions, line })
}
