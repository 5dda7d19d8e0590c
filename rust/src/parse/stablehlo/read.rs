//! The reader's entry point: StableHLO text -> (HLO text, the user's line for each of its lines),
//! or the error as the Python wrapper raises it. It runs on the caller's thread while it needs
//! little stack (its recursion is measured: error.rs's `stack_guard`), and reads again on a thread
//! of its own with a known, ample stack where it needs more (nesting is bounded, but a caller's
//! thread may have as little as 512 KiB); the caller's thread keeps its warm allocator (a fresh
//! thread costs a third of the time of a large module). A panic (a bug of this reader) is reported
//! as an error, never across the FFI.

use crate::parse::stablehlo::error::{set_stack_base, Error};
use crate::parse::stablehlo::hlo_text::to_hlo_text;
use crate::parse::stablehlo::structure::read_structure;
use crate::parse::stablehlo::text::head;

/// Why a module is not read: `Parse(message, line)` names the user's line (0: none), `Input` the
/// text as a whole (nested too deeply, text no MLIR printer writes).
pub(crate) enum Refusal {
    Parse(String, usize),
    Input(String),
    /// the caller's thread has not the stack: read again on a thread of its own
    Stack,
}

fn translate(text: &str) -> Result<(String, Vec<u32>), Refusal> {
    let result = read_structure(text).and_then(to_hlo_text);
    result.map_err(|e| match e {
        Error::At(message, line) => Refusal::Parse(message, line),
        Error::Deep => Refusal::Input("StableHLO nested too deeply to read".into()),
        Error::Type(m) => Refusal::Input(format!(
            "malformed StableHLO text (TypeError_: {})",
            head(&m, 80)
        )),
        Error::Mesh(m) => Refusal::Input(format!(
            "malformed StableHLO text (MeshError: {})",
            head(&m, 80)
        )),
        Error::Py(cls, m) => Refusal::Input(format!(
            "malformed StableHLO text ({cls}: {})",
            head(&m, 80)
        )),
        Error::Stack => Refusal::Stack,
    })
}

fn attempt(text: &str, measured: bool) -> Result<(String, Vec<u32>), Refusal> {
    set_stack_base(measured);
    let got = std::panic::catch_unwind(|| translate(text)).unwrap_or_else(|_| {
        Err(Refusal::Input(
            "internal error of the StableHLO reader on this input (please report it)".into(),
        ))
    });
    set_stack_base(false);
    got
}

pub(crate) fn stablehlo_to_hlo(text: &str) -> Result<(String, Vec<u32>), Refusal> {
    match attempt(text, true) {
        Err(Refusal::Stack) => {}
        done => return done,
    }
    std::thread::scope(|scope| {
        match std::thread::Builder::new()
            .stack_size(STACK)
            .spawn_scoped(scope, || attempt(text, false))
        {
            Ok(handle) => handle.join().unwrap_or_else(|_| {
                Err(Refusal::Input(
                    "internal error of the StableHLO reader".into(),
                ))
            }),
            Err(_) => Err(Refusal::Input("StableHLO nested too deeply to read".into())),
        }
    })
}

const STACK: usize = 64 << 20;
