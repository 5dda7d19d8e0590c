//! Byte cursor over HLO text: whitespace and comments, identifiers, numbers, balanced spans.
//!
//! XLA's lexer treats `/* ... */` and `// ...` as whitespace anywhere between tokens, and any of
//! `\n`, `\r\n` or a lone `\r` ends a line. Positions are byte offsets; lines are computed only
//! when a message or an instruction needs one.

/// A parse failure at a byte offset; the binding turns the offset into a line number.
#[derive(Debug)]
pub struct Error {
    pub message: String,
    pub pos: usize,
}

pub type Result<T> = std::result::Result<T, Error>;

pub fn err<T>(pos: usize, message: impl Into<String>) -> Result<T> {
    Err(Error {
        message: message.into(),
        pos,
    })
}

pub struct Cursor<'a> {
    pub text: &'a str,
    pub b: &'a [u8],
    pub pos: usize,
    line_starts: Vec<usize>,
    /// Offsets of lines that start with `}`: where printers close computations.
    closers: Vec<usize>,
}

#[inline]
pub fn is_ident_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

/// `[A-Za-z0-9_.-]` by byte, as a table: the reader tests every byte of every name.
static IDENT_CHAR: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0;
    while c < 256 {
        let b = c as u8;
        t[c] = b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-';
        c += 1;
    }
    t
};

#[inline]
pub fn is_ident_char(c: u8) -> bool {
    IDENT_CHAR[c as usize]
}

impl<'a> Cursor<'a> {
    pub fn new(text: &'a str) -> Self {
        let b = text.as_bytes();
        let mut line_starts = Vec::with_capacity(b.len() / 64 + 1);
        line_starts.push(0);
        let mut i = 0;
        if !text.contains('\r') {
            // LF only (the usual case): memchr's search, not a loop over every byte.
            line_starts.extend(text.match_indices('\n').map(|(k, _)| k + 1));
            i = b.len();
        }
        while i < b.len() {
            match b[i] {
                b'\n' => line_starts.push(i + 1),
                b'\r' => {
                    if i + 1 < b.len() && b[i + 1] == b'\n' {
                        i += 1;
                    }
                    line_starts.push(i + 1);
                }
                _ => {}
            }
            i += 1;
        }
        // Lines that start with `}`: where printers close computations.
        let closers = line_starts
            .iter()
            .copied()
            .filter(|&s| s < b.len() && b[s] == b'}')
            .collect();
        // A UTF-8 byte order mark is not text.
        let pos = if b.starts_with(&[0xEF, 0xBB, 0xBF]) {
            3
        } else {
            0
        };
        Cursor {
            text,
            b,
            pos,
            line_starts,
            closers,
        }
    }

    /// Bytes from `pos` to the next line that starts with `}` (or to the end).
    pub fn to_next_closer(&self, pos: usize) -> usize {
        let i = self.closers.partition_point(|&c| c < pos);
        self.closers.get(i).copied().unwrap_or(self.b.len()) - pos
    }

    /// 1-based line of a byte offset.
    pub fn line_of(&self, pos: usize) -> usize {
        match self.line_starts.binary_search(&pos) {
            Ok(i) => i + 1,
            Err(i) => i,
        }
    }

    #[inline]
    pub fn peek(&self) -> u8 {
        if self.pos < self.b.len() {
            self.b[self.pos]
        } else {
            0
        }
    }

    #[inline]
    pub fn at_end(&self) -> bool {
        self.pos >= self.b.len()
    }

    /// Skip whitespace and comments. An unterminated `/*` is an error.
    #[inline]
    pub fn ws(&mut self) -> Result<()> {
        // Most calls find no whitespace or comment at all: decided here, without a call.
        match self.b.get(self.pos) {
            Some(&c) if !c.is_ascii_whitespace() && c != b'/' => Ok(()),
            _ => self.skip_ws(),
        }
    }

    fn skip_ws(&mut self) -> Result<()> {
        let b = self.b;
        loop {
            while self.pos < b.len() && b[self.pos].is_ascii_whitespace() {
                self.pos += 1;
            }
            if self.pos + 1 < b.len() && b[self.pos] == b'/' {
                match b[self.pos + 1] {
                    b'*' => {
                        let start = self.pos;
                        match find(&b[self.pos + 2..], b"*/") {
                            Some(i) => self.pos += 2 + i + 2,
                            None => return err(start, "unterminated /* comment"),
                        }
                        continue;
                    }
                    b'/' => {
                        while self.pos < b.len() && b[self.pos] != b'\n' && b[self.pos] != b'\r' {
                            self.pos += 1;
                        }
                        continue;
                    }
                    _ => {}
                }
            }
            return Ok(());
        }
    }

    /// Skip whitespace and comments, then consume `c` if it is next.
    #[inline]
    pub fn eat(&mut self, c: u8) -> Result<bool> {
        self.ws()?;
        if self.peek() == c {
            self.pos += 1;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    pub fn expect(&mut self, c: u8, what: &str) -> Result<()> {
        if self.eat(c)? {
            Ok(())
        } else {
            err(
                self.pos,
                format!("expected {what}, got {}", self.snippet(self.pos)),
            )
        }
    }

    /// Identifier `[A-Za-z_][A-Za-z0-9_.-]*` at the cursor (no whitespace skipped), or "".
    #[inline]
    pub fn ident(&mut self) -> &'a str {
        let b = self.b;
        let start = self.pos;
        if start < b.len() && is_ident_start(b[start]) {
            let mut i = start + 1;
            while i < b.len() && is_ident_char(b[i]) {
                i += 1;
            }
            self.pos = i;
        }
        &self.text[start..self.pos]
    }

    /// A name, with an optional `%` sigil (dropped). Names after `%` may start with a digit.
    #[inline]
    pub fn name(&mut self) -> &'a str {
        let b = self.b;
        if self.peek() == b'%' {
            let start = self.pos + 1;
            let mut i = start;
            while i < b.len() && is_ident_char(b[i]) {
                i += 1;
            }
            if i == start {
                return "";
            }
            self.pos = i;
            return &self.text[start..i];
        }
        self.ident()
    }

    /// A name (`name`), or the error `expected {what}` where none is at the cursor.
    pub fn required_name(&mut self, what: &str) -> Result<&'a str> {
        let pos = self.pos;
        let name = self.name();
        if name.is_empty() {
            return err(pos, format!("expected {what}, got {}", self.snippet(pos)));
        }
        Ok(name)
    }

    /// Consume a keyword (followed by a non-identifier character) if it is next.
    pub fn keyword(&mut self, word: &str) -> bool {
        let w = word.as_bytes();
        let end = self.pos + w.len();
        if end <= self.b.len()
            && &self.b[self.pos..end] == w
            && (end == self.b.len() || !is_ident_char(self.b[end]))
        {
            self.pos = end;
            true
        } else {
            false
        }
    }

    /// Skip a string literal starting at the cursor (on its quote).
    pub fn skip_string(&mut self) -> Result<()> {
        let b = self.b;
        let quote = b[self.pos];
        let start = self.pos;
        let mut i = self.pos + 1;
        while i < b.len() {
            match b[i] {
                b'\\' => i += 2,
                c if c == quote => {
                    self.pos = i + 1;
                    return Ok(());
                }
                _ => i += 1,
            }
        }
        err(start, "unterminated string literal")
    }

    /// Skip a bracketed span starting at the cursor (on `{`, `[` or `(`), honouring strings and
    /// comments. Iterative: nesting depth costs no stack.
    pub fn skip_balanced(&mut self) -> Result<()> {
        let b = self.b;
        let start = self.pos;
        // the open brackets: the first few in place (no allocation for the common value)
        let mut near = [0u8; 32];
        let mut far: Vec<u8> = Vec::new();
        let mut depth = 0usize;
        loop {
            if self.pos >= b.len() {
                return err(
                    start,
                    format!("unbalanced brackets: {} is not closed", b[start] as char),
                );
            }
            match b[self.pos] {
                c @ (b'{' | b'[' | b'(') => {
                    match near.get_mut(depth) {
                        Some(slot) => *slot = c,
                        None => far.push(c),
                    }
                    depth += 1;
                    self.pos += 1;
                }
                c @ (b'}' | b']' | b')') => {
                    let open = match depth {
                        0 => 0,
                        d if d > near.len() => far.pop().unwrap_or(0),
                        d => near[d - 1],
                    };
                    depth = depth.saturating_sub(1);
                    let want = match open {
                        b'{' => b'}',
                        b'[' => b']',
                        _ => b')',
                    };
                    if c != want {
                        return err(self.pos, format!("mismatched bracket {}", c as char));
                    }
                    self.pos += 1;
                    if depth == 0 {
                        return Ok(());
                    }
                }
                b'"' | b'\'' => self.skip_string()?,
                b'/' if self.pos + 1 < b.len()
                    && (b[self.pos + 1] == b'*' || b[self.pos + 1] == b'/') =>
                {
                    self.ws()?;
                }
                _ => self.pos += 1,
            }
        }
    }

    /// A short, single-line quotation of the text at `pos` for messages.
    pub fn snippet(&self, pos: usize) -> String {
        if pos >= self.b.len() {
            return "end of input".to_string();
        }
        let rest = &self.text[pos..];
        let line = rest.split(['\n', '\r']).next().unwrap_or("");
        let mut end = line.len().min(50);
        while !line.is_char_boundary(end) {
            end -= 1;
        }
        format!("'{}'", &line[..end])
    }
}

/// The first index of `needle` in `hay`.
pub fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.len() > hay.len() {
        return None;
    }
    let first = needle[0];
    let mut i = 0;
    while i + needle.len() <= hay.len() {
        match hay[i..hay.len() - needle.len() + 1]
            .iter()
            .position(|&c| c == first)
        {
            None => return None,
            Some(j) => {
                i += j;
                if &hay[i..i + needle.len()] == needle {
                    return Some(i);
                }
                i += 1;
            }
        }
    }
    None
}
