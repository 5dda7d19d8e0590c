//! Shardy (`sdy`) shardings as XLA's export writes them (issue 38).
//!
//! Meshes (`sdy.mesh @mesh = <["x"=2, "y"=4]>`, optionally `device_ids=[...]`) and tensor
//! shardings that name a mesh's axes per dimension (`#sdy.sharding<@mesh, [{"x"}, {"y":(1)2, ?}],
//! replicated={...}, unreduced={...}>`) are written as the HLO sharding of the same devices
//! (`{devices=[2,1,4]<=[8] last_tile_dim_replicate}`), step by step as `convertToHloSharding`
//! does (the tile assignment: shardy_tiles.rs); shardy_meshes.rs merges meshes of the same
//! devices as the export does. A mesh written inline in a sharding is refused by name.

use std::collections::HashMap;

use crate::parse::stablehlo::error::{Error, R};
use crate::parse::stablehlo::mlir_types::prod;
use crate::parse::stablehlo::shardy_tiles::{iota, subgroup, transposed, Tiles};
use crate::parse::stablehlo::text::{comma, digits, find_ints, head, inner, lstrip, partition, repr, strip};

fn mesh_err<T>(message: String) -> R<T> {
    Err(Error::Mesh(message))
}

/// `sdy.mesh @name = <[axes], device_ids=[...]>`: axes `(name, size)` in order.
pub(crate) struct Mesh {
    pub name: String,
    pub axes: Vec<(String, i64)>,
    pub device_ids: Vec<i64>,
    pub text: String,
}

impl Mesh {
    pub(crate) fn size_of(&self, axis: &str) -> R<i64> {
        match self.axes.iter().find(|(n, _)| n == axis) {
            Some((_, s)) => Ok(*s),
            None => mesh_err(format!("axis {} is not an axis of mesh @{}", repr(axis), self.name)),
        }
    }
}

/// A mesh axis, or its sub-axis `"x":(pre)size` (size 0: the whole axis).
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct AxisRef {
    pub axis: String,
    pub pre: i64,
    pub size: i64,
}

impl AxisRef {
    pub(crate) fn whole(axis: &str) -> Self {
        AxisRef { axis: axis.to_string(), pre: 1, size: 0 }
    }

    pub(crate) fn length(&self, mesh: &Mesh) -> R<i64> {
        if self.size != 0 {
            Ok(self.size)
        } else {
            mesh.size_of(&self.axis)
        }
    }

    /// The dataclass's repr.
    pub(crate) fn repr(&self) -> String {
        format!("AxisRef(axis={}, pre={}, size={})", repr(&self.axis), self.pre, self.size)
    }
}

/// A tensor's sharding: per dimension its axes, whether it is open (`?`) and its priority.
#[derive(Clone)]
pub(crate) struct TensorSharding {
    pub mesh: String,
    pub dims: Vec<Vec<AxisRef>>,
    pub replicated: Vec<AxisRef>,
    pub unreduced: Vec<AxisRef>,
    pub opened: Vec<bool>,
    pub priorities: Vec<String>,
}

pub(crate) fn ref_text(r: &AxisRef) -> String {
    let mut out = format!("\"{}\"", r.axis);
    if r.size != 0 {
        out.push_str(&format!(":({}){}", r.pre, r.size));
    }
    out
}

fn refs_text(refs: &[AxisRef]) -> String {
    refs.iter().map(ref_text).collect::<Vec<_>>().join(", ")
}

impl TensorSharding {
    /// As MLIR prints it, inside `#sdy.sharding`: `<@mesh, [{"x", ?}p1, {}], replicated={"y"}>`.
    pub(crate) fn text(&self) -> String {
        let mut dims = Vec::new();
        for (k, axes) in self.dims.iter().enumerate() {
            let mut words: Vec<String> = axes.iter().map(ref_text).collect();
            if self.opened.get(k) == Some(&true) {
                words.push("?".into());
            }
            let prio = if self.priorities.is_empty() { "" } else { self.priorities[k].as_str() };
            dims.push(format!("{{{}}}{prio}", words.join(", ")));
        }
        let mut out = format!("<@{}, [{}]", self.mesh, dims.join(", "));
        for (key, refs) in [("replicated", &self.replicated), ("unreduced", &self.unreduced)] {
            if !refs.is_empty() {
                out.push_str(&format!(", {key}={{{}}}", refs_text(refs)));
            }
        }
        out + ">"
    }
}

fn int(s: &str) -> i64 {
    s.parse::<i64>().unwrap_or(i64::MAX)
}

/// `<["x"=2, "y"=4], device_ids=[...]>` (or `#sdy.mesh<...>`) of mesh `name`.
pub(crate) fn parse_mesh(name: &str, text: &str) -> R<Mesh> {
    let t = strip(text);
    let body = t.strip_prefix("#sdy.mesh").unwrap_or(t);
    let malformed = || mesh_err(format!("mesh @{name}: malformed {}", head(text, 60)));
    if !(body.starts_with('<') && body.ends_with('>')) {
        return malformed();
    }
    let parts = comma(inner(body));
    if parts.is_empty() || !parts[0].starts_with('[') {
        return malformed();
    }
    let mut axes: Vec<(String, i64)> = Vec::new();
    for part in comma(inner(parts[0])) {
        let got = (|| {
            let (axis, rest) = quoted(part)?;
            let size = lstrip(lstrip(rest).strip_prefix('=')?);
            digits(size).then(|| (axis.to_string(), int(size)))
        })();
        match got {
            Some((a, s)) if s >= 1 => axes.push((a, s)),
            _ => return mesh_err(format!("mesh @{name}: malformed axis {}", head(part, 40))),
        }
    }
    for (k, (a, _)) in axes.iter().enumerate() {
        if axes[..k].iter().any(|(b, _)| b == a) {
            return mesh_err(format!("mesh @{name}: an axis named twice"));
        }
    }
    let mut ids = Vec::new();
    for part in &parts[1..] {
        let (key, _, value) = partition(part, "=");
        if strip(key) != "device_ids" {
            return mesh_err(format!("mesh @{name}: {} is not read", strip(key)));
        }
        ids = find_ints(value);
    }
    let n = prod(&axes.iter().map(|(_, s)| *s).collect::<Vec<_>>());
    if !ids.is_empty() && ids.len() as i128 != n {
        return mesh_err(format!("mesh @{name}: {} device ids for {n} devices", ids.len()));
    }
    Ok(Mesh { name: name.to_string(), axes, device_ids: ids, text: body.to_string() })
}

/// `"name"rest`: the quoted name (not empty) and what follows it.
fn quoted(part: &str) -> Option<(&str, &str)> {
    let rest = part.strip_prefix('"')?;
    let k = rest.find('"')?;
    (k > 0).then(|| (&rest[..k], &rest[k + 1..]))
}

fn axis_refs(text: &str) -> R<Vec<AxisRef>> {
    let mut refs = Vec::new();
    for part in comma(inner(strip(text))) {
        let got = (|| {
            let (axis, tail) = quoted(part)?;
            if tail.is_empty() {
                return Some((axis, None));
            }
            let t = tail.strip_prefix(":(")?;
            let c = t.find(')')?;
            let (a, b) = (&t[..c], &t[c + 1..]);
            (digits(a) && digits(b)).then_some((axis, Some((int(a), int(b)))))
        })();
        match got {
            Some((axis, None)) => refs.push(AxisRef::whole(axis)),
            Some((axis, Some((pre, size)))) if pre >= 1 && size >= 2 => {
                refs.push(AxisRef { axis: axis.to_string(), pre, size })
            }
            _ => return mesh_err(format!("axis {} is not read", head(part, 40))),
        }
    }
    Ok(refs)
}

/// `#sdy.sharding<@mesh, [{"x"}, {?}]p1, replicated={..}, unreduced={..}>` or `<@mesh, ...>`.
pub(crate) fn parse_sharding(text: &str) -> R<TensorSharding> {
    let t = strip(text);
    let body = t.strip_prefix("#sdy.sharding").unwrap_or(t);
    if !(body.starts_with('<') && body.ends_with('>')) {
        return mesh_err(format!("sharding {} is not read", head(text, 60)));
    }
    let parts = comma(inner(body));
    if parts.len() < 2 || !parts[0].starts_with('@') {
        return mesh_err(format!(
            "sharding {}: a mesh written inline is not read (only @name)",
            head(text, 60)
        ));
    }
    let mesh = parts[0][1..].trim_matches('"').to_string();
    let (mut dims, mut opened, mut priorities) = (Vec::new(), Vec::new(), Vec::new());
    for dim in comma(inner(strip(parts[1]))) {
        let d = strip(dim);
        let got = (|| {
            if !d.starts_with('{') {
                return None;
            }
            let k = d.rfind('}')?;
            let rest = &d[k + 1..];
            let ok = rest.is_empty() || rest.strip_prefix('p').is_some_and(digits);
            ok.then(|| (&d[..k + 1], rest))
        })();
        let Some((braced, prio)) = got else {
            return mesh_err(format!("dimension sharding {} is not read", head(dim, 40)));
        };
        let words = comma(inner(braced));
        let kept: Vec<&str> = words.iter().copied().filter(|w| *w != "?").collect();
        dims.push(axis_refs(&format!("{{{}}}", kept.join(", ")))?);
        opened.push(words.contains(&"?"));
        priorities.push(prio.to_string());
    }
    let mut replicated = Vec::new();
    let mut unreduced = Vec::new();
    for part in &parts[2..] {
        let (key, _, value) = partition(part, "=");
        match strip(key) {
            "replicated" => replicated = axis_refs(value)?,
            "unreduced" => unreduced = axis_refs(value)?,
            k => return mesh_err(format!("sharding {}: {k} is not read", head(text, 60))),
        }
    }
    Ok(TensorSharding { mesh, dims, replicated, unreduced, opened, priorities })
}

/// `#sdy.sharding_per_value<[<@mesh, [...]>, ...]>`: one sharding per result.
pub(crate) fn parse_per_value(text: &str) -> R<Vec<TensorSharding>> {
    let t = strip(text);
    let body = t.strip_prefix("#sdy.sharding_per_value").unwrap_or(t);
    if !(body.starts_with("<[") && body.ends_with("]>")) {
        return mesh_err(format!("sharding {} is not read", head(text, 60)));
    }
    comma(&body[2..body.len() - 2]).into_iter().map(parse_sharding).collect()
}

/// getOrderedAxisRefs: the mesh's axes in order, each split at every sub-axis the sharding names.
fn ordered_axis_refs(sharding: &TensorSharding, mesh: &Mesh) -> R<Vec<AxisRef>> {
    let mut cuts: HashMap<&str, Vec<i64>> = mesh.axes.iter().map(|(n, s)| (n.as_str(), vec![1, *s])).collect();
    let all = sharding.dims.iter().flatten().chain(&sharding.replicated).chain(&sharding.unreduced);
    for r in all {
        if !cuts.contains_key(r.axis.as_str()) {
            return mesh_err(format!("axis {} is not an axis of mesh @{}", repr(&r.axis), mesh.name));
        }
        if r.size != 0 {
            let whole = mesh.size_of(&r.axis)?;
            let span = r.pre.saturating_mul(r.size);
            if span == 0 || whole % span != 0 || r.size == whole {
                return mesh_err(format!("sub-axis {} is not one of mesh @{}", ref_text(r), mesh.name));
            }
            let c = cuts.get_mut(r.axis.as_str()).expect("checked");
            c.push(r.pre);
            c.push(span);
        }
    }
    let mut out = Vec::new();
    for (name, _) in &mesh.axes {
        let mut points = cuts[name.as_str()].clone();
        points.sort();
        points.dedup();
        if points.len() <= 2 {
            out.push(AxisRef::whole(name));
            continue;
        }
        for w in points.windows(2) {
            out.push(AxisRef { axis: name.clone(), pre: w[0], size: w[1] / w[0] });
        }
    }
    Ok(out)
}

fn same(a: &AxisRef, b: &AxisRef, mesh: &Mesh) -> R<bool> {
    let whole = mesh.size_of(&a.axis)?;
    let size = |r: &AxisRef| if r.size != 0 { r.size } else { whole };
    Ok(a.axis == b.axis && a.pre == b.pre && size(a) == size(b))
}

fn assign_error<T>() -> R<T> {
    Err(Error::Py("IndexError", "list assignment index out of range".into()))
}

/// The HLO sharding XLA's export writes for `sharding` (convertToHloSharding).
pub(crate) fn hlo_sharding(sharding: &TensorSharding, meshes: &HashMap<String, Mesh>) -> R<String> {
    let Some(mesh) = meshes.get(&sharding.mesh) else {
        return mesh_err(format!(
            "sharding names mesh @{}, which the module does not define",
            sharding.mesh
        ));
    };
    if mesh.axes.is_empty() {
        return Ok(match mesh.device_ids.first() {
            Some(d) => format!("{{maximal device={d}}}"),
            None => "{replicated}".into(),
        });
    }
    let mut tile = vec![1i64; sharding.dims.len()];
    let mut placed: Vec<&AxisRef> = Vec::new();
    for (k, axes) in sharding.dims.iter().enumerate() {
        for r in axes {
            tile[k] = tile[k].saturating_mul(r.length(mesh)?);
            placed.push(r);
        }
    }
    let mut types = Vec::new();
    if !sharding.unreduced.is_empty() {
        types.push("unreduced");
        let mut n = 1i64;
        for r in &sharding.unreduced {
            n = n.saturating_mul(r.length(mesh)?);
        }
        tile.push(n);
        placed.extend(&sharding.unreduced);
    }
    let refs = ordered_axis_refs(sharding, mesh)?;
    let mut perm = vec![0usize; refs.len()];
    let (mut replicated, mut position, mut matched) = (1i64, placed.len(), 0usize);
    for (k, r) in refs.iter().enumerate() {
        let mut at = None;
        for (i, p) in placed.iter().enumerate() {
            if same(p, r, mesh)? {
                at = Some(i);
                break;
            }
        }
        match at {
            None => {
                if position >= perm.len() {
                    return assign_error();
                }
                perm[position] = k;
                position += 1;
                replicated = replicated.saturating_mul(r.length(mesh)?);
            }
            Some(i) => {
                if i >= perm.len() {
                    return assign_error();
                }
                perm[i] = k;
                matched += 1;
            }
        }
    }
    let distinct = placed.iter().enumerate().all(|(i, p)| !placed[..i].contains(p));
    if matched != placed.len() || !distinct {
        return mesh_err(
            "a sharding that names an axis twice, or part of one not as a sub-axis, is not read".into(),
        );
    }
    if replicated > 1 {
        tile.push(replicated);
        types.push("replicated");
    }
    let sizes: Vec<_> = refs.iter().map(|r| r.length(mesh)).collect::<Result<_, _>>()?;
    let tiles = if mesh.device_ids.is_empty() {
        iota(tile, &sizes, &perm)
    } else {
        Tiles::Array { dims: tile, values: transposed(&mesh.device_ids, &sizes, &perm)? }
    };
    subgroup(tiles, types)
}

pub(crate) fn tuple_sharding(shardings: &[String]) -> String {
    format!("{{{}}}", shardings.join(", "))
}
