//! Colour refinement of `xlagraph.match.correspondence`, compiled: `_history` (its rounds of
//! `_round`) on two graphs given as integer arrays. The colours are other numbers than the
//! Python reference's (another hash), but they split the instructions into the same classes
//! round by round, and that is all the caller reads: it groups by colour equality, across both
//! graphs, and stops when neither partition splits further.

use pyo3::prelude::*;

use crate::text::FxMap;

/// One graph: per node, its operands (CSR), whether they enter sorted (commutative), its users
/// with the operand index each reads it at (-1: commutative), its output mark and first colour.
struct Graph {
    op_start: Vec<u32>,
    ops: Vec<u32>,
    sorted: Vec<bool>,
    user_start: Vec<u32>,
    users: Vec<u32>,
    user_at: Vec<i32>,
    marks: Vec<u64>,
}

#[inline]
fn mix(mut x: u64) -> u64 {
    // splitmix64's finalizer: every input bit reaches every output bit.
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

#[inline]
fn combine(h: u64, v: u64) -> u64 {
    mix(h ^ v.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17))
}

impl Graph {
    fn round(&self, col: &[u64], out: &mut Vec<u64>, scratch: &mut Vec<u64>) {
        out.clear();
        for k in 0..col.len() {
            let (s, e) = (self.op_start[k] as usize, self.op_start[k + 1] as usize);
            scratch.clear();
            scratch.extend(self.ops[s..e].iter().map(|&o| col[o as usize]));
            if self.sorted[k] {
                scratch.sort_unstable();
            }
            let mut h = combine(0x5851_F42D_4C95_7F2D, col[k]);
            h = combine(h, (e - s) as u64);
            for &c in scratch.iter() {
                h = combine(h, c);
            }
            // Users: a multiset (a sum of hashes, any order), then the output mark.
            let (us, ue) = (self.user_start[k] as usize, self.user_start[k + 1] as usize);
            let mut uh: u64 = self.marks[k];
            for i in us..ue {
                let pair = combine(
                    mix(col[self.users[i] as usize]),
                    self.user_at[i] as i64 as u64,
                );
                uh = uh.wrapping_add(pair);
            }
            out.push(combine(h, uh));
        }
    }
}

fn distinct(col: &[u64]) -> usize {
    let mut seen: FxMap<u64, ()> = FxMap::default();
    for &c in col {
        seen.insert(c, ());
    }
    seen.len()
}

type GraphArrays = (
    Vec<u32>,
    Vec<u32>,
    Vec<bool>,
    Vec<u32>,
    Vec<u32>,
    Vec<i32>,
    Vec<u64>,
);

fn graph(a: GraphArrays) -> PyResult<Graph> {
    let (op_start, ops, sorted, user_start, users, user_at, marks) = a;
    let n = marks.len();
    let ok = op_start.len() == n + 1
        && user_start.len() == n + 1
        && sorted.len() == n
        && users.len() == user_at.len()
        && op_start.last().map_or(false, |&e| e as usize == ops.len())
        && user_start
            .last()
            .map_or(false, |&e| e as usize == users.len())
        && ops.iter().chain(users.iter()).all(|&o| (o as usize) < n);
    if !ok {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "refine: inconsistent graph arrays",
        ));
    }
    Ok(Graph {
        op_start,
        ops,
        sorted,
        user_start,
        users,
        user_at,
        marks,
    })
}

/// `_history`: the colours of both graphs per round, from `first_a`/`first_b`, until neither
/// partition splits any more or after `rounds` rounds.
#[pyfunction]
pub fn refine_history(
    py: Python<'_>,
    a: GraphArrays,
    b: GraphArrays,
    first_a: Vec<u64>,
    first_b: Vec<u64>,
    rounds: usize,
) -> PyResult<(Vec<Vec<u64>>, Vec<Vec<u64>>)> {
    let (ga, gb) = (graph(a)?, graph(b)?);
    if first_a.len() != ga.marks.len() || first_b.len() != gb.marks.len() {
        return Err(pyo3::exceptions::PyValueError::new_err(
            "refine: colours and graph differ in size",
        ));
    }
    Ok(py.allow_threads(|| {
        let mut ha = vec![first_a];
        let mut hb = vec![first_b];
        let mut counts = (distinct(&ha[0]), distinct(&hb[0]));
        let mut scratch = Vec::new();
        for _ in 0..rounds {
            let (mut na, mut nb) = (Vec::new(), Vec::new());
            ga.round(ha.last().unwrap(), &mut na, &mut scratch);
            gb.round(hb.last().unwrap(), &mut nb, &mut scratch);
            let now = (distinct(&na), distinct(&nb));
            if now == counts {
                break;
            }
            ha.push(na);
            hb.push(nb);
            counts = now;
        }
        (ha, hb)
    }))
}
