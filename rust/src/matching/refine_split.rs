//! Whether a graph's own colour refinement splits its partition at every round, computed on the
//! classes instead of the colours: each round re-signs only the nodes next to a class that
//! split the round before, so a round costs what changed, not the whole graph.
//!
//! `refine_alone.rs` asks this to know that a pair's joint refinement cannot be stable within
//! its budget. On a deep model (243 alike transformer blocks, 120K instructions) the partition
//! keeps splitting for hundreds of rounds as the distance from the graph's ends reaches further
//! in, a few nodes a round; running every round over every node (66 rounds allowed at 120K,
//! 84 on a report's 99K graphs) cost 0.2 s a graph and strictness, only to learn "not stable".
//!
//! The partition after each round is exactly that of `Graph::round` on colours (as long as no
//! two colours hash alike, which both rely on): a node's signature is built as `round` builds its
//! colour (its own class, its operands in order or sorted, its users with the operand index
//! each reads it at as a multiset, its output mark), over class ids instead of colours; class
//! ids and colours name the same classes, and a multiset's equality does not depend on which
//! order sorts it. A node whose own class and whose neighbours' classes kept their ids has the
//! signature it had a round before, which all of its class shared (that is what made it a
//! class): such nodes stay together and need no signature. A class splits where the nodes
//! re-signed disagree among themselves or with those that were not (a re-signed node reads a
//! class id that is new this round, which no earlier signature held, so it never equals the
//! unchanged ones). Where a class splits, the nodes not re-signed keep its id (they are not
//! listed); where all were re-signed, the largest part keeps it. Only nodes given a new id
//! make their neighbours re-signed the next round. A class of one node cannot split: its node
//! is never re-signed. The nodes re-signed are grouped by class in one counting pass and each
//! group sorted by signature alone (a sort of every re-signed node by class and signature was a
//! third of the time); which part keeps a class's id names classes only, and the partitions,
//! all that is read, do not depend on it.

use crate::matching::colour_graph::{combine, mix, Graph};

/// Signature seed, as `Graph::round`'s.
const SEED: u64 = 0x5851_F42D_4C95_7F2D;

/// For `rounds` rounds of refinement of `g` from `first` (nodes not `live` are left out: never
/// re-signed, and read by no live node): whether the partition split at every round, and how many
/// rounds split before the first that did not (`rounds` where all did).
pub(crate) fn split_rounds(
    g: &Graph,
    live: Option<&[bool]>,
    first: &[u64],
    rounds: usize,
) -> (bool, usize) {
    let n = first.len();
    let is_live = |k: usize| live.map_or(true, |l| l[k]);
    // Class ids from the first colours.
    let mut ids: crate::parse::text::FxMap<u64, u32> = Default::default();
    let mut cls: Vec<u32> = Vec::with_capacity(n);
    let mut size: Vec<u32> = Vec::new();
    for &c in first {
        let next = ids.len() as u32;
        let id = *ids.entry(c).or_insert(next);
        if id as usize == size.len() {
            size.push(0);
        }
        size[id as usize] += 1;
        cls.push(id);
    }
    drop(ids);
    // A class of one node cannot split: its node is never re-signed (nor given a new id).
    // Round 1 re-signs every live node (of a class of two or more).
    let mut dirty: Vec<u32> = (0..n as u32)
        .filter(|&k| is_live(k as usize) && size[cls[k as usize] as usize] > 1)
        .collect();
    let mut seen = vec![u32::MAX; n]; // the round a node was last listed as dirty
    let mut signed: Vec<(u64, u32)> = Vec::new(); // (signature, node), grouped by class
    let mut at: Vec<u32> = Vec::new(); // per class id: its group's fill position
    let mut touched: Vec<u32> = Vec::new(); // the classes of this round's dirty nodes
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut changed: Vec<u32> = Vec::new();
    let mut scratch: Vec<u32> = Vec::new();
    for done in 0..rounds {
        if done > 0 {
            dirty.clear();
            for &k in &changed {
                let k = k as usize;
                let (s, e) = (g.op_start[k] as usize, g.op_start[k + 1] as usize);
                let (us, ue) = (g.user_start[k] as usize, g.user_start[k + 1] as usize);
                let near = std::iter::once(k as u32)
                    .chain(g.ops[s..e].iter().copied())
                    .chain(g.users[us..ue].iter().copied());
                for m in near {
                    if seen[m as usize] != done as u32
                        && is_live(m as usize)
                        && size[cls[m as usize] as usize] > 1
                    {
                        seen[m as usize] = done as u32;
                        dirty.push(m);
                    }
                }
            }
        }
        // The dirty nodes grouped by class (a counting sort: `at[c]` is where class c's group
        // ends once filled), then each group sorted by signature alone.
        at.resize(size.len(), 0);
        touched.clear();
        for &k in &dirty {
            let c = cls[k as usize] as usize;
            if at[c] == 0 {
                touched.push(c as u32);
            }
            at[c] += 1;
        }
        let mut fill = 0;
        for &c in &touched {
            let listed = at[c as usize];
            at[c as usize] = fill;
            fill += listed;
        }
        signed.clear();
        signed.resize(dirty.len(), (0, 0));
        for &k in &dirty {
            let k = k as usize;
            let (s, e) = (g.op_start[k] as usize, g.op_start[k + 1] as usize);
            scratch.clear();
            scratch.extend(g.ops[s..e].iter().map(|&o| cls[o as usize]));
            if g.sorted[k] {
                scratch.sort_unstable();
            }
            let mut h = combine(SEED, u64::from(cls[k]));
            h = combine(h, (e - s) as u64);
            for &c in &scratch {
                h = combine(h, u64::from(c));
            }
            let (us, ue) = (g.user_start[k] as usize, g.user_start[k + 1] as usize);
            let mut uh: u64 = g.marks[k];
            for i in us..ue {
                let pair = combine(
                    mix(u64::from(cls[g.users[i] as usize])),
                    g.user_at[i] as i64 as u64,
                );
                uh = uh.wrapping_add(pair);
            }
            let slot = &mut at[cls[k] as usize];
            signed[*slot as usize] = (combine(h, uh), k as u32);
            *slot += 1;
        }
        changed.clear();
        let mut split = false;
        let mut i = 0;
        for &c in &touched {
            let end = at[c as usize] as usize;
            at[c as usize] = 0;
            let group = &mut signed[i..end];
            group.sort_unstable_by_key(|x| x.0);
            let unlisted = size[c as usize] as usize - group.len();
            // Runs of equal signature within the class.
            runs.clear();
            let mut j = 0;
            while j < group.len() {
                let r = j + group[j..].iter().take_while(|x| x.0 == group[j].0).count();
                runs.push((j, r));
                j = r;
            }
            if runs.len() + usize::from(unlisted > 0) > 1 {
                split = true;
                // The unlisted nodes keep the id; else the largest run (the first of equals).
                let keep = if unlisted > 0 {
                    usize::MAX
                } else {
                    let mut best = 0;
                    for (r, &(a, b)) in runs.iter().enumerate() {
                        if b - a > runs[best].1 - runs[best].0 {
                            best = r;
                        }
                    }
                    best
                };
                for (r, &(a, b)) in runs.iter().enumerate() {
                    if r == keep {
                        continue;
                    }
                    let id = size.len() as u32;
                    size.push((b - a) as u32);
                    size[c as usize] -= (b - a) as u32;
                    for x in &group[a..b] {
                        cls[x.1 as usize] = id;
                        changed.push(x.1);
                    }
                }
            }
            i = end;
        }
        if !split {
            return (false, done);
        }
    }
    (true, rounds)
}
