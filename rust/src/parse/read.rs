//! One module's text read into the reader's records, errors as `(message, line)`.

use crate::parse::parser::Parser;
use crate::parse::stack;
use crate::parse::text::ModuleText;

/// Parse, turning an error's offset into its line. The parser runs on the caller's thread while
/// it needs little stack (stack.rs measures its recursion), and parses again on a thread of its
/// own with a known, ample stack where it needs more (nesting is bounded, but a caller's thread
/// may have as little as 512 KiB). A panic (a bug in this reader) is reported as an error at
/// line 0, never as an exception Python cannot expect.
pub(crate) fn read(text: &str) -> Result<ModuleText<'_>, (String, usize)> {
    let attempt = |measured: bool| {
        stack::measure(measured);
        let got = std::panic::catch_unwind(|| {
            let mut p = Parser::new(text);
            p.parse_module()
                .map_err(|e| (e.message, p.c.line_of(e.pos)))
        })
        .unwrap_or_else(|_| {
            Err((
                "internal error of the HLO reader on this input (please report it)".into(),
                0,
            ))
        });
        let spent = measured && stack::spent();
        stack::measure(false);
        (got, spent)
    };
    let result = match attempt(true) {
        (_, true) => std::thread::scope(|scope| {
            match std::thread::Builder::new()
                .stack_size(PARSER_STACK)
                .spawn_scoped(scope, || attempt(false).0)
            {
                Ok(handle) => handle
                    .join()
                    .unwrap_or_else(|_| Err(("internal error of the HLO reader".into(), 0))),
                Err(_) => attempt(false).0, // no thread to be had: parse here
            }
        }),
        (done, false) => done,
    };
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
