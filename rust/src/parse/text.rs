//! The text model of a module as read: instructions, computations and the module's header,
//! plus the small helpers every reader stage shares. It sits below the parser and its checks
//! (checks.rs, shape.rs, literal.rs, and canon/), so that every `use` points one way.

use std::borrow::Cow;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::Arc;

/// FxHash: names are short and trusted to be hashed fast, not to resist collisions.
#[derive(Default)]
pub struct Fx(u64);

impl Hasher for Fx {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let v = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
            self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut v = 0u64;
            for (i, b) in rest.iter().enumerate() {
                v |= (*b as u64) << (8 * i);
            }
            self.0 = (self.0.rotate_left(5) ^ v).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
        }
    }
    #[inline]
    fn finish(&self) -> u64 {
        // Multiplication leaves the low bits (the table index) weak: fold the high bits in.
        let h = self.0;
        (h ^ (h >> 31)).wrapping_mul(0xbf58_476d_1ce4_e5b9) ^ (h >> 29)
    }
}

pub type FxMap<K, V> = HashMap<K, V, BuildHasherDefault<Fx>>;

/// Attributes whose value names computations (the tests' oracle: tests/oracles/hashes_reference.py).
pub const COMPUTATION_ATTRIBUTES: &[&str] = &[
    "to_apply",
    "condition",
    "body",
    "calls",
    "branch_computations",
    "true_computation",
    "false_computation",
    "called_computations",
    "select",
    "scatter",
    "async_execution_thread_computations",
];

#[derive(Debug, Default, Clone)]
pub struct Meta<'a> {
    /// The `{...}` text it was read from where that is a slice of the source ("" otherwise):
    /// the key under which repeated metadata is read and built once.
    pub text: &'a str,
    pub op_type: Cow<'a, str>,
    pub op_name: Cow<'a, str>,
    pub source_file: Cow<'a, str>,
    pub source_line: i64,
    pub stack_frame_id: i64,
}

#[derive(Debug, Clone)]
pub struct Inst<'a> {
    pub name: Cow<'a, str>,
    pub opcode: Cow<'a, str>,
    pub shape: Cow<'a, str>,
    pub operands: Vec<u32>,
    pub attrs: Vec<(&'a str, Cow<'a, str>)>,
    pub called: Vec<Cow<'a, str>>,
    pub payload: Cow<'a, str>,
    /// Shared, not inline: the record is held for every instruction (280 -> 184 bytes), most
    /// have none or repeat another's (read once per distinct text, parser.rs).
    pub metadata: Option<Arc<Meta<'a>>>,
    pub is_root: bool,
    pub line: u32,
}

pub struct Comp<'a> {
    pub name: Cow<'a, str>,
    pub insts: Vec<Inst<'a>>,
    pub is_entry: bool,
    pub line: u32,
}

pub struct ModuleText<'a> {
    pub name: Cow<'a, str>,
    pub header_pos: usize,
    pub header: Vec<(&'a str, Cow<'a, str>)>,
    pub comps: Vec<Comp<'a>>,
    pub tables: Vec<(&'a str, i64, &'a str)>,
    /// Spellings an older XLA printer wrote that today's XLA refuses, read all the same:
    /// `(what, line of the first, how many)` (notes.rs).
    pub notes: Vec<(&'static str, u32, usize)>,
}

impl<'a> ModuleText<'a> {
    /// The same module (name, header, tables, notes) with other computations: what a pass over
    /// the program (inlining, Shardy's one-device results) returns.
    pub fn with_comps(&self, comps: Vec<Comp<'a>>) -> ModuleText<'a> {
        ModuleText {
            name: self.name.clone(),
            header_pos: self.header_pos,
            header: self.header.clone(),
            comps,
            tables: self.tables.clone(),
            notes: self.notes.clone(),
        }
    }
}

pub fn unescape(s: &str) -> Cow<'_, str> {
    if !s.contains('\\') {
        return Cow::Borrowed(s);
    }
    let b = s.as_bytes();
    let mut out: Vec<u8> = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' || i + 1 >= b.len() {
            out.push(b[i]);
            i += 1;
            continue;
        }
        i += 1;
        let e = b[i];
        i += 1;
        match e {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => out.push(b'\r'),
            b'a' => out.push(7),
            b'b' => out.push(8),
            b'f' => out.push(12),
            b'v' => out.push(11),
            b'0'..=b'7' => {
                let mut v = (e - b'0') as u32;
                let mut n = 1;
                while n < 3 && i < b.len() && (b'0'..=b'7').contains(&b[i]) {
                    v = v * 8 + (b[i] - b'0') as u32;
                    i += 1;
                    n += 1;
                }
                out.push(v as u8);
            }
            b'x' => {
                let mut v = 0u32;
                while i < b.len() && b[i].is_ascii_hexdigit() {
                    v = v * 16 + (b[i] as char).to_digit(16).unwrap_or(0);
                    i += 1;
                }
                out.push(v as u8);
            }
            other => out.push(other),
        }
    }
    Cow::Owned(String::from_utf8_lossy(&out).into_owned())
}
