//! The plain refinement of a pair (`RefineGraph::refine_with` with no salt and no output
//! dropped) answered from what each graph does alone, kept on the graph: a report pairs each
//! graph with several others, and on its large graphs refinement runs out of rounds every time
//! (99K instructions: 84 rounds, 0.25 s a pair, half of the report).
//!
//! Each graph's colours depend on that graph alone (a node's next colour hashes its own colour,
//! its operands' and its users'); only the stopping rule reads both, counting the classes of A
//! and B together. Refinement only splits classes (a node's own colour enters its next one), so
//! a round in which either graph's own partition splits splits the joint partition too: where
//! one graph splits at every one of the rounds allowed, the joint refinement is not stable
//! within them either, and its answer is (the rounds allowed, not stable, the balance of the
//! last colours, those colours), all of which each graph's run alone gives. (Exact as long as no
//! two different colours hash alike, which the stopping rule already relies on.) Otherwise the
//! joint refinement runs as before. Whether a graph splits at every round is found on its
//! classes, re-signing only what changed (`refine_split.rs`); the colours are computed only
//! for a caller that reads them (`refine_with` without `stable_only`).

use std::sync::{Arc, Mutex};

use crate::matching::colour_graph::{distinct, Graph};
use crate::matching::refine_split::split_rounds;
use crate::matching::two_threads;

/// What a graph's refinement alone reads of a `RefineGraph` (refine.rs), and the runs kept on it.
pub(crate) struct OneGraph<'g> {
    pub(crate) graph: &'g Graph,
    pub(crate) loose: &'g [u64],
    pub(crate) strict: &'g [u64],
    pub(crate) outputs: &'g [i64],
    pub(crate) alone: &'g AloneRuns,
    pub(crate) picked: &'g PickedRuns,
}

impl OneGraph<'_> {
    /// The first colours: strict (full shapes and attributes) or loose.
    pub(crate) fn first(&self, strict: bool) -> Vec<u64> {
        if strict {
            self.strict.to_vec()
        } else {
            self.loose.to_vec()
        }
    }
}

/// One graph's plain refinement alone for `rounds` rounds from its strict or loose colours.
pub(crate) struct Alone {
    strict: bool,
    rounds: usize,
    /// Its own partition split at every round.
    pub(crate) splits_all: bool,
}

/// The runs kept on a graph (strict and loose, for the rounds its pairs allowed).
#[derive(Default)]
pub(crate) struct AloneRuns(Mutex<Vec<Arc<Alone>>>);

/// How many runs a graph keeps (a report's pairs are mostly alike in size: one or two budgets).
const KEEP: usize = 4;

impl AloneRuns {
    /// The run kept for these first colours and rounds, if any.
    fn kept(&self, strict: bool, rounds: usize) -> Option<Arc<Alone>> {
        let kept = self.0.lock().unwrap();
        kept.iter()
            .find(|r| r.strict == strict && r.rounds == rounds)
            .cloned()
    }

    fn get(&self, g: &OneGraph<'_>, strict: bool, rounds: usize) -> Arc<Alone> {
        if let Some(found) = self.kept(strict, rounds) {
            return found;
        }
        let made = Arc::new(run(g, strict, rounds));
        let mut kept = self.0.lock().unwrap();
        if kept.len() >= KEEP {
            kept.remove(0);
        }
        kept.push(made.clone());
        made
    }
}

fn run(g: &OneGraph<'_>, strict: bool, rounds: usize) -> Alone {
    let mut colours = g.first(strict);
    let view = g.graph.without_outputs(&[], g.outputs);
    view.blank(&mut colours);
    let (graph, live) = view.parts();
    Alone {
        strict,
        rounds,
        splits_all: split_rounds(graph, live, &colours, rounds).0,
    }
}

impl Alone {
    /// The colours after all `rounds` rounds (run only where an answer returns them).
    fn last(&self, g: &OneGraph<'_>) -> Vec<u64> {
        let mut colours = g.first(self.strict);
        let view = g.graph.without_outputs(&[], g.outputs);
        view.blank(&mut colours);
        let (mut next, mut scratch) = (Vec::new(), Vec::new());
        for _ in 0..self.rounds {
            view.round(&colours, &mut next, &mut scratch);
            view.blank(&mut next);
            std::mem::swap(&mut colours, &mut next);
        }
        colours
    }
}

/// Whether the joint plain refinement of A and B cannot be stable within `rounds` (one graph
/// splits at every round): what a caller that reads an unstable answer only as such needs.
/// Either graph's run answers, so a run kept already is read first, and where neither is kept
/// B's runs: a report compares each graph with the two before it ((k-1, k), then (k-2, k)),
/// and B's run then answers its next pairs as A; running A first ran every graph once, B first
/// runs two graphs of three (99K-instruction graphs: 0.03 CPU-s a run). The same answer.
pub(crate) fn cannot_stabilize(
    a: &OneGraph<'_>,
    b: &OneGraph<'_>,
    strict: bool,
    rounds: usize,
) -> bool {
    let (ka, kb) = (a.alone.kept(strict, rounds), b.alone.kept(strict, rounds));
    let splits = |k: &Option<Arc<Alone>>| k.as_ref().is_some_and(|r| r.splits_all);
    if splits(&ka) || splits(&kb) {
        return true;
    }
    let run = |g: &OneGraph<'_>, k: Option<Arc<Alone>>| match k {
        Some(r) => r.splits_all,
        None => g.alone.get(g, strict, rounds).splits_all,
    };
    run(b, kb) || run(a, ka)
}

/// The last colours of A and B after `rounds` rounds where the joint plain refinement cannot
/// be stable within them (one graph splits at every round); None: run the joint refinement.
pub(crate) fn unstable_colours(
    a: &OneGraph<'_>,
    b: &OneGraph<'_>,
    strict: bool,
    rounds: usize,
) -> Option<(Vec<u64>, Vec<u64>)> {
    let parallel = a.loose.len().min(b.loose.len()) >= two_threads::PAST;
    let (xa, xb) = two_threads::both(
        parallel,
        || a.alone.get(a, strict, rounds),
        || b.alone.get(b, strict, rounds),
    );
    if !(xa.splits_all || xb.splits_all) {
        return None;
    }
    Some(two_threads::both(parallel, || xa.last(a), || xb.last(b)))
}

/// One graph's rounds of `refine_picked` alone: the number of classes after each round (0 to
/// `rounds`) and the colours of the picked nodes.
pub(crate) struct Picked {
    strict: bool,
    rounds: usize,
    pick: Vec<u32>,
    counts: Vec<usize>,
    picks: Vec<Vec<u64>>,
}

/// The `refine_picked` runs kept on a graph.
#[derive(Default)]
pub(crate) struct PickedRuns(Mutex<Vec<Arc<Picked>>>);

impl PickedRuns {
    fn get(&self, g: &OneGraph<'_>, strict: bool, rounds: usize, pick: &[u32]) -> Arc<Picked> {
        if let Some(found) = self
            .0
            .lock()
            .unwrap()
            .iter()
            .find(|r| r.strict == strict && r.rounds == rounds && r.pick == pick)
        {
            return found.clone();
        }
        let made = Arc::new(picked(g, strict, rounds, pick));
        let mut kept = self.0.lock().unwrap();
        if kept.len() >= KEEP {
            kept.remove(0);
        }
        kept.push(made.clone());
        made
    }
}

fn picked(g: &OneGraph<'_>, strict: bool, rounds: usize, pick: &[u32]) -> Picked {
    let take = |col: &[u64]| -> Vec<u64> { pick.iter().map(|&i| col[i as usize]).collect() };
    let mut colours = g.first(strict);
    let (mut counts, mut picks) = (vec![distinct(&colours)], vec![take(&colours)]);
    let (mut next, mut scratch) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        g.graph.round(&colours, &mut next, &mut scratch);
        counts.push(distinct(&next));
        picks.push(take(&next));
        std::mem::swap(&mut colours, &mut next);
    }
    Picked {
        strict,
        rounds,
        pick: pick.to_vec(),
        counts,
        picks,
    }
}

/// Graphs this large have their `refine_picked` rounds kept (a small pair stops after a round
/// or two: running its graphs alone to the cap would cost more than it saves).
const PICKED_ALONE: usize = 10_000;

/// `refine_picked` of A and B from each graph's rounds alone: its stopping rule (neither
/// graph's count of classes changed) reads each graph's own counts, so the answer is exactly
/// the joint run's. None for small pairs (unless `alone` says): run it jointly.
pub(crate) fn picked_history(
    a: &OneGraph<'_>,
    b: &OneGraph<'_>,
    strict: bool,
    rounds: usize,
    pick_a: &[u32],
    pick_b: &[u32],
    alone: Option<bool>,
) -> Option<(Vec<Vec<u64>>, Vec<Vec<u64>>)> {
    if !alone.unwrap_or(a.loose.len().max(b.loose.len()) >= PICKED_ALONE) {
        return None;
    }
    let (xa, xb) = two_threads::both(
        a.loose.len().min(b.loose.len()) >= two_threads::PAST,
        || a.picked.get(a, strict, rounds, pick_a),
        || b.picked.get(b, strict, rounds, pick_b),
    );
    let unchanged = |x: &Picked, i: usize| x.counts[i + 1] == x.counts[i];
    let len = (0..rounds)
        .find(|&i| unchanged(&xa, i) && unchanged(&xb, i))
        .map_or(rounds + 1, |i| i + 1);
    Some((xa.picks[..len].to_vec(), xb.picks[..len].to_vec()))
}
