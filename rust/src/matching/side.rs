//! One canonical computation as the matcher reads it (`MatchSide`): indices instead of names,
//! interned opcodes and shapes, the users of each instruction; `from_handle.rs` reads it from a
//! computation's handle.

use std::sync::{Arc, Mutex, OnceLock};

use pyo3::prelude::*;

use crate::canon::indexed::Canon;
use crate::parse::text::FxMap;

/// One id per distinct string, shared by every computation of the process, so that opcodes and
/// shapes of two computations compare as integers.
pub(crate) fn intern(s: &str) -> u32 {
    static TABLE: OnceLock<Mutex<FxMap<String, u32>>> = OnceLock::new();
    let mut t = TABLE
        .get_or_init(|| Mutex::new(FxMap::default()))
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(&id) = t.get(s) {
        return id;
    }
    let id = t.len() as u32;
    t.insert(s.to_owned(), id);
    id
}

/// `bottom_up._rank`: element type and rank, as the Python computes them from the printed shape
/// (the head before the first `[`, and the commas after it plus one).
pub(crate) fn rank_key(shape: &str) -> (u32, u32) {
    match shape.find('[') {
        None => (intern(shape), 1),
        Some(p) => {
            let dims = &shape[p + 1..];
            let commas = dims.bytes().filter(|&c| c == b',').count() as u32;
            (
                intern(&shape[..p]),
                commas + u32::from(!dims.starts_with(']')),
            )
        }
    }
}

/// One canonical computation as the matcher reads it: its names and canonical form (`Canon`,
/// shared with the handle it was made from, if any), and what the matcher adds.
#[pyclass(frozen, module = "xlagraph._core")]
pub struct MatchSide {
    pub(crate) canon: Arc<Canon>,
    pub(crate) opcode: Vec<u32>,
    /// Opcode in `COMMUTATIVE` / in `top_down._LEAVES`.
    pub(crate) commutative: Vec<bool>,
    pub(crate) leaf: Vec<bool>,
    /// The printed shape, the shape without layout (`strip_layout`), its rank key, its dims.
    pub(crate) shape: Vec<u32>,
    pub(crate) stripped: Vec<u32>,
    pub(crate) rank: Vec<(u32, u32)>,
    pub(crate) dims: Vec<u32>,
    pub(crate) dims_table: Vec<Option<Vec<i64>>>,
    pub(crate) has_h: Vec<bool>,
    /// Users of each instruction in `order` (`bottom_up.users_of`), CSR.
    pub(crate) users_start: Vec<u32>,
    pub(crate) users: Vec<u32>,
    /// The `h0` values one instruction of `order` alone has, and its index (`lone_h0`, made
    /// when first asked): once per side, not once per diff the side joins.
    pub(crate) lone_h0: OnceLock<FxMap<i128, u32>>,
    /// torch_xla's token chain of all-reduces (`collective_chain::chain_edges`), which top-down
    /// does not follow: (reader, operand position), sorted.
    pub(crate) chain: Vec<(u32, u32)>,
}

impl std::ops::Deref for MatchSide {
    type Target = Canon;
    fn deref(&self) -> &Canon {
        &self.canon
    }
}

impl MatchSide {
    /// Operand `j` of `i` is a link of the token chain.
    pub(crate) fn chained(&self, i: u32, j: usize) -> bool {
        !self.chain.is_empty() && self.chain.binary_search(&(i, j as u32)).is_ok()
    }

    pub(crate) fn users(&self, i: u32) -> &[u32] {
        let i = i as usize;
        &self.users[self.users_start[i] as usize..self.users_start[i + 1] as usize]
    }

    /// `h0` -> the one instruction of `order` with it, for the `h0` values no other instruction
    /// of `order` has.
    pub(crate) fn lone_h0(&self) -> &FxMap<i128, u32> {
        self.lone_h0.get_or_init(|| {
            let mut seen: FxMap<i128, u32> = FxMap::default();
            seen.reserve(self.order.len());
            for &i in &self.order {
                seen.entry(self.h0[i as usize])
                    .and_modify(|x| *x = u32::MAX)
                    .or_insert(i);
            }
            seen.retain(|_, i| *i != u32::MAX);
            // Kept while the side is: its table sized for the lone values alone.
            seen.shrink_to_fit();
            seen
        })
    }
}
