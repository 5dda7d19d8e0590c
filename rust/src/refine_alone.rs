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
//! joint refinement runs as before.

use std::sync::{Arc, Mutex};

use crate::refine::{distinct, RefineGraph};

/// One graph's plain refinement alone for `rounds` rounds from its strict or loose colours.
pub(crate) struct Alone {
    strict: bool,
    rounds: usize,
    /// Its own partition split at every round.
    pub(crate) splits_all: bool,
    /// The colours after `done` rounds (`rounds` where `splits_all`; where not, the round
    /// at which it stopped splitting: the rest is run only if asked for).
    colours: Vec<u64>,
    done: usize,
}

/// The runs kept on a graph (strict and loose, for the rounds its pairs allowed).
#[derive(Default)]
pub(crate) struct AloneRuns(Mutex<Vec<Arc<Alone>>>);

/// How many runs a graph keeps (a report's pairs are mostly alike in size: one or two budgets).
const KEEP: usize = 4;

impl AloneRuns {
    fn get(&self, g: &RefineGraph, strict: bool, rounds: usize) -> Arc<Alone> {
        if let Some(found) = self
            .0
            .lock()
            .unwrap()
            .iter()
            .find(|r| r.strict == strict && r.rounds == rounds)
        {
            return found.clone();
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

fn run(g: &RefineGraph, strict: bool, rounds: usize) -> Alone {
    let mut colours = g.first(strict);
    let view = g.graph.without_outputs(&[], &g.outputs);
    view.blank(&mut colours);
    let mut count = distinct(&colours);
    let (mut next, mut scratch) = (Vec::new(), Vec::new());
    for done in 0..rounds {
        view.round(&colours, &mut next, &mut scratch);
        view.blank(&mut next);
        let now = distinct(&next);
        if now == count {
            // Stable alone: no shortcut from this graph; its colours are run on only if the
            // other graph's shortcut needs them.
            return Alone {
                strict,
                rounds,
                splits_all: false,
                colours,
                done,
            };
        }
        std::mem::swap(&mut colours, &mut next);
        count = now;
    }
    Alone {
        strict,
        rounds,
        splits_all: true,
        colours,
        done: rounds,
    }
}

impl Alone {
    /// The colours after all `rounds` rounds.
    fn last(&self, g: &RefineGraph) -> Vec<u64> {
        let mut colours = self.colours.clone();
        if self.done < self.rounds {
            let view = g.graph.without_outputs(&[], &g.outputs);
            let (mut next, mut scratch) = (Vec::new(), Vec::new());
            for _ in self.done..self.rounds {
                view.round(&colours, &mut next, &mut scratch);
                view.blank(&mut next);
                std::mem::swap(&mut colours, &mut next);
            }
        }
        colours
    }
}

/// The last colours of A and B after `rounds` rounds where the joint plain refinement cannot
/// be stable within them (one graph splits at every round); None: run the joint refinement.
pub(crate) fn unstable_colours(
    a: &RefineGraph,
    b: &RefineGraph,
    strict: bool,
    rounds: usize,
) -> Option<(Vec<u64>, Vec<u64>)> {
    let xa = a.alone.get(a, strict, rounds);
    let xb = b.alone.get(b, strict, rounds);
    if !(xa.splits_all || xb.splits_all) {
        return None;
    }
    Some((xa.last(a), xb.last(b)))
}
