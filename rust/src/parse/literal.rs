//! Constant literals, checked as XLA's `ParseDenseLiteral` checks them: nesting equal to the
//! rank, exactly the shape's element count per dimension (`{...}` elides a whole constant), and
//! every value in range for the element type (literal_values.rs). Values themselves are not kept.

use crate::parse::element_types::element_type_name;
use crate::parse::literal_values::{check_value, scalar};
use crate::parse::scan::{err, Cursor, Result};
use crate::parse::shape::Shape;

/// A literal that states its own shape: `f32[2] {1, 2}` or a tuple `(s32[] 1, pred[] 0)`.
pub fn check_shaped_literal(c: &mut Cursor, depth: usize) -> Result<()> {
    c.ws()?;
    crate::parse::stack::guard(c.pos)?;
    if depth > crate::parse::shape::MAX_DEPTH {
        return err(c.pos, "maximum nesting depth exceeded in a literal");
    }
    if c.eat(b'(')? {
        if c.eat(b')')? {
            return Ok(());
        }
        loop {
            check_shaped_literal(c, depth + 1)?;
            if c.eat(b',')? {
                continue;
            }
            return c.expect(b')', "')' closing a tuple literal");
        }
    }
    let shape = crate::parse::shape::parse_shape(c)?;
    check_literal(c, &shape)
}

/// Check a literal of `shape` at the cursor; stops before the closing `)` of `constant(...)`.
pub fn check_literal(c: &mut Cursor, shape: &Shape) -> Result<()> {
    crate::parse::stack::guard(c.pos)?;
    match shape {
        Shape::Tuple(elements) => {
            c.expect(b'(', "'(' in front of tuple literal elements")?;
            if !c.eat(b')')? {
                for (i, e) in elements.iter().enumerate() {
                    if i > 0 {
                        c.expect(b',', "',' between tuple literal elements")?;
                    }
                    check_literal(c, e)?; // depth bounded: tuple shapes nest at most MAX_DEPTH
                }
                c.expect(b')', "')' closing a tuple literal")?;
            }
            Ok(())
        }
        Shape::Array(t, dims, _) => dense(c, element_type_name(*t), dims),
    }
}

fn dense(c: &mut Cursor, t: &str, dims: &[i64]) -> Result<()> {
    if t == "token" || t == "opaque" {
        return err(c.pos, format!("a constant cannot have type {t}"));
    }
    let rank = dims.len();
    let mut seen = vec![0i64; rank];
    let mut level = 0usize;
    loop {
        c.ws()?;
        let pos = c.pos;
        match c.peek() {
            b'{' => {
                level += 1;
                if level > rank {
                    return err(
                        pos,
                        format!("expects nested array in rank {rank}, but sees larger"),
                    );
                }
                if level > 1 {
                    seen[level - 2] += 1;
                    if seen[level - 2] > dims[level - 2] {
                        return err(
                            pos,
                            format!("expects {} elements, but sees more", dims[level - 2]),
                        );
                    }
                }
                c.pos += 1;
            }
            b'}' => {
                if level == 0 {
                    return err(pos, "unexpected '}' in a literal");
                }
                level -= 1;
                if seen[level] != dims[level] {
                    return err(
                        pos,
                        format!(
                            "expects {} elements in a constant, but sees {}",
                            dims[level], seen[level]
                        ),
                    );
                }
                seen[level] = 0;
                c.pos += 1;
            }
            b',' => c.pos += 1,
            b'.' if c.b[pos..].starts_with(b"...") => {
                if level != 1 {
                    return err(
                        pos,
                        format!("expects `...` at nest level 1, but sees it at nest level {level}"),
                    );
                }
                seen[0] = dims[0];
                c.pos += 3;
            }
            _ => {
                if rank > 0 && level == 0 {
                    // One scalar for the whole array (`f32[8,2048] constant(0)`): XLA fills the
                    // array with it (hlo_diff's tests are written so).
                    let v = scalar(c)?;
                    return check_value(pos, t, &v);
                }
                if rank > 0 {
                    if level != rank {
                        return err(
                            pos,
                            format!("expects nested array in rank {rank}, but sees {level}"),
                        );
                    }
                    seen[rank - 1] += 1;
                    if seen[rank - 1] > dims[rank - 1] {
                        return err(
                            pos,
                            format!(
                                "expects {} elements on the minor-most dimension, but sees more",
                                dims[rank - 1]
                            ),
                        );
                    }
                }
                let v = scalar(c)?;
                check_value(pos, t, &v)?;
            }
        }
        if level == 0 {
            return Ok(());
        }
    }
}
