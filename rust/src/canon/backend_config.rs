//! `hashes_reference.backend_config`: a `backend_config` attribute's JSON with its members sorted (the same
//! canonical text as `hashes_reference._Json`), else its text with spaces dropped.

use std::borrow::Cow;

use crate::canon::py_text::drop_spaces;

/// `hashes_reference.backend_config`: JSON with sorted members, else the text with spaces dropped.
pub(crate) fn backend_config(value: &str) -> String {
    let b = value.as_bytes();
    let text: Cow<str> = if b.len() >= 2 && b[0] == b'"' && b[b.len() - 1] == b'"' {
        Cow::Owned(unquote(&value[1..value.len() - 1]))
    } else {
        Cow::Borrowed(value)
    };
    let parsed = Json {
        t: text.as_bytes(),
        s: &text,
        i: 0,
    }
    .document()
    .unwrap_or_else(|| {
        if text.contains('"') {
            text.to_string()
        } else {
            drop_spaces(&text)
        }
    });
    if parsed == "{}" {
        String::new()
    } else {
        parsed
    }
}

/// `hashes_reference._unquote`: only `\"` and `\\` are undone.
fn unquote(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() && (b[i + 1] == b'"' || b[i + 1] == b'\\') {
            out.push(b[i + 1]);
            i += 2;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// `hashes_reference._Json`: the same canonical text.
struct Json<'t> {
    t: &'t [u8],
    s: &'t str,
    i: usize,
}

impl Json<'_> {
    fn document(mut self) -> Option<String> {
        let out = self.value(0)?;
        self.skip();
        if self.i == self.t.len() {
            Some(out)
        } else {
            None
        }
    }

    fn skip(&mut self) {
        while self.i < self.t.len() && matches!(self.t[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    fn at(&self, c: u8) -> bool {
        self.i < self.t.len() && self.t[self.i] == c
    }

    fn value(&mut self, depth: u32) -> Option<String> {
        self.skip();
        if self.i >= self.t.len() || depth > 64 {
            return None;
        }
        match self.t[self.i] {
            b'{' => self.members(depth),
            b'[' => self.elements(depth),
            b'"' => self.string(),
            _ => {
                let start = self.i;
                while self.i < self.t.len() && !b",]} \t\n\r".contains(&self.t[self.i]) {
                    self.i += 1;
                }
                let token = &self.s[start..self.i];
                if matches!(token, "true" | "false" | "null") || is_json_number(token.as_bytes()) {
                    Some(token.to_string())
                } else {
                    None
                }
            }
        }
    }

    fn string(&mut self) -> Option<String> {
        let start = self.i;
        self.i += 1;
        while self.i < self.t.len() {
            let c = self.t[self.i];
            if c == b'\\' {
                self.i += 2;
                continue;
            }
            self.i += 1;
            if c == b'"' {
                return Some(self.s[start..self.i].to_string());
            }
        }
        None
    }

    /// An object's members, `key:value` sorted (a key is a whole JSON string, so sorting the
    /// joined text sorts by key, then value).
    fn members(&mut self, depth: u32) -> Option<String> {
        let mut members = self.items(b'}', |j| {
            j.skip();
            if !j.at(b'"') {
                return None;
            }
            let key = j.string()?;
            j.skip();
            if !j.at(b':') {
                return None;
            }
            j.i += 1;
            Some(format!("{key}:{}", j.value(depth + 1)?))
        })?;
        members.sort();
        Some(format!("{{{}}}", members.join(",")))
    }

    fn elements(&mut self, depth: u32) -> Option<String> {
        let items = self.items(b']', |j| j.value(depth + 1))?;
        Some(format!("[{}]", items.join(",")))
    }

    /// The items of an object or array (the cursor on its opening bracket) read by `item`, up to
    /// `close`: None unless they are `item, item, ...` and the close.
    fn items(
        &mut self,
        close: u8,
        mut item: impl FnMut(&mut Self) -> Option<String>,
    ) -> Option<Vec<String>> {
        self.i += 1;
        let mut items = Vec::new();
        self.skip();
        if self.at(close) {
            self.i += 1;
            return Some(items);
        }
        loop {
            items.push(item(self)?);
            self.skip();
            if self.at(b',') {
                self.i += 1;
                continue;
            }
            if self.at(close) {
                self.i += 1;
                return Some(items);
            }
            return None;
        }
    }
}

/// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, the whole token.
fn is_json_number(b: &[u8]) -> bool {
    let mut i = 0;
    if i < b.len() && b[i] == b'-' {
        i += 1;
    }
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    if i < b.len() && b[i] == b'0' {
        i += 1;
    } else if i < b.len() && b[i].is_ascii_digit() {
        digits(&mut i);
    } else {
        return false;
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        if digits(&mut i) == 0 {
            return false;
        }
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        i += 1;
        if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return false;
        }
    }
    i == b.len()
}
