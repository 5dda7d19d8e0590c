//! The graph colour refinement walks (`RefineGraph`'s, as integer arrays) and one round
//! of it (`_round`), with the count of classes its stopping rule reads; a graph with some outputs
//! dropped is a `View` of it.

/// One graph: per node, its operands (CSR), whether they enter sorted (commutative), its users
/// with the operand index each reads it at (-1: commutative), its output mark and first colour.
pub(crate) struct Graph {
    pub(crate) op_start: Vec<u32>,
    pub(crate) ops: Vec<u32>,
    pub(crate) sorted: Vec<bool>,
    pub(crate) user_start: Vec<u32>,
    pub(crate) users: Vec<u32>,
    pub(crate) user_at: Vec<i32>,
    pub(crate) marks: Vec<u64>,
    /// The mark one output adds (0 where unknown: `refine_history`'s graphs).
    pub(crate) output_mark: u64,
    /// Parameters: nodes that stay inputs when outputs are dropped.
    pub(crate) is_param: Vec<bool>,
}

#[inline]
pub(crate) fn mix(mut x: u64) -> u64 {
    // splitmix64's finalizer: every input bit reaches every output bit.
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

#[inline]
pub(crate) fn combine(h: u64, v: u64) -> u64 {
    mix(h ^ v.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(17))
}

impl Graph {
    pub(crate) fn round(&self, col: &[u64], out: &mut Vec<u64>, scratch: &mut Vec<u64>) {
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

pub(crate) fn distinct(col: &[u64]) -> usize {
    count_distinct(col.iter().copied(), col.len())
}

/// How many distinct values `values` (at most `n` of them) holds: the stopping rule's count of
/// classes, every round. An open-addressing table sized once (a hash map grown from empty
/// rehashed some 17 times a round on 100K nodes); 0 is counted apart, as the empty slot.
pub(crate) fn count_distinct(values: impl Iterator<Item = u64>, n: usize) -> usize {
    let bits = (2 * n.max(8)).next_power_of_two().trailing_zeros();
    let mask = (1usize << bits) - 1;
    let mut table = vec![0u64; mask + 1];
    let (mut count, mut zero) = (0, false);
    for c in values {
        if c == 0 {
            count += usize::from(!zero);
            zero = true;
            continue;
        }
        // Fibonacci hashing: first colours may be small numbers, not hashes.
        let mut i = (c.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - bits)) as usize;
        loop {
            let t = table[i];
            if t == c {
                break;
            }
            if t == 0 {
                table[i] = c;
                count += 1;
                break;
            }
            i = (i + 1) & mask;
        }
    }
    count
}

/// A graph as refinement reads it: borrowed from a built one, or rebuilt without some outputs.
pub(crate) enum View<'g> {
    Whole(&'g Graph),
    Pruned { graph: Graph, live: Vec<bool> },
}

impl Graph {
    /// This graph with one output mark taken off each of `unmark` and the nodes no other output
    /// reaches left out (no user, no operand, colour 0): what the graph is with those outputs
    /// dropped. Parameters stay nodes (a parameter nothing reads is still an input).
    /// With no output dropped it is the whole graph, unless some node reaches no output (a
    /// multiply by one that `identity.py` sees through): those are left out as well.
    pub(crate) fn without_outputs<'g>(&'g self, unmark: &[u32], outputs: &[i64]) -> View<'g> {
        let n = self.marks.len();
        let mut marks = self.marks.clone();
        let mut left: Vec<i64> = outputs.to_vec();
        for &u in unmark {
            marks[u as usize] = marks[u as usize].wrapping_sub(self.output_mark);
            if let Some(k) = left.iter().position(|&o| o == i64::from(u)) {
                left.remove(k);
            }
        }
        // What the remaining outputs reach, through operands.
        let mut live = vec![false; n];
        let mut stack: Vec<u32> = left
            .iter()
            .filter(|&&o| o >= 0)
            .map(|&o| o as u32)
            .collect();
        while let Some(k) = stack.pop() {
            if std::mem::replace(&mut live[k as usize], true) {
                continue;
            }
            let (s, e) = (
                self.op_start[k as usize] as usize,
                self.op_start[k as usize + 1] as usize,
            );
            stack.extend(
                self.ops[s..e]
                    .iter()
                    .copied()
                    .filter(|&o| !live[o as usize]),
            );
        }
        for k in 0..n {
            // A parameter stays an input; an instruction nothing live reads is gone.
            if self.op_start[k] == self.op_start[k + 1] && self.is_param[k] {
                live[k] = true;
            }
        }
        if unmark.is_empty() && live.iter().all(|&l| l) {
            return View::Whole(self);
        }
        let mut op_start = vec![0u32];
        let mut ops = Vec::new();
        for k in 0..n {
            if live[k] {
                let (s, e) = (self.op_start[k] as usize, self.op_start[k + 1] as usize);
                ops.extend(self.ops[s..e].iter().copied().filter(|&o| live[o as usize]));
            }
            op_start.push(ops.len() as u32);
        }
        let mut user_start = vec![0u32];
        let (mut users, mut user_at) = (Vec::new(), Vec::new());
        for k in 0..n {
            let (s, e) = (self.user_start[k] as usize, self.user_start[k + 1] as usize);
            for i in s..e {
                if live[self.users[i] as usize] && live[k] {
                    users.push(self.users[i]);
                    user_at.push(self.user_at[i]);
                }
            }
            user_start.push(users.len() as u32);
        }
        View::Pruned {
            graph: Graph {
                op_start,
                ops,
                sorted: self.sorted.clone(),
                user_start,
                users,
                user_at,
                marks,
                output_mark: self.output_mark,
                is_param: self.is_param.clone(),
            },
            live,
        }
    }
}

impl View<'_> {
    /// The graph refinement walks, and which nodes it keeps (None: all).
    pub(crate) fn parts(&self) -> (&Graph, Option<&[bool]>) {
        match self {
            View::Whole(g) => (g, None),
            View::Pruned { graph, live } => (graph, Some(live)),
        }
    }
    pub(crate) fn round(&self, col: &[u64], out: &mut Vec<u64>, scratch: &mut Vec<u64>) {
        match self {
            View::Whole(g) => g.round(col, out, scratch),
            View::Pruned { graph, .. } => graph.round(col, out, scratch),
        }
    }
    /// Nodes left out get colour 0, so that they neither count as classes nor look alike.
    pub(crate) fn blank(&self, col: &mut [u64]) {
        if let View::Pruned { live, .. } = self {
            for (c, &l) in col.iter_mut().zip(live.iter()) {
                if !l {
                    *c = 0;
                }
            }
        }
    }
}
