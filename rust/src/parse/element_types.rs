//! XLA's element types by name (xla_data.proto `PrimitiveType`, lowercase) and by number (a
//! shape keeps the number): the one list, and the lookup every array of a module asks.

use std::sync::OnceLock;

use crate::parse::text::FxMap;

/// XLA's element types (xla_data.proto `PrimitiveType`, lowercase). `tuple` is spelled `( ... )`.
const ELEMENT_TYPES: &[&str] = &[
    "pred",
    "s1",
    "s2",
    "s4",
    "s8",
    "s16",
    "s32",
    "s64",
    "u1",
    "u2",
    "u4",
    "u8",
    "u16",
    "u32",
    "u64",
    "f16",
    "f32",
    "bf16",
    "f64",
    "c64",
    "c128",
    "f8e5m2",
    "f8e4m3",
    "f8e4m3fn",
    "f8e4m3b11fnuz",
    "f8e5m2fnuz",
    "f8e4m3fnuz",
    "f8e3m4",
    "f8e8m0fnu",
    "f4e2m1fn",
    "token",
    "opaque",
];

/// The index of `name` in ELEMENT_TYPES, computed at compile time (the list stays the one rule).
const fn index_of(name: &str) -> u8 {
    let mut i = 0;
    while i < ELEMENT_TYPES.len() {
        let t = ELEMENT_TYPES[i].as_bytes();
        let n = name.as_bytes();
        if t.len() == n.len() {
            let mut k = 0;
            while k < n.len() && t[k] == n[k] {
                k += 1;
            }
            if k == n.len() {
                return i as u8;
            }
        }
        i += 1;
    }
    panic!("not an element type")
}

pub fn element_type(name: &str) -> Option<u8> {
    // Every array of a module asks: the common types by a match (length and a few byte compares),
    // the rest one hash lookup, not a scan comparing most of the list.
    const F32: u8 = index_of("f32");
    const BF16: u8 = index_of("bf16");
    const S32: u8 = index_of("s32");
    const PRED: u8 = index_of("pred");
    const F16: u8 = index_of("f16");
    const S64: u8 = index_of("s64");
    const U32: u8 = index_of("u32");
    match name {
        "f32" => return Some(F32),
        "bf16" => return Some(BF16),
        "s32" => return Some(S32),
        "pred" => return Some(PRED),
        "f16" => return Some(F16),
        "s64" => return Some(S64),
        "u32" => return Some(U32),
        _ => {}
    }
    static BY_NAME: OnceLock<FxMap<&'static str, u8>> = OnceLock::new();
    BY_NAME
        .get_or_init(|| {
            ELEMENT_TYPES
                .iter()
                .enumerate()
                .map(|(i, t)| (*t, i as u8))
                .collect()
        })
        .get(name)
        .copied()
}

pub fn element_type_name(t: u8) -> &'static str {
    ELEMENT_TYPES[t as usize]
}
