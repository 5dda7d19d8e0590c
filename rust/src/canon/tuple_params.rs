//! Rule 1 for the entry's tuple-shaped parameters (the oracle's `unwrap`, tests/
//! canonical_reference.py, says why): their elements read through get-tuple-element (chains of
//! them for nested tuples) are the inputs, numbered as XLA flattens the arguments. A tuple read
//! whole by anything else stays one input.

use crate::canon::shape_text::strip_layout;
use crate::parse::text::{FxMap, Inst};

const NONE: u32 = u32::MAX;

/// A shape's structure (`tuple_params.shape_tree`): an array, or a tuple of subtrees.
#[derive(Clone, Debug, PartialEq)]
pub enum Tree {
    Leaf,
    Tuple(Vec<Tree>),
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

pub fn shape_tree(shape: &str) -> Tree {
    let s = strip_layout(shape);
    let b = s.as_bytes();
    let mut stack: Vec<Vec<Tree>> = vec![Vec::new()];
    let mut pending = false;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c == b'[' {
            if let Some(j) = b[i + 1..].iter().position(|&c| c == b']') {
                i += j + 2;
                continue;
            }
        }
        if c == b'(' {
            stack.push(Vec::new());
            pending = false;
        } else if c == b')' || c == b',' {
            if pending {
                stack.last_mut().unwrap().push(Tree::Leaf);
            }
            pending = false;
            if c == b')' && stack.len() > 1 {
                let done = Tree::Tuple(stack.pop().unwrap());
                stack.last_mut().unwrap().push(done);
            }
        } else if !is_space(c) {
            pending = true;
        }
        i += 1;
    }
    if pending {
        stack.last_mut().unwrap().push(Tree::Leaf);
    }
    stack
        .swap_remove(0)
        .into_iter()
        .next()
        .unwrap_or(Tree::Leaf)
}

fn subtree<'t>(mut tree: &'t Tree, path: &[u32]) -> &'t Tree {
    for &k in path {
        if let Tree::Tuple(items) = tree {
            tree = &items[k as usize];
        }
    }
    tree
}

type Key = (u32, Vec<u32>);

/// Numbers an input takes (`size` in the oracle's `unwrap`): one, or one per element of a tuple whose
/// elements are the inputs.
fn size(key: &Key, trees: &[Option<Tree>], unwrapped: &FxMap<Key, ()>) -> i64 {
    if !unwrapped.contains_key(key) {
        return 1;
    }
    let arity = match subtree(trees[key.0 as usize].as_ref().unwrap(), &key.1) {
        Tree::Tuple(items) => items.len(),
        Tree::Leaf => 0,
    };
    let mut n = 0;
    for i in 0..arity {
        let mut path = key.1.clone();
        path.push(i as u32);
        n += size(&(key.0, path), trees, unwrapped);
    }
    n.max(1)
}

/// `tuple_params.unwrap`: each input's number (-1: not an input) and the tuple parameters whose
/// elements are the inputs; completes `alias` with duplicate element reads, chains resolved.
/// `params` are (parameter number, instruction), `index` each gte's `index` attribute. Also the
/// other reads of their elements (`Forwarding.reads`: never dead code).
pub fn unwrap(
    insts: &[Inst],
    root: u32,
    params: &[(i64, u32)],
    index: &[Option<i64>],
    alias: &mut [u32],
) -> (Vec<i64>, Vec<u32>, Vec<bool>) {
    let n = insts.len();
    let mut sorted = params.to_vec();
    sorted.sort_by_key(|&(num, _)| num);
    let mut trees: Vec<Option<Tree>> = vec![None; n];
    for &(_, p) in &sorted {
        let u = p as usize;
        trees[u] = insts[u]
            .shape
            .starts_with('(')
            .then(|| shape_tree(&insts[u].shape));
    }
    let mut held: Vec<Option<Key>> = vec![None; n];
    for &(_, p) in &sorted {
        if trees[p as usize].is_some() {
            held[p as usize] = Some((p, Vec::new()));
        }
    }
    let resolve = |alias: &[u32], o: u32| {
        if alias[o as usize] != NONE {
            alias[o as usize]
        } else {
            o
        }
    };
    let mut parent = vec![NONE; n];
    for (i, ins) in insts.iter().enumerate() {
        if ins.opcode != "get-tuple-element" || ins.operands.len() != 1 || alias[i] != NONE {
            continue;
        }
        let Some(k) = index[i] else { continue };
        let source = resolve(alias, ins.operands[0]);
        let Some((param, path)) = held[source as usize].clone() else {
            continue;
        };
        let tree = subtree(trees[param as usize].as_ref().unwrap(), &path);
        if let Tree::Tuple(items) = tree {
            if (k as usize) < items.len() {
                let mut path = path;
                path.push(k as u32);
                held[i] = Some((param, path));
                parent[i] = source;
            }
        }
    }
    // Read whole: an output, or an operand of anything but an element read or a tuple (whose
    // elements are read whole where it is).
    let mut whole: FxMap<Key, ()> = FxMap::default();
    let mut by_index: FxMap<Key, ()> = FxMap::default();
    let mut seen = vec![false; n];
    let mut read_whole = |name: u32, alias: &[u32], whole: &mut FxMap<Key, ()>| {
        let mut stack = vec![name];
        while let Some(o) = stack.pop() {
            let o = resolve(alias, o);
            if seen[o as usize] {
                continue;
            }
            seen[o as usize] = true;
            if let Some(k) = &held[o as usize] {
                whole.insert(k.clone(), ());
            } else if insts[o as usize].opcode == "tuple" {
                stack.extend(insts[o as usize].operands.iter());
            }
        }
    };
    read_whole(root, alias, &mut whole);
    for (i, ins) in insts.iter().enumerate() {
        if parent[i] != NONE {
            by_index.insert(held[parent[i] as usize].clone().unwrap(), ());
        } else if alias[i] == NONE && ins.opcode != "tuple" {
            for &o in &ins.operands {
                read_whole(o, alias, &mut whole);
            }
        }
    }
    let mut unwrapped: FxMap<Key, ()> = FxMap::default();
    let mut unwrapped_params = Vec::new();
    for &(_, p) in &sorted {
        if let Some(k) = &held[p as usize] {
            if by_index.contains_key(k) && !whole.contains_key(k) {
                unwrapped.insert(k.clone(), ());
                unwrapped_params.push(p);
            }
        }
    }
    let mut leaves: Vec<(u32, Key)> = Vec::new();
    let mut reads = vec![false; n];
    let mut first: FxMap<Key, u32> = FxMap::default();
    for i in 0..n {
        if parent[i] == NONE {
            continue;
        }
        let (param, path) = held[i].clone().unwrap();
        if !unwrapped.contains_key(&(param, path[..path.len() - 1].to_vec())) {
            continue;
        }
        let key = (param, path);
        if let Some(&f) = first.get(&key) {
            alias[i] = f;
            reads[i] = true;
            continue;
        }
        first.insert(key.clone(), i as u32);
        let element = subtree(trees[param as usize].as_ref().unwrap(), &key.1);
        if matches!(element, Tree::Tuple(_))
            && by_index.contains_key(&key)
            && !whole.contains_key(&key)
        {
            unwrapped.insert(key, ());
            reads[i] = true;
        } else {
            leaves.push((i as u32, key));
        }
    }
    let mut input = vec![-1i64; n];
    let mut offset = vec![0i64; n];
    let mut next = 0i64;
    for &(_, p) in &sorted {
        let key = (p, Vec::new());
        offset[p as usize] = next;
        next += size(&key, &trees, &unwrapped);
        if !unwrapped.contains_key(&key) {
            input[p as usize] = offset[p as usize];
        }
    }
    for (i, (param, path)) in &leaves {
        let mut number = offset[*param as usize];
        for j in 0..path.len() {
            for k in 0..path[j] {
                let mut before = path[..j].to_vec();
                before.push(k);
                number += size(&(*param, before), &trees, &unwrapped);
            }
        }
        input[*i as usize] = number;
    }
    for i in 0..n {
        let mut v = alias[i];
        while v != NONE && alias[v as usize] != NONE {
            v = alias[v as usize];
        }
        alias[i] = v;
    }
    (input, unwrapped_params, reads)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trees() {
        let t = shape_tree("(f32[2]{0}, (s32[], /*index=2*/f32[3,4]), ())");
        let leaf = Tree::Leaf;
        let want = Tree::Tuple(vec![
            leaf.clone(),
            Tree::Tuple(vec![leaf.clone(), leaf.clone()]),
            Tree::Tuple(vec![]),
        ]);
        assert_eq!(t, want);
        assert_eq!(shape_tree("f32[2,3]{1,0}"), Tree::Leaf);
        assert_eq!(shape_tree("()"), Tree::Tuple(vec![]));
    }
}
