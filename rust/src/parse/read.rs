//! One module's text read into the reader's records, on a thread with a known stack, errors as
//! `(message, line)`.

use crate::parse::parser::Parser;
use crate::parse::text::ModuleText;

/// Parse, turning an error's offset into its line. The parser runs on a thread of its own with a
/// known, ample stack (nesting is bounded, but a caller's thread may have as little as 512 KiB).
/// A panic (a bug in this reader) is reported as an error at line 0, never as an exception
/// Python cannot expect.
pub(crate) fn read(text: &str) -> Result<ModuleText<'_>, (String, usize)> {
    let attempt = || {
        std::panic::catch_unwind(|| {
            let mut p = Parser::new(text);
            p.parse_module()
                .map_err(|e| (e.message, p.c.line_of(e.pos)))
        })
        .unwrap_or_else(|_| {
            Err((
                "internal error of the HLO reader on this input (please report it)".into(),
                0,
            ))
        })
    };
    let result = std::thread::scope(|scope| {
        match std::thread::Builder::new()
            .stack_size(PARSER_STACK)
            .spawn_scoped(scope, attempt)
        {
            Ok(handle) => handle
                .join()
                .unwrap_or_else(|_| Err(("internal error of the HLO reader".into(), 0))),
            Err(_) => attempt(), // no thread to be had: parse here
        }
    });
    // Messages quote the input: control characters (a terminal's escape sequences) go out escaped.
    result.map_err(|(message, line)| (escape_controls(&message), line))
}

fn escape_controls(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for c in message.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

const PARSER_STACK: usize = 64 << 20;
