//! Two independent pieces of work on two threads, where they are large enough to pay for one:
//! a pair's two graphs are refined alone, each on its own (issue 22: a diff otherwise keeps one
//! core busy while the other waits). Pure functions of their inputs, so the answers are the
//! sequential ones.

/// Nodes past which a graph's work is worth a thread (spawning one costs tens of microseconds;
/// a 20K-node graph's refinement rounds, milliseconds).
pub(crate) const PAST: usize = 20_000;

/// `(f(), g())`; `g` on a second thread when `parallel`.
pub(crate) fn both<A: Send, B: Send>(
    parallel: bool,
    f: impl FnOnce() -> A + Send,
    g: impl FnOnce() -> B + Send,
) -> (A, B) {
    if !parallel {
        return (f(), g());
    }
    std::thread::scope(|s| {
        let other = s.spawn(g);
        let a = f();
        match other.join() {
            Ok(b) => (a, b),
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}
