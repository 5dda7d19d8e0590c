//! Shapes: `f32[2,<=4,?]{1,0:T(8,128)}`, `(s32[], (f32[2]))`, `token[]`.
//!
//! Element type names are XLA's lowercase `PrimitiveType` names; anything else in a shape's place
//! (an identifier followed by `[`) is refused as an unknown element type, as XLA does
//! (element_types.rs holds the list).

use crate::parse::element_types::{element_type, element_type_name};
use crate::parse::scan::{err, Cursor, Result};

pub const MAX_DEPTH: usize = 512;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    /// Element type index, dimension sizes (bounds for `<=N`, -1 for `?`), dynamic flags.
    Array(u8, Vec<i64>, Vec<bool>),
    Tuple(Vec<Shape>),
}

impl Shape {
    pub fn tuple_elements(&self) -> Option<&[Shape]> {
        match self {
            Shape::Tuple(v) => Some(v),
            Shape::Array(..) => None,
        }
    }

    /// XLA's `ShapeUtil::Compatible`: same structure, element types and dimensions; layout ignored.
    pub fn compatible(&self, other: &Shape) -> bool {
        self == other
    }

    pub fn human(&self) -> String {
        match self {
            Shape::Array(t, dims, dynamic) => {
                let d: Vec<String> = dims
                    .iter()
                    .zip(dynamic)
                    .map(|(n, dy)| match (n, dy) {
                        (-1, _) => "?".to_string(),
                        (n, true) => format!("<={n}"),
                        (n, false) => n.to_string(),
                    })
                    .collect();
                format!("{}[{}]", element_type_name(*t), d.join(","))
            }
            Shape::Tuple(v) => {
                let parts: Vec<String> = v.iter().map(|s| s.human()).collect();
                format!("({})", parts.join(", "))
            }
        }
    }

    /// Number of array leaves (XLA's `GetLeafCount`).
    pub fn leaf_count(&self) -> usize {
        let mut count = 0;
        let mut stack = vec![self];
        while let Some(s) = stack.pop() {
            match s {
                Shape::Array(..) => count += 1,
                Shape::Tuple(v) => stack.extend(v.iter()),
            }
        }
        count
    }

    /// True when `index` (a tuple path) names a subshape.
    pub fn index_is_valid(&self, index: &[i64]) -> bool {
        let mut s = self;
        for &i in index {
            match s {
                Shape::Tuple(v) if i >= 0 && (i as usize) < v.len() => s = &v[i as usize],
                _ => return false,
            }
        }
        true
    }
}

/// True when a shape starts at the cursor (after whitespace): `(` or an element type then `[`.
pub fn can_be_shape(c: &mut Cursor) -> Result<bool> {
    c.ws()?;
    let save = c.pos;
    if c.peek() == b'(' {
        return Ok(true);
    }
    let word = c.ident();
    let result = if word.is_empty() {
        false
    } else {
        c.ws()?;
        c.peek() == b'[' || element_type(word).is_some() && (word == "token" || word == "opaque")
    };
    c.pos = save;
    Ok(result)
}

/// Parse a shape at the cursor (after whitespace). Tuples nest up to MAX_DEPTH.
pub fn parse_shape(c: &mut Cursor) -> Result<Shape> {
    shape(c, true)
}

/// Check a shape's syntax and element types and move past it, building nothing.
pub fn skip_shape(c: &mut Cursor) -> Result<()> {
    shape(c, false).map(|_| ())
}

fn shape(c: &mut Cursor, build: bool) -> Result<Shape> {
    let mut stack: Vec<Vec<Shape>> = Vec::new();
    loop {
        c.ws()?;
        let start = c.pos;
        if c.peek() == b'(' {
            c.pos += 1;
            if stack.len() >= MAX_DEPTH {
                return err(start, "maximum nesting depth exceeded in a tuple shape");
            }
            if stack.len() >= crate::parse::stack::CALLER_SHAPE_DEPTH && crate::parse::stack::measured() {
                return crate::parse::stack::give_up(start);
            }
            stack.push(Vec::new());
            if c.eat(b')')? {
                let done = Shape::Tuple(stack.pop().unwrap_or_default());
                if let Some(s) = close_elements(c, &mut stack, done, build)? {
                    return Ok(s);
                }
            }
            continue;
        }
        let array = parse_array(c, build)?;
        if let Some(s) = close_elements(c, &mut stack, array, build)? {
            return Ok(s);
        }
    }
}

/// Append a finished element to the innermost open tuple, closing tuples as `)` follow. Returns
/// the whole shape once no tuple is open.
fn close_elements(
    c: &mut Cursor,
    stack: &mut Vec<Vec<Shape>>,
    mut done: Shape,
    build: bool,
) -> Result<Option<Shape>> {
    loop {
        let Some(top) = stack.last_mut() else {
            return Ok(Some(done));
        };
        if build {
            top.push(done);
        }
        if c.eat(b',')? {
            return Ok(None);
        }
        if c.eat(b')')? {
            done = Shape::Tuple(stack.pop().unwrap_or_default());
            continue;
        }
        return err(
            c.pos,
            format!(
                "expected ',' or ')' in a tuple shape, got {}",
                c.snippet(c.pos)
            ),
        );
    }
}

fn parse_array(c: &mut Cursor, build: bool) -> Result<Shape> {
    let start = c.pos;
    let word = c.ident();
    if word.is_empty() {
        return err(start, format!("expected a shape, got {}", c.snippet(start)));
    }
    let Some(t) = element_type(word) else {
        return err(start, format!("unknown element type {word}"));
    };
    let mut dims = Vec::new();
    let mut dynamic = Vec::new();
    let mut rank = 0usize;
    if c.eat(b'[')? {
        if !c.eat(b']')? {
            loop {
                c.ws()?;
                let mut is_dynamic = false;
                let value = if c.peek() == b'?' {
                    c.pos += 1;
                    -1
                } else {
                    if c.b[c.pos..].starts_with(b"<=") {
                        c.pos += 2;
                        is_dynamic = true;
                    }
                    c.ws()?;
                    let n0 = c.pos;
                    while c.peek().is_ascii_digit() {
                        c.pos += 1;
                    }
                    match c.text[n0..c.pos].parse::<i64>() {
                        Ok(n) => n,
                        Err(_) => {
                            return err(
                                n0,
                                format!("expected a dimension size, got {}", c.snippet(n0)),
                            )
                        }
                    }
                };
                rank += 1;
                if build {
                    dims.push(value);
                    dynamic.push(is_dynamic);
                }
                if c.eat(b',')? {
                    continue;
                }
                c.expect(b']', "',' or ']' in the dimensions")?;
                break;
            }
        }
    } else if word != "token" && word != "opaque" {
        return err(c.pos, format!("expected '[' after element type {word}"));
    }
    // A layout `{1,0:T(8,128)}` may follow (only its brackets matter here); a `{` that opens an
    // instruction list after a signature's result shape is not one.
    c.ws()?;
    if c.peek() == b'{' {
        let save = c.pos;
        c.pos += 1;
        c.ws()?;
        let next = c.peek();
        c.pos = save;
        if next.is_ascii_digit() || next == b':' || next == b'}' {
            // The usual `{1,0}`: digits, commas and spaces to the `}`; anything else (tiling,
            // memory space, comments) the general bracket walk.
            let rest = &c.b[save + 1..];
            let plain = rest
                .iter()
                .position(|&b| !(b.is_ascii_digit() || b == b',' || b == b' '));
            let plain_order = match plain {
                Some(k) if rest[k] == b'}' => {
                    c.pos = save + 1 + k + 1;
                    Some(&rest[..k])
                }
                _ => {
                    c.skip_balanced()?;
                    None
                }
            };
            let layout = &c.text[save..c.pos];
            // A layout that orders more or fewer dimensions than the shape has contradicts it
            // (XLA: "Dimensions size is 2, but minor to major size is 3"); `{}` orders none.
            let ordered = match plain_order {
                // Digits, commas and spaces only: no comment to strip, no string to split.
                Some(order) => order
                    .split(|&b| b == b',')
                    .filter(|d| d.iter().any(|&b| b != b' '))
                    .count(),
                None => {
                    let order = layout[1..].split([':', '}']).next().unwrap_or("");
                    crate::parse::comments::strip_comments(order)
                        .split(',')
                        .filter(|d| !d.trim().is_empty())
                        .count()
                }
            };
            if ordered != 0 && ordered != rank {
                return err(
                    save,
                    format!("the shape has {rank} dimensions, but its layout orders {ordered}"),
                );
            }
            if let Some((_, attrs)) = layout.split_once(':') {
                check_layout_attributes(attrs).map_err(|m| crate::parse::scan::Error {
                    message: m,
                    pos: save,
                })?;
            }
        }
    }
    Ok(Shape::Array(t, dims, dynamic))
}

/// The part of a layout after `:`: dim level types `D(...)` are D, C or S (with `+`/`~`), and a
/// physical shape `P(...)` belongs to sparse arrays only.
fn check_layout_attributes(attrs: &str) -> std::result::Result<(), String> {
    let mut sparse = false;
    if let Some(start) = attrs.find("D(") {
        let inner = &attrs[start + 2..];
        let inner = &inner[..inner.find(')').unwrap_or(inner.len())];
        for level in inner.split(',') {
            let level = level.trim().trim_end_matches(['+', '~']);
            match level {
                "D" => {}
                "C" | "S" => sparse = true,
                other => {
                    return Err(format!(
                        "expected a DimLevelType abbreviation (D, C, or S), got {other}"
                    ))
                }
            }
        }
    }
    if attrs.contains("P(") && !sparse {
        return Err("layout has a physical shape, but is not for a sparse array".to_string());
    }
    Ok(())
}
