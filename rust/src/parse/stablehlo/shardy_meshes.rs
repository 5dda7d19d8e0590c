//! A module's Shardy meshes as XLA's export keeps them, and its shardings read against them.
//!
//! Before converting, the export merges meshes of the same devices (the same count, or none, and
//! the same `device_ids`) into one, the "main" mesh (sdy_round_trip/dedup_meshes.cc): the one with
//! real axes (a name not starting with `_`), then the most axes of more than one device, then the
//! first; each other mesh's axes are mapped onto the main mesh's (sub-)axes in order, and every
//! sharding that names it is rewritten to name the main mesh. The merged meshes leave
//! `xla.sdy.meshes`; a mesh whose axes do not map is kept, as the export keeps it.

use std::collections::HashMap;

use crate::parse::stablehlo::error::{at, Error, R};
use crate::parse::stablehlo::shardy::{hlo_sharding, parse_mesh, parse_per_value, parse_sharding, AxisRef, Mesh, TensorSharding};
use crate::parse::stablehlo::mlir_types::prod;

type AxisMap = HashMap<String, Vec<AxisRef>>;

/// The meshes XLA's export keeps, and the merged ones: name -> (main mesh, axis map).
pub(crate) struct Meshes {
    pub kept: HashMap<String, Mesh>,
    merged: HashMap<String, (String, AxisMap)>,
}

fn shardy_error<T>(r: R<T>, line: usize) -> R<T> {
    match r {
        Err(Error::Mesh(m)) => at(format!("Shardy: {m}"), line),
        other => other,
    }
}

impl Meshes {
    /// The module's `xla.sdy.meshes`, as the export writes it (by name).
    pub(crate) fn attribute(&self) -> String {
        let mut names: Vec<&String> = self.kept.keys().collect();
        names.sort();
        let items: Vec<String> = names.iter().map(|n| format!("{n} = #sdy.mesh{}", self.kept[*n].text)).collect();
        format!("{{{}}}", items.join(", "))
    }

    /// `#sdy.sharding<...>` -> (its HLO sharding, the Shardy text XLA keeps).
    pub(crate) fn sharding(&self, text: &str, line: usize) -> R<(String, String)> {
        shardy_error(
            (|| {
                let s = self.rewrite(parse_sharding(text)?)?;
                Ok((hlo_sharding(&s, &self.kept)?, format!("#sdy.sharding{}", s.text())))
            })(),
            line,
        )
    }

    /// `#sdy.sharding_per_value<[...]>` -> (one HLO sharding per result, the text XLA keeps).
    pub(crate) fn per_value(&self, text: &str, line: usize) -> R<(Vec<String>, String)> {
        shardy_error(
            (|| {
                let mut found = Vec::new();
                for s in parse_per_value(text)? {
                    found.push(self.rewrite(s)?);
                }
                let texts: Vec<String> = found.iter().map(|s| s.text()).collect();
                let kept = format!("#sdy.sharding_per_value<[{}]>", texts.join(", "));
                let out: Vec<_> =
                    found.iter().map(|s| hlo_sharding(s, &self.kept)).collect::<Result<_, _>>()?;
                Ok((out, kept))
            })(),
            line,
        )
    }

    /// The sharding on its main mesh (replaceAxesInSharding).
    fn rewrite(&self, sharding: TensorSharding) -> R<TensorSharding> {
        let Some((main_name, axis_map)) = self.merged.get(&sharding.mesh) else { return Ok(sharding) };
        let main = &self.kept[main_name];
        let refs = |old: &[AxisRef]| -> R<Vec<AxisRef>> {
            let mut out = Vec::new();
            for r in old {
                map_ref(r, &mut out, main, axis_map)?;
            }
            Ok(out)
        };
        let dims: Vec<_> = sharding.dims.iter().map(|d| refs(d)).collect::<Result<_, _>>()?;
        Ok(TensorSharding {
            mesh: main_name.clone(),
            dims,
            replicated: refs(&sharding.replicated)?,
            unreduced: refs(&sharding.unreduced)?,
            opened: sharding.opened,
            priorities: sharding.priorities,
        })
    }
}

/// The module's `sdy.mesh`es (name, text, line), merged as XLA's export merges them.
pub(crate) fn read_meshes(found: &[(String, String, usize)]) -> R<Meshes> {
    let mut meshes: Vec<Mesh> = Vec::new();
    for (name, text, line) in found {
        if meshes.iter().any(|m| &m.name == name) {
            return at(format!("Shardy: mesh @{name} is defined twice"), *line);
        }
        meshes.push(shardy_error(parse_mesh(name, text), *line)?);
    }
    if meshes.len() < 2 {
        return Ok(Meshes { kept: meshes.into_iter().map(|m| (m.name.clone(), m)).collect(), merged: HashMap::new() });
    }
    let mut mains: Vec<((i128, Vec<i64>), usize)> = Vec::new();
    for (k, mesh) in meshes.iter().enumerate() {
        let key = devices(mesh);
        match mains.iter_mut().find(|(d, _)| *d == key) {
            None => mains.push((key, k)),
            Some(slot) => {
                if better(mesh, &meshes[slot.1]) {
                    slot.1 = k;
                }
            }
        }
    }
    let mut merged = HashMap::new();
    for (k, mesh) in meshes.iter().enumerate() {
        let key = devices(mesh);
        let main = mains.iter().find(|(d, _)| *d == key).expect("every mesh has its main").1;
        if main != k {
            if let Some(axis_map) = map_axes(mesh, &meshes[main]) {
                merged.insert(mesh.name.clone(), (meshes[main].name.clone(), axis_map));
            }
        }
    }
    let kept = meshes.into_iter().filter(|m| !merged.contains_key(&m.name)).map(|m| (m.name.clone(), m)).collect();
    Ok(Meshes { kept, merged })
}

/// MeshDeviceIdentifier: the device count (-1 for a mesh of no axes) and the device ids.
fn devices(mesh: &Mesh) -> (i128, Vec<i64>) {
    let n = if mesh.axes.is_empty() { -1 } else { prod(&mesh.axes.iter().map(|(_, s)| *s).collect::<Vec<_>>()) };
    (n, mesh.device_ids.clone())
}

fn fake(mesh: &Mesh) -> bool {
    mesh.axes.first().is_some_and(|(n, _)| n.starts_with('_'))
}

fn wide(mesh: &Mesh) -> usize {
    mesh.axes.iter().filter(|(_, s)| *s > 1).count()
}

/// Whether `mesh`, met after `main`, becomes the main mesh of their devices.
fn better(mesh: &Mesh, main: &Mesh) -> bool {
    if fake(mesh) && !fake(main) {
        return false;
    }
    !(fake(mesh) == fake(main) && wide(mesh) <= wide(main))
}

/// Where the walk over one mesh's axes is: the axis, the devices before, the size left.
struct Cursor<'a> {
    axes: &'a [(String, i64)],
    index: usize,
    pre: i64,
    remaining: i64,
}

impl<'a> Cursor<'a> {
    fn new(mesh: &'a Mesh) -> Self {
        let mut c = Cursor { axes: &mesh.axes, index: usize::MAX, pre: 1, remaining: 1 };
        c.advance();
        c
    }

    fn advance(&mut self) {
        self.index = self.index.wrapping_add(1);
        while self.index < self.axes.len() && self.axes[self.index].1 == 1 {
            self.index += 1;
        }
        self.pre = 1;
        if self.index < self.axes.len() {
            self.remaining = self.axes[self.index].1;
        }
    }

    fn consume(&mut self, size: i64) {
        self.remaining /= size;
        if self.remaining == 1 {
            self.advance();
        } else {
            self.pre *= size;
        }
    }
}

/// mapTargetAxesToMainAxes: each of `target`'s axes as (sub-)axes of `main`'s, in order; None
/// where the sizes do not divide.
fn map_axes(target: &Mesh, main: &Mesh) -> Option<AxisMap> {
    let mut out: AxisMap = HashMap::new();
    let (mut t, mut m) = (Cursor::new(target), Cursor::new(main));
    while m.index < main.axes.len() && t.index < target.axes.len() {
        let (consume, larger) = if m.remaining <= t.remaining { (m.remaining, t.remaining) } else { (t.remaining, m.remaining) };
        if consume == 0 || larger % consume != 0 {
            return None;
        }
        let (name, size) = &main.axes[m.index];
        let r = if *size == consume { AxisRef::whole(name) } else { AxisRef { axis: name.clone(), pre: m.pre, size: consume } };
        out.entry(target.axes[t.index].0.clone()).or_default().push(r);
        m.consume(consume);
        t.consume(consume);
    }
    Some(out)
}

fn not_mapped<T>(old: &AxisRef, main: &Mesh) -> R<T> {
    Err(Error::Mesh(format!("sub-axis {} does not map onto mesh @{}", old.repr(), main.name)))
}

/// addOrMergeNewAxisRefAttr: `old` (an axis of the merged mesh) as `main`'s (sub-)axes.
fn map_ref(old: &AxisRef, out: &mut Vec<AxisRef>, main: &Mesh, axis_map: &AxisMap) -> R<()> {
    let Some(refs) = axis_map.get(&old.axis) else { return Ok(()) }; // an axis of size 1
    if old.size == 0 {
        for r in refs {
            add_or_merge(out, r.clone(), main)?;
        }
        return Ok(());
    }
    let (mut pre, mut size) = (old.pre, old.size);
    for r in refs {
        let length = r.length(main)?;
        if pre >= length {
            if pre % length != 0 {
                return not_mapped(old, main);
            }
            pre /= length;
            continue;
        }
        if length % pre != 0 {
            return not_mapped(old, main);
        }
        let used = size.min(length / pre);
        let add = if used == length { r.clone() } else { AxisRef { axis: r.axis.clone(), pre: pre * r.pre, size: used } };
        add_or_merge(out, add, main)?;
        if size % used != 0 {
            return not_mapped(old, main);
        }
        pre = 1;
        size /= used;
        if size == 1 {
            break;
        }
    }
    Ok(())
}

/// sdy::addAxisOrMerge: consecutive sub-axes of one axis become one (the axis, if whole).
fn add_or_merge(out: &mut Vec<AxisRef>, r: AxisRef, mesh: &Mesh) -> R<()> {
    if let Some(last) = out.last_mut() {
        if last.axis == r.axis && last.size != 0 && r.size != 0 && last.pre * last.size == r.pre {
            let size = last.size * r.size;
            *last = if last.pre == 1 && size == mesh.size_of(&r.axis)? {
                AxisRef::whole(&r.axis)
            } else {
                AxisRef { axis: r.axis.clone(), pre: last.pre, size }
            };
            return Ok(());
        }
    }
    out.push(r);
    Ok(())
}
