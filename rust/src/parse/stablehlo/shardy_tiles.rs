//! XLA's tile assignments as Shardy's export builds and prints them: `IotaTileAssignment`
//! (`devices=[2,4]<=[4,2]T(1,0)`) and explicit device lists, with `CanonicalizeIotaDims`,
//! `GroupMinorIotaDimsSorted`, `HloSharding::PartialTile` and `HloSharding::Subgroup`.

use crate::parse::stablehlo::error::{index_error, Error, R};
use crate::parse::stablehlo::mlir_types::prod;

#[derive(Clone)]
pub(crate) enum Tiles {
    /// iota over `reshape`, transposed by `perm`, reshaped to `dims`
    Iota { dims: Vec<i64>, reshape: Vec<i64>, perm: Vec<usize> },
    Array { dims: Vec<i64>, values: Vec<i64> },
}

/// Devices past this are not listed out (a mesh of more is refused).
const MAX_DEVICES: i128 = 1 << 22;

fn join<T: ToString>(xs: &[T]) -> String {
    xs.iter().map(|x| x.to_string()).collect::<Vec<_>>().join(",")
}

impl Tiles {
    pub(crate) fn dims(&self) -> &[i64] {
        match self {
            Tiles::Iota { dims, .. } | Tiles::Array { dims, .. } => dims,
        }
    }

    pub(crate) fn text(&self) -> String {
        match self {
            Tiles::Iota { dims, reshape, perm } => {
                let mut out = format!("devices=[{}]<=[{}]", join(dims), join(reshape));
                if reshape.len() > 1 {
                    out.push_str(&format!("T({})", join(perm)));
                }
                out
            }
            Tiles::Array { dims, values } => format!("devices=[{}]{}", join(dims), join(values)),
        }
    }

    fn values(&self) -> R<Vec<i64>> {
        match self {
            Tiles::Iota { reshape, perm, .. } => {
                let n = prod(reshape);
                if n > MAX_DEVICES {
                    return Err(Error::Mesh(format!("a mesh of {n} devices is not read")));
                }
                transposed(&(0..n as i64).collect::<Vec<_>>(), reshape, perm)
            }
            Tiles::Array { values, .. } => Ok(values.clone()),
        }
    }

    fn with_dims(&self, dims: Vec<i64>) -> Tiles {
        match self {
            Tiles::Iota { reshape, perm, .. } => Tiles::Iota { dims, reshape: reshape.clone(), perm: perm.clone() },
            Tiles::Array { values, .. } => Tiles::Array { dims, values: values.clone() },
        }
    }
}

/// The row-major elements of `values` (shaped `dims`) transposed by `perm`.
pub(crate) fn transposed(values: &[i64], dims: &[i64], perm: &[usize]) -> R<Vec<i64>> {
    let strides: Vec<i128> = (0..dims.len()).map(|k| prod(&dims[k + 1..])).collect();
    let mut out_dims = Vec::new();
    for &p in perm {
        match dims.get(p) {
            Some(&d) => out_dims.push(d),
            None => return index_error(),
        }
    }
    if perm.len() != dims.len() {
        return Err(Error::Py("ValueError", "zip() argument 2 is shorter than argument 1".into()));
    }
    let total = prod(&out_dims);
    if total > MAX_DEVICES {
        return Err(Error::Mesh(format!("a mesh of {total} devices is not read")));
    }
    let mut out = Vec::with_capacity(total.max(0) as usize);
    if out_dims.iter().any(|&d| d <= 0) {
        return Ok(out);
    }
    let mut index = vec![0i64; out_dims.len()];
    loop {
        let mut at = 0i128;
        for (i, &p) in index.iter().zip(perm) {
            at += *i as i128 * strides[p];
        }
        match values.get(at as usize) {
            Some(&v) => out.push(v),
            None => return index_error(),
        }
        let mut k = out_dims.len();
        loop {
            if k == 0 {
                return Ok(out);
            }
            k -= 1;
            index[k] += 1;
            if index[k] < out_dims[k] {
                break;
            }
            index[k] = 0;
        }
    }
}

/// CanonicalizeIotaDims: size-1 dimensions dropped, runs in major-to-minor order merged.
fn canonical_iota(dims: &[i64], perm: &[usize]) -> (Vec<i64>, Vec<usize>) {
    let (mut dims, mut perm) = (dims.to_vec(), perm.to_vec());
    if dims.len() <= 1 {
        return (dims, perm);
    }
    loop {
        let keep: Vec<bool> = dims.iter().map(|&d| d != 1).collect();
        if !keep.iter().all(|&k| k) {
            let mut new_index = vec![usize::MAX; keep.len()];
            let mut n = 0;
            for (i, &k) in keep.iter().enumerate() {
                if k {
                    new_index[i] = n;
                    n += 1;
                }
            }
            perm = perm.iter().filter(|&&p| keep[p]).map(|&p| new_index[p]).collect();
            dims.retain(|&d| d != 1);
        }
        let mut changed = false;
        let mut base = 0;
        for i in 1..dims.len() {
            if perm[base] + (i - base) == perm[i] {
                dims[perm[base]] *= dims[perm[i]];
                dims[perm[i]] = 1;
                changed = true;
            } else {
                base = i;
            }
        }
        if !changed {
            return (dims, perm);
        }
    }
}

/// IotaTileAssignment::Create.
pub(crate) fn iota(dims: Vec<i64>, reshape: &[i64], perm: &[usize]) -> Tiles {
    let (mut r, mut p) = canonical_iota(reshape, perm);
    if r.is_empty() {
        (r, p) = (vec![1], vec![0]);
    }
    Tiles::Iota { dims, reshape: r, perm: p }
}

/// GroupMinorIotaDimsSorted: the iota's minor dimensions grouped to `group` devices, sorted.
fn group_minor_sorted(dims: &[i64], perm: &[usize], mut group: i64) -> Option<(Vec<i64>, Vec<usize>)> {
    let mut grouped = 0usize;
    let mut split = None;
    for i in (0..perm.len()).rev() {
        let size = dims[perm[i]];
        if size <= group {
            if group % size != 0 {
                return None;
            }
            group /= size;
            grouped += 1;
        } else {
            if size % group != 0 {
                return None;
            }
            split = Some((perm[i], size / group));
            grouped += 1;
            break;
        }
    }
    let Some((at, size)) = split else {
        let mut new_perm = perm.to_vec();
        let tail = perm.len() - grouped;
        new_perm[tail..].sort();
        return Some((dims.to_vec(), new_perm));
    };
    let mut new_dims = dims[..at].to_vec();
    new_dims.push(size);
    new_dims.push(dims[at] / size);
    new_dims.extend_from_slice(&dims[at + 1..]);
    let mut new_perm = vec![0usize; perm.len() + 1];
    let mut perm_split = 0;
    for (i, &p) in perm.iter().enumerate() {
        new_perm[i] = if p <= at { p } else { p + 1 };
        if p == at {
            perm_split = i;
            break;
        }
    }
    new_perm[perm_split + 1] = new_perm[perm_split] + 1;
    for i in perm_split + 2..new_perm.len() {
        let p = perm[i - 1];
        new_perm[i] = if p <= at { p } else { p + 1 };
    }
    let tail = new_perm.len() - grouped;
    new_perm[tail..].sort();
    Some((new_dims, new_perm))
}

/// HloSharding::PartialTile: the last dimension replicates; None: `{replicated}`.
fn partial_tile(tiles: &Tiles) -> R<Option<Tiles>> {
    let dims = tiles.dims();
    let n = prod(dims);
    let group = *dims.last().expect("a dimension");
    if dims.len() == 1 || group as i128 == n {
        return Ok(None);
    }
    if let Tiles::Iota { reshape, perm, .. } = tiles {
        if reshape[*perm.last().expect("a dimension")] == group {
            return Ok(Some(tiles.clone()));
        }
        if let Some((d, p)) = group_minor_sorted(reshape, perm, group) {
            return Ok(Some(iota(dims.to_vec(), &d, &p)));
        }
    }
    let mut values = tiles.values()?;
    let g = group.max(1) as usize;
    let mut k = 0;
    while (k as i128) < n && k < values.len() {
        let end = (k + g).min(values.len());
        values[k..end].sort();
        k += g;
    }
    Ok(Some(Tiles::Array { dims: dims.to_vec(), values }))
}

/// HloSharding::Subgroup and its printing, for the types Shardy's export makes (unreduced
/// before replicated, each of more than one device).
pub(crate) fn subgroup(tiles: Tiles, types: Vec<&'static str>) -> R<String> {
    if types.is_empty() {
        return Ok(format!("{{{}}}", tiles.text()));
    }
    let mut tiles = tiles;
    let mut types = types;
    let rank = tiles.dims().len() - types.len();
    let first = types[0];
    if types.iter().all(|&t| t == first) && prod(&tiles.dims()[..rank]) == 1 {
        return Ok(format!("{{{first}}}"));
    }
    let kept: Vec<usize> = (0..tiles.dims().len() - rank).filter(|&k| tiles.dims()[rank + k] > 1).collect();
    if kept.len() != types.len() {
        let mut dims = tiles.dims()[..rank].to_vec();
        dims.extend(kept.iter().map(|&k| tiles.dims()[rank + k]));
        types = kept.iter().map(|&k| types[k]).collect();
        tiles = tiles.with_dims(dims);
        if types.is_empty() {
            return Ok(format!("{{{}}}", tiles.text()));
        }
    }
    if *types.last().expect("a type") != "replicated" {
        return Ok(format!("{{{} last_tile_dims={{{}}}}}", tiles.text(), types.join(", ")));
    }
    let Some(partial) = partial_tile(&tiles)? else { return Ok("{replicated}".into()) };
    if types == ["replicated"] {
        return Ok(format!("{{{} last_tile_dim_replicate}}", partial.text()));
    }
    Ok(format!("{{{} last_tile_dims={{{}}}}}", partial.text(), types.join(", ")))
}
