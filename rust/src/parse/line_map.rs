//! Lines of a module read from text another reader wrote (the StableHLO reader's HLO text,
//! parse/stablehlo/): `map[k]` is the line of the user's file that line `k` of the text
//! read was written for, so that instructions, computations and errors name the user's lines.

use crate::parse::text::ModuleText;

/// The user's line for line `line` of the text read (0 and lines past the map: 0, "no line").
pub(crate) fn source_line(map: &[u32], line: usize) -> usize {
    map.get(line).copied().unwrap_or(0) as usize
}

/// Every computation's and instruction's line, as the user's.
pub(crate) fn remap(module: &mut ModuleText<'_>, map: &[u32]) {
    for comp in &mut module.comps {
        comp.line = source_line(map, comp.line as usize) as u32;
        for inst in &mut comp.insts {
            inst.line = source_line(map, inst.line as usize) as u32;
        }
    }
    for note in &mut module.notes {
        note.1 = source_line(map, note.1 as usize) as u32;
    }
}
