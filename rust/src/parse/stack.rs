//! How much stack the reader has taken on the caller's thread. read.rs parses there first (a
//! thread of its own costs a tenth of a large module's read: a fresh stack and a cold allocator),
//! with a budget the caller's thread is trusted with; where the reader recurses (nested
//! instructions, literals, deep tuple shapes) past it, it stops with `spent()` set and read.rs
//! parses again on a thread of its own with a known, ample stack. The StableHLO reader measures
//! its recursion with the same budget (`measure`, `past_budget`; stablehlo/error.rs).

use std::cell::Cell;

use crate::parse::scan::{err, Result};

thread_local! {
    static BASE: Cell<usize> = const { Cell::new(0) };
    static SPENT: Cell<bool> = const { Cell::new(false) };
}

/// Stack the reader may take on the caller's thread, whose size it does not know.
const BUDGET: usize = 128 << 10;

/// Tuple shapes nesting deeper than this are read on the reader's own thread: formatting and
/// dropping a shape recurse over its nesting, unmeasured.
pub(crate) const CALLER_SHAPE_DEPTH: usize = 32;

fn address() -> usize {
    let here = 0u8;
    std::hint::black_box(&here) as *const u8 as usize
}

/// Measure from here on this thread (`on`), or stop measuring.
pub(crate) fn measure(on: bool) {
    BASE.with(|b| b.set(if on { address() } else { 0 }));
    SPENT.with(|s| s.set(false));
}

/// Whether the reader runs measured (on the caller's thread).
pub(crate) fn measured() -> bool {
    BASE.with(|b| b.get()) != 0
}

/// Stop reading here (an error at `pos` that read.rs never reports) and say so.
pub(crate) fn give_up<T>(pos: usize) -> Result<T> {
    SPENT.with(|s| s.set(true));
    err(pos, "stack budget of the caller's thread spent")
}

/// Whether the stack taken since `measure(true)` on this thread is past the budget (never when
/// unmeasured). The HLO reader and the StableHLO reader both ask it where they recurse.
pub(crate) fn past_budget() -> bool {
    let base = BASE.with(|b| b.get());
    base != 0 && base.saturating_sub(address()) > BUDGET
}

/// Called where the reader recurses: give up past the budget, on the caller's thread.
pub(crate) fn guard(pos: usize) -> Result<()> {
    if past_budget() {
        return give_up(pos);
    }
    Ok(())
}

/// Whether the last measured read gave up for want of stack.
pub(crate) fn spent() -> bool {
    SPENT.with(|s| s.get())
}
