//! The reader's errors, as the Python oracle (tests/stablehlo_reference) raises them: a message
//! naming a line (`StructureError`, `TranslateError`), a type or constant not read (`TypeError_`),
//! a Shardy attribute not converted (`MeshError`), Python's own `ValueError`/`IndexError`/
//! `KeyError` of text no printer writes (their class and message, as Python words them), and
//! nesting past what is read (`RecursionError`).

pub(crate) enum Error {
    At(String, usize),
    Type(String),
    Mesh(String),
    Py(&'static str, String),
    Deep,
    /// more stack than the caller's thread is trusted with: read.rs reads again on a thread of
    /// its own (never seen outside read.rs)
    Stack,
}

pub(crate) type R<T> = Result<T, Error>;

pub(crate) fn at<T>(message: impl Into<String>, line: usize) -> R<T> {
    Err(Error::At(message.into(), line))
}

pub(crate) fn type_err<T>(message: impl Into<String>) -> R<T> {
    Err(Error::Type(message.into()))
}

pub(crate) fn index_error<T>() -> R<T> {
    Err(Error::Py("IndexError", "list index out of range".into()))
}

/// `KeyError(key)` as `str()` prints it: the key's repr.
pub(crate) fn key_error<T>(key: &str) -> R<T> {
    Err(Error::Py(
        "KeyError",
        crate::parse::stablehlo::text::repr(key),
    ))
}

pub(crate) fn value_error<T>(message: impl Into<String>) -> R<T> {
    Err(Error::Py("ValueError", message.into()))
}

/// Measure the stack from here (`on`), or stop measuring: the HLO reader's budget (parse/stack.rs).
pub(crate) fn set_stack_base(on: bool) {
    crate::parse::stack::measure(on);
}

/// Called where the reader recurses: `Stack` past the budget, on the caller's thread.
pub(crate) fn stack_guard() -> R<()> {
    if crate::parse::stack::past_budget() {
        return Err(Error::Stack);
    }
    Ok(())
}

/// Nesting past this (regions in regions, tuples in tuples, brackets of a constant) is refused as
/// "nested too deeply", where Python's recursion limit refuses it.
pub(crate) const MAX_NESTING: usize = 200;

/// `zip(..., strict=True)`'s ValueError for iterables of these lengths, or None when they agree.
pub(crate) fn zip_strict(lens: &[usize]) -> R<()> {
    let k = lens.iter().copied().min().unwrap_or(0);
    let args = |i: usize| {
        if i == 1 {
            "argument 1".to_string()
        } else {
            format!("arguments 1-{i}")
        }
    };
    if lens[0] != k {
        let i = lens.iter().position(|&n| n == k).unwrap_or(0);
        return value_error(format!(
            "zip() argument {} is shorter than {}",
            i + 1,
            args(i)
        ));
    }
    if let Some(i) = lens.iter().skip(1).position(|&n| n > k) {
        let i = i + 1;
        return value_error(format!(
            "zip() argument {} is longer than {}",
            i + 1,
            args(i)
        ));
    }
    Ok(())
}
